package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Meta says which call a checkpoint comes before.
type Meta struct {
	Session    string // "" is DefaultSession
	Turn       int
	Tool       string
	ToolCallID string
}

// Snapshot takes a checkpoint of the workspace before the call meta
// describes. When nothing changed since the session's last checkpoint and
// it was taken in the same turn, that one is returned (Reused) instead:
// at most one checkpoint a turn while nothing changes (calls in parallel,
// or a command that turned out to change nothing).
func (w *Workspace) Snapshot(ctx context.Context, meta Meta) (Checkpoint, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ref := w.sessionRef(meta.Session)
	tree, err := w.tree(ctx)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: snapshot of %s: %w", w.dir, err)
	}
	for attempt := 0; ; attempt++ {
		c, err := w.loadForWrite(ctx, ref)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
		}
		last := c.lastListed()
		// Compared with the checkpoint itself, not with the newest entry:
		// an after that matches the workspace only says the last call's
		// changes are still there, and those the checkpoint lacks.
		if last >= 0 && c.entries[last].tree == tree {
			if l := c.entries[last]; l.rec.Kind == kindCheckpoint && l.rec.Turn == meta.Turn {
				cp := l.checkpoint()
				cp.Reused = true
				return cp, nil
			}
		}
		rec := record{V: 1, Kind: kindCheckpoint, Time: time.Now().UTC(), Session: sessionName(meta.Session), Workspace: w.dir,
			Turn: meta.Turn, Tool: meta.Tool, ToolCallID: meta.ToolCallID}
		if last < 0 {
			rec.First = true
		} else if rec.Files, rec.FilesTotal, err = w.changedFiles(ctx, c.entries[last].tree, tree); err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
		}
		e, err := w.commit(ctx, c, tree, rec)
		if errors.Is(err, errMoved) && attempt < maxAttempts {
			backoff(ctx, attempt) // another process added to this session's chain: again on top of it
			continue
		}
		if err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
		}
		return e.checkpoint(), nil
	}
}

// Settle records the workspace as a call left it: the call that the
// session's checkpoint id came before (a Snapshot's ID, reused or not).
// What changed between the two is what a restore may take back.
func (w *Workspace) Settle(ctx context.Context, session, id, toolCallID string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ref := w.sessionRef(session)
	tree, err := w.tree(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint: snapshot of %s: %w", w.dir, err)
	}
	for attempt := 0; ; attempt++ {
		c, err := w.loadForWrite(ctx, ref)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		i, ok, err := c.find(id)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		rec := record{V: 1, Kind: kindAfter, Time: time.Now().UTC(), Session: sessionName(session), Workspace: w.dir,
			Of: c.entries[i].commit, ToolCallID: toolCallID}
		_, err = w.commit(ctx, c, tree, rec)
		if errors.Is(err, errMoved) && attempt < maxAttempts {
			backoff(ctx, attempt) // another process added to this session's chain: again on top of it
			continue
		}
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		return nil
	}
}

// maxAttempts bounds the retries of a commit another process's beat to
// its session's ref.
const maxAttempts = 10

