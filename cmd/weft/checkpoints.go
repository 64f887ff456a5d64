package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/checkpoint"
)

// cliCheckpoints are the workspace checkpoints of one weft run, chat or
// serve: the store, the workspace, and the session name the stage files
// the CLI's calls under (serve's calls carry their own session id).
type cliCheckpoints struct {
	store   *checkpoint.Store
	ws      *checkpoint.Workspace
	session string
}

// checkpointDir is the store's directory: $WEFT_CHECKPOINT_DIR, else
// ~/.weft/checkpoints; "" when there is no home to put it in.
func checkpointDir(env environ) string {
	if d := env.getenv("WEFT_CHECKPOINT_DIR"); d != "" {
		return d
	}
	if home := env.getenv("HOME"); home != "" {
		return checkpoint.DefaultDir(home)
	}
	return ""
}

// installCheckpoints puts the workspace checkpoint stage at the end of the
// policy's pipeline. Without git (or a home directory) weft runs on
// without checkpoints and says so once: an undo that is missing is a
// warning, not a reason to refuse to work.
func (p *policyFlags) installCheckpoints(env environ, b *builtPolicy, ws string, log *slog.Logger) error {
	if p.noCheckpoints {
		return nil
	}
	dir := checkpointDir(env)
	if dir == "" {
		log.Warn("workspace checkpoints are off: no HOME (or WEFT_CHECKPOINT_DIR) to keep them in")
		return nil
	}
	store, err := checkpoint.Open(checkpoint.Options{Dir: dir, Logger: log})
	if errors.Is(err, checkpoint.ErrNoGit) {
		log.Warn("workspace checkpoints are off (/undo will not work)", "error", err)
		return nil
	}
	if err != nil {
		return err
	}
	w, err := store.Workspace(ws)
	if err != nil {
		store.Close()
		return err
	}
	// The first checkpoint of a large workspace stores every file: do that
	// now, while the person types, rather than before the first Write.
	w.WarmInBackground()
	ck := &cliCheckpoints{store: store, ws: w, session: newCLISession()}
	pl, err := checkpoint.Install(b.pol.Pipeline, &checkpoint.Stage{Store: store, Session: ck.session})
	if err != nil {
		store.Close()
		return err
	}
	b.pol.Pipeline = pl
	b.ckpt = ck
	prev := b.close
	b.close = func() error { return errors.Join(prev(), store.Close()) }
	return nil
}

// newCLISession names the checkpoints of one weft run or chat, so that
// /undo takes back this process's changes and not another's in the same
// workspace.
func newCLISession() string {
	var b [4]byte
	rand.Read(b[:])
	return "cli-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// slash handles chat's checkpoint commands: /undo [force], /checkpoints
// and /restore ID [force]. It reports whether line was one of them.
func (ck *cliCheckpoints) slash(ctx context.Context, line string, out io.Writer) bool {
	cmd, arg, _ := strings.Cut(line, " ")
	switch cmd {
	case "/undo", "/checkpoints", "/restore":
	default:
		return false
	}
	if ck == nil {
		fmt.Fprintln(out, "workspace checkpoints are off (--no-checkpoints, no git, or no HOME)")
		return true
	}
	fields := strings.Fields(arg)
	force := len(fields) > 0 && fields[len(fields)-1] == "force"
	if force {
		fields = fields[:len(fields)-1]
	}
	switch cmd {
	case "/checkpoints":
		list, err := ck.ws.List(ctx, ck.session)
		if err != nil {
			fmt.Fprintln(out, err)
			return true
		}
		printCheckpoints(out, list, false)
	case "/undo":
		if len(fields) > 0 {
			fmt.Fprintln(out, "/undo takes no argument but force")
			return true
		}
		r, err := ck.ws.Undo(ctx, ck.session, checkpoint.RestoreOptions{Force: force})
		printRestored(out, r, err, "/undo force")
	case "/restore":
		if len(fields) != 1 {
			fmt.Fprintln(out, "/restore ID [force]: ID from /checkpoints")
			return true
		}
		r, err := ck.ws.Restore(ctx, ck.session, fields[0], checkpoint.RestoreOptions{Force: force})
		printRestored(out, r, err, "/restore "+fields[0]+" force")
	}
	return true
}

// printCheckpoints prints a list, newest first: id, time, turn, tool and
// the files changed since the one before.
func printCheckpoints(out io.Writer, list []checkpoint.Checkpoint, withSession bool) {
	if len(list) == 0 {
		fmt.Fprintln(out, "no checkpoints")
		return
	}
	for _, c := range list {
		what := c.Tool
		if c.Restores != "" {
			what = "before restoring " + c.Restores
		}
		files := describeFiles(c)
		sess := ""
		if withSession {
			sess = "  " + c.Session
		}
		fmt.Fprintf(out, "%s  %s%s  turn %d  %s  %s\n", c.ID, c.Time.Local().Format("2006-01-02 15:04:05"), sess, c.Turn, what, files)
	}
}

func describeFiles(c checkpoint.Checkpoint) string {
	if c.First {
		return "(first)"
	}
	if c.FilesTotal == 0 {
		return "(no changes since the previous)"
	}
	var parts []string
	for _, f := range c.Files {
		parts = append(parts, f.Status[:1]+" "+f.Path)
	}
	s := strings.Join(parts, ", ")
	if c.FilesTotal > len(c.Files) {
		s += fmt.Sprintf(" and %d more", c.FilesTotal-len(c.Files))
	}
	return s
}

// printRestored prints what a restore did, or why it did not.
func printRestored(out io.Writer, r checkpoint.Restored, err error, forceHint string) {
	var conflict *checkpoint.ConflictError
	switch {
	case errors.As(err, &conflict):
		fmt.Fprintf(out, "not restored: %s changed since the agent last touched it; %s to overwrite\n", strings.Join(conflict.Files, ", "), forceHint)
		return
	case errors.Is(err, checkpoint.ErrNothingToUndo):
		fmt.Fprintln(out, "nothing to undo")
		return
	case err != nil && r.Undo == nil:
		fmt.Fprintln(out, err)
		return
	}
	if len(r.Files) == 0 {
		fmt.Fprintf(out, "checkpoint %s: the workspace already matches it\n", r.Checkpoint.ID)
		return
	}
	fmt.Fprintf(out, "restored checkpoint %s (%d file(s)):", r.Checkpoint.ID, len(r.Files))
	for _, f := range r.Files {
		fmt.Fprintf(out, " %s %s", f.Status, f.Path)
	}
	fmt.Fprintln(out)
	if r.Undo != nil {
		fmt.Fprintf(out, "undo this with /restore %s (weft checkpoints restore %s)\n", r.Undo.ID, r.Undo.ID)
	}
	if err != nil {
		fmt.Fprintln(out, err)
	}
}

// newCheckpointsCmd is `weft checkpoints list|diff|restore`.
func newCheckpointsCmd(env environ) *cobra.Command {
	var workspace, session string
	var asJSON bool
	open := func() (*checkpoint.Workspace, func(), error) {
		ws := workspace
		if ws == "" {
			ws = env.getenv("WEFT_WORKSPACE")
		}
		if ws == "" {
			var err error
			if ws, err = os.Getwd(); err != nil {
				return nil, nil, err
			}
		}
		dir := checkpointDir(env)
		if dir == "" {
			return nil, nil, errors.New("no HOME (or WEFT_CHECKPOINT_DIR): there is no checkpoint store")
		}
		store, err := checkpoint.Open(checkpoint.Options{Dir: dir})
		if err != nil {
			return nil, nil, err
		}
		w, err := store.Workspace(ws)
		if err != nil {
			store.Close()
			return nil, nil, err
		}
		return w, func() { store.Close() }, nil
	}
	emit := func(v any) error {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	root := &cobra.Command{
		Use:   "checkpoints",
		Short: "List, inspect and restore the workspace checkpoints weft takes before changing files",
		Long: `weft takes a checkpoint of the workspace before every Write and Edit and
every Bash command that may change files (in a git repository of its own under
~/.weft/checkpoints; the workspace's .git is never touched). These commands work
on the checkpoints of the current directory (or --workspace), of every session
unless --session names one.

A restore brings back only the files the agent changed since the checkpoint; it
is itself checkpointed first (the printed id undoes it), and a file someone
changed since the agent last did is a conflict that needs --force.`,
	}
	root.PersistentFlags().StringVarP(&workspace, "workspace", "w", "", "the workspace (default: current directory, or $WEFT_WORKSPACE)")
	root.PersistentFlags().StringVar(&session, "session", "", "only this session's checkpoints (weft serve's session id, or the cli-... name of a run or chat)")
	root.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")

	list := &cobra.Command{
		Use:   "list",
		Short: "List the checkpoints, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w, done, err := open()
			if err != nil {
				return err
			}
			defer done()
			cps, err := w.List(cmd.Context(), session)
			if err != nil {
				return err
			}
			if asJSON {
				if cps == nil {
					cps = []checkpoint.Checkpoint{}
				}
				return emit(cps)
			}
			printCheckpoints(env.stdout, cps, true)
			return nil
		},
	}
	diff := &cobra.Command{
		Use:   "diff ID",
		Short: "Show what restoring a checkpoint would change (a unified diff from the workspace as it is)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, done, err := open()
			if err != nil {
				return err
			}
			defer done()
			d, err := w.Diff(cmd.Context(), session, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return emit(d)
			}
			for _, f := range d.Files {
				mark := ""
				if f.Conflict {
					mark = "  (conflict: changed since the agent last touched it)"
				}
				fmt.Fprintf(env.stderr, "%s %s%s\n", f.Status, f.Path, mark)
			}
			fmt.Fprint(env.stdout, d.Patch)
			if d.Truncated {
				fmt.Fprintln(env.stderr, "(diff truncated)")
			}
			return nil
		},
	}
	var force bool
	restore := &cobra.Command{
		Use:   "restore ID",
		Short: "Bring the files the agent changed since a checkpoint back as they were",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, done, err := open()
			if err != nil {
				return err
			}
			defer done()
			r, err := w.Restore(cmd.Context(), session, args[0], checkpoint.RestoreOptions{Force: force})
			if asJSON && err == nil {
				return emit(r)
			}
			var conflict *checkpoint.ConflictError
			if errors.As(err, &conflict) {
				return &exitError{code: 3, err: fmt.Errorf("%w (weft checkpoints restore --force %s)", err, args[0])}
			}
			if err != nil && r.Undo == nil {
				return err
			}
			printRestored(env.stdout, r, nil, "")
			return err
		},
	}
	restore.Flags().BoolVar(&force, "force", false, "overwrite files changed since the agent last touched them")
	root.AddCommand(list, diff, restore)
	return root
}

// ckptWorkspace is the workspace checkpoints for weft serve's API; nil
// when off.
func (b *builtPolicy) ckptWorkspace() *checkpoint.Workspace {
	if b.ckpt == nil {
		return nil
	}
	return b.ckpt.ws
}