// backoff waits a little, more with each attempt, at random: two
// processes that collided should not collide again in step.
func backoff(ctx context.Context, attempt int) {
	d := time.Duration(1+rand.IntN(5*(attempt+1))) * time.Millisecond
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

func sessionName(s string) string {
	if s == "" {
		return DefaultSession
	}
	return s
}

// ErrNotFound is the error for a checkpoint id that names none.
var ErrNotFound = errors.New("checkpoint: no such checkpoint")

// List returns the session's checkpoints, newest first; session ""
// lists every session's in this workspace.
func (w *Workspace) List(ctx context.Context, session string) ([]Checkpoint, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	chains, err := w.chainsOf(ctx, session)
	if err != nil {
		return nil, err
	}
	var out []Checkpoint
	for _, c := range chains {
		for _, e := range c.entries {
			if e.rec.Kind != kindAfter {
				out = append(out, e.checkpoint())
			}
		}
	}
	slices.Reverse(out) // newest first within a chain, and then...
	slices.SortStableFunc(out, func(a, b Checkpoint) int { return b.Time.Compare(a.Time) })
	return out, nil
}

// chainsOf returns the chain of session, or of every session for "".
// The call holds w.mu.
func (w *Workspace) chainsOf(ctx context.Context, session string) ([]*chain, error) {
	refs := []string{w.sessionRef(session)}
	if session == "" {
		out, err := w.git("").run(ctx, nil, "for-each-ref", "--format=%(refname)", "refs/weft/"+w.key+"/")
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		refs = strings.Fields(string(out))
	}
	var chains []*chain
	for _, ref := range refs {
		c, err := w.load(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		chains = append(chains, c)
	}
	return chains, nil
}

// locate finds the checkpoint id in session's chain, or in any session's
// for "". The call holds w.mu.
func (w *Workspace) locate(ctx context.Context, session, id string) (*chain, int, error) {
	chains, err := w.chainsOf(ctx, session)
	if err != nil {
		return nil, 0, err
	}
	var found *chain
	at := 0
	for _, c := range chains {
		i, ok, err := c.find(id)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			continue
		}
		if found != nil {
			return nil, 0, fmt.Errorf("checkpoint: %q is ambiguous: give more of the id", id)
		}
		found, at = c, i
	}
	if found == nil {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return found, at, nil
}

// change is one line of git diff-tree --raw: a path and its two sides.
type change struct {
	path     string
	old, new blob
}

// blob is a tree entry: mode and object id; the zero value is "no file".
type blob struct {
	mode string // 100644, 100755 or 120000
	id   string
}

func (b blob) present() bool { return b.mode != "" }

const zeroID = "0000000000000000000000000000000000000000"

// diff returns what differs between two trees, cached (trees never
// change). The call holds w.mu.
func (w *Workspace) diff(ctx context.Context, a, b string) ([]change, error) {
	if a == b {
		return nil, nil
	}
	key := [2]string{a, b}
	if d, ok := w.diffs[key]; ok {
		return d, nil
	}
	out, err := w.git("").run(ctx, nil, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-commit-id", a, b)
	if err != nil {
		return nil, err
	}
	var d []change
	// :<old mode> <new mode> <old id> <new id> <status>\0<path>\0
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		head := strings.Fields(strings.TrimPrefix(string(fields[i]), ":"))
		if len(head) != 5 {
			return nil, fmt.Errorf("git diff-tree: unexpected line %q", fields[i])
		}
		c := change{path: string(fields[i+1])}
		if head[0] != "000000" {
			c.old = blob{head[0], head[2]}
		}
		if head[1] != "000000" {
			c.new = blob{head[1], head[3]}
		}
		d = append(d, c)
	}
	if len(w.diffs) > 4096 {
		clear(w.diffs)
	}
	w.diffs[key] = d
	return d, nil
}

// changedFiles lists what differs between two trees as FileChanges.
func (w *Workspace) changedFiles(ctx context.Context, a, b string) ([]FileChange, int, error) {
	d, err := w.diff(ctx, a, b)
	if err != nil {
		return nil, 0, err
	}
	var out []FileChange
	for _, c := range d {
		if len(out) == maxFiles {
			break
		}
		out = append(out, FileChange{Path: c.path, Status: status(c.old, c.new)})
	}
	return out, len(d), nil
}

func status(from, to blob) string {
	switch {
	case !from.present():
		return "added"
	case !to.present():
		return "deleted"
	}
	return "modified"
}

// lsTree returns every file of a tree, cached (an undo looks at the
// workspace's tree once for each checkpoint it passes). The call holds
// w.mu.
func (w *Workspace) lsTree(ctx context.Context, tree string) (map[string]blob, error) {
	if m, ok := w.trees[tree]; ok {
		return m, nil
	}
	out, err := w.git("").run(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		return nil, err
	}
	m := map[string]blob{}
	// <mode> SP <type> SP <id> TAB <path>
	for _, line := range bytes.Split(out, []byte{0}) {
		tab := bytes.IndexByte(line, '\t')
		if tab < 0 {
			continue
		}
		head := strings.Fields(string(line[:tab]))
		if len(head) != 3 || head[1] != "blob" {
			continue
		}
		m[string(line[tab+1:])] = blob{head[0], head[2]}
	}
	if len(w.trees) >= 4 {
		clear(w.trees)
	}
	w.trees[tree] = m
	return m, nil
}
