package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RestoreOptions change how Restore and Undo go about it.
type RestoreOptions struct {
	// Force overwrites files someone changed since the agent last did
	// (the files of a ConflictError).
	Force bool
}

// ConflictError is a restore's refusal: files it would overwrite were
// changed since the agent last touched them (by the person, an editor,
// another program). Restoring with Force overwrites them.
type ConflictError struct {
	ID    string   // the checkpoint
	Files []string // workspace-relative, sorted
}

func (e *ConflictError) Error() string {
	const show = 5
	files := e.Files
	more := ""
	if len(files) > show {
		files, more = files[:show], fmt.Sprintf(" and %d more", len(e.Files)-show)
	}
	return fmt.Sprintf("checkpoint %s: %s changed since the agent last touched %s; restore with force to overwrite",
		e.ID, strings.Join(files, ", ")+more, plural(len(e.Files), "it", "them"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ErrNothingToUndo is Undo's error when no checkpoint of the session
// differs from the workspace in the files the agent changed.
var ErrNothingToUndo = errors.New("checkpoint: nothing to undo")

// Restored is what a restore did.
type Restored struct {
	// Checkpoint is the checkpoint restored.
	Checkpoint Checkpoint `json:"checkpoint"`
	// Undo is the checkpoint taken just before the restore: restoring it
	// undoes the restore. Zero when there was nothing to restore.
	Undo *Checkpoint `json:"undo,omitempty"`
	// Files are what the restore changed (Conflict marks one it
	// overwrote because it was forced).
	Files []FileChange `json:"files"`
}

// action is one file of a restore plan.
type action struct {
	path     string
	from, to blob // the file now, and as the checkpoint has it
	conflict bool
}

// plan works out what restoring the chain's entry at idx does to the
// workspace whose snapshot is cur: for each file the agent changed since
// that checkpoint, the checkpoint's version unless the workspace already
// has it; a file whose current version is not the one the agent left is a
// conflict. Files nobody but the person touched are not in it. The call
// holds w.mu.
func (w *Workspace) plan(ctx context.Context, c *chain, idx int, cur string) ([]action, error) {
	last := map[string]blob{} // the agent's last version of each file it changed
	entries := c.entries
	for k := idx; k < len(entries); k++ {
		e := entries[k]
		if e.rec.Kind == kindAfter {
			continue
		}
		var afters []entry
		for _, a := range entries[k+1:] {
			if a.rec.Kind == kindAfter && a.rec.Of == e.commit {
				afters = append(afters, a)
			}
		}
		if len(afters) == 0 {
			// No record of how the call left things (weft was killed
			// while it ran): everything up to the next record is taken
			// to be the agent's.
			next := cur
			if k+1 < len(entries) {
				next = entries[k+1].tree
			}
			afters = []entry{{tree: next}}
		}
		before := map[string]blob{} // this checkpoint's version of the files its calls changed
		for _, a := range afters {
			d, err := w.diff(ctx, e.tree, a.tree)
			if err != nil {
				return nil, err
			}
			changed := map[string]bool{}
			for _, ch := range d {
				before[ch.path] = ch.old
				last[ch.path] = ch.new
				changed[ch.path] = true
			}
			// A file an earlier call of the checkpoint changed and a
			// later one (in parallel) put back.
			for p, b := range before {
				if !changed[p] {
					last[p] = b
				}
			}
		}
	}
	if len(last) == 0 {
		return nil, nil
	}
	now, err := w.lsTree(ctx, cur)
	if err != nil {
		return nil, err
	}
	target, err := w.lsTree(ctx, entries[idx].tree)
	if err != nil {
		return nil, err
	}
	var plan []action
	for p, l := range last {
		from, to := now[p], target[p]
		if from == to {
			continue
		}
		plan = append(plan, action{path: p, from: from, to: to, conflict: from != l})
	}
	slices.SortFunc(plan, func(a, b action) int { return strings.Compare(a.path, b.path) })
	return plan, nil
}

func conflicts(plan []action) []string {
	var out []string
	for _, a := range plan {
		if a.conflict {
			out = append(out, a.path)
		}
	}
	return out
}

func planFiles(plan []action) []FileChange {
	out := make([]FileChange, 0, len(plan))
	for _, a := range plan {
		out = append(out, FileChange{Path: a.path, Status: status(a.from, a.to), Conflict: a.conflict})
	}
	return out
}

// Diff is what restoring a checkpoint would do.
type Diff struct {
	Checkpoint Checkpoint `json:"checkpoint"`
	// Files the restore would change: "added" it would create,
	// "deleted" it would remove; Conflict on those someone changed since
	// the agent did.
	Files []FileChange `json:"files"`
	// Patch is a unified diff from the workspace as it is to the workspace
	// as the restore would leave it (git's format; binary files are named,
	// not shown), cut at MaxPatch bytes (Truncated).
	Patch     string `json:"patch"`
	Truncated bool   `json:"truncated,omitempty"`
}

// MaxPatch bounds Diff.Patch.
const MaxPatch = 1 << 20

// Diff returns what restoring the checkpoint id of session ("" for any
// session of the workspace) would do, without doing it.
func (w *Workspace) Diff(ctx context.Context, session, id string) (Diff, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, idx, err := w.locate(ctx, session, id)
	if err != nil {
		return Diff{}, err
	}
	cur, err := w.tree(ctx)
	if err != nil {
		return Diff{}, fmt.Errorf("checkpoint: snapshot of %s: %w", w.dir, err)
	}
	plan, err := w.plan(ctx, c, idx, cur)
	if err != nil {
		return Diff{}, fmt.Errorf("checkpoint: %w", err)
	}
	d := Diff{Checkpoint: c.entries[idx].checkpoint(), Files: planFiles(plan)}
	if len(plan) == 0 {
		return d, nil
	}
	after, err := w.applyToTree(ctx, cur, plan)
	if err != nil {
		return Diff{}, fmt.Errorf("checkpoint: %w", err)
	}
	var patch bytes.Buffer
	lw := &limitedWriter{w: &patch, n: MaxPatch + 1}
	if err := w.git("").stream(ctx, nil, lw, "diff-tree", "-r", "-p", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", cur, after); err != nil {
		return Diff{}, fmt.Errorf("checkpoint: %w", err)
	}
	if patch.Len() > MaxPatch {
		patch.Truncate(MaxPatch)
		d.Truncated = true
	}
	d.Patch = patch.String()
	return d, nil
}

// applyToTree returns the tree the plan would leave: cur with its files
// replaced, in a throwaway index.
func (w *Workspace) applyToTree(ctx context.Context, cur string, plan []action) (string, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	idx := w.indexPath() + ".plan-" + hex.EncodeToString(rnd[:])
	defer os.Remove(idx)
	g := w.git(idx)
	if _, err := g.run(ctx, nil, "read-tree", cur); err != nil {
		return "", err
	}
	var in bytes.Buffer
	for _, a := range plan {
		if a.to.present() {
			fmt.Fprintf(&in, "%s %s\t%s\x00", a.to.mode, a.to.id, a.path)
		} else {
			fmt.Fprintf(&in, "0 %s\t%s\x00", zeroID, a.path)
		}
	}
	if _, err := g.run(ctx, &in, "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	out, err := g.run(ctx, nil, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Restore brings back the files the agent changed since the checkpoint id
// of session ("" for any session of the workspace) as they were then:
// files it created are removed, files it deleted come back, modes (the
// executable bit) and bytes as they were. Files it never touched are left
// alone, whatever happened to them since. The workspace is checkpointed
// first (Restored.Undo), so a restore can itself be undone. A file
// someone changed since the agent last did makes it a *ConflictError,
// unless opts.Force.
func (w *Workspace) Restore(ctx context.Context, session, id string, opts RestoreOptions) (Restored, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, idx, err := w.locate(ctx, session, id)
	if err != nil {
		return Restored{}, err
	}
	cur, err := w.tree(ctx)
	if err != nil {
		return Restored{}, fmt.Errorf("checkpoint: snapshot of %s: %w", w.dir, err)
	}
	plan, err := w.plan(ctx, c, idx, cur)
	if err != nil {
		return Restored{}, fmt.Errorf("checkpoint: %w", err)
	}
	return w.restore(ctx, c, idx, cur, plan, opts)
}

// Undo restores the session's most recent checkpoint that differs from
// the workspace in the files the agent changed since: the state before
// the agent's last change, and, called again, the one before that.
// Restores are skipped (to undo an undo, restore the Undo it returned).
func (w *Workspace) Undo(ctx context.Context, session string, opts RestoreOptions) (Restored, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, err := w.load(ctx, w.sessionRef(session))
	if err != nil {
		return Restored{}, fmt.Errorf("checkpoint: %w", err)
	}
	cur, err := w.tree(ctx)
	if err != nil {
		return Restored{}, fmt.Errorf("checkpoint: snapshot of %s: %w", w.dir, err)
	}
	for idx := undoPosition(c.entries) - 1; idx >= 0; idx-- {
		if c.entries[idx].rec.Kind != kindCheckpoint {
			continue
		}
		plan, err := w.plan(ctx, c, idx, cur)
		if err != nil {
			return Restored{}, fmt.Errorf("checkpoint: %w", err)
		}
		if len(plan) > 0 {
			return w.restore(ctx, c, idx, cur, plan, opts)
		}
	}
	return Restored{}, ErrNothingToUndo
}

// undoPosition returns how far back the undos of entries went: the next
// undo restores a checkpoint before this index. After a checkpoint it is
// just past it; after a restore it is the position the restored entry
// stood at: the checkpoint's own index (so a second undo goes one further
// back instead of redoing the first), or, for a restore that undid
// another restore, the position from before that one.
func undoPosition(entries []entry) int {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		switch e.rec.Kind {
		case kindCheckpoint:
			return i + 1
		case kindRestore:
			t := -1
			for j := range i {
				if entries[j].rec.Kind != kindAfter && strings.HasPrefix(entries[j].commit, e.rec.Restores) {
					t = j
				}
			}
			if t < 0 {
				return i // its target is gone: start from before it
			}
			if entries[t].rec.Kind == kindCheckpoint {
				return t
			}
			return undoPosition(entries[:t])
		}
	}
	return 0
}

// restore carries a plan out. The call holds w.mu.
func (w *Workspace) restore(ctx context.Context, c *chain, idx int, cur string, plan []action, opts RestoreOptions) (Restored, error) {
	target := c.entries[idx].checkpoint()
	res := Restored{Checkpoint: target, Files: planFiles(plan)}
	if len(plan) == 0 {
		return res, nil
	}
	if cs := conflicts(plan); len(cs) > 0 && !opts.Force {
		return Restored{}, &ConflictError{ID: target.ID, Files: cs}
	}
	// The checkpoint that undoes this restore, before anything is touched.
	rec := record{V: 1, Kind: kindRestore, Time: time.Now().UTC(), Session: c.entries[idx].rec.Session, Workspace: w.dir,
		Tool: "restore", Restores: target.ID}
	if last := c.lastListed(); last >= 0 {
		var err error
		if rec.Files, rec.FilesTotal, err = w.changedFiles(ctx, c.entries[last].tree, cur); err != nil {
			return Restored{}, fmt.Errorf("checkpoint: %w", err)
		}
	}
	undo, err := w.commit(ctx, c, cur, rec)
	if err != nil {
		return Restored{}, fmt.Errorf("checkpoint: %w", err)
	}
	u := undo.checkpoint()
	res.Undo = &u
	applyErr := w.apply(ctx, target.tree, plan)
	// What the restore did is recorded as a call's effect would be, so
	// that restoring u takes back exactly that, even after a failure.
	after, err := w.tree(ctx)
	if err == nil {
		_, err = w.commit(ctx, c, after, record{V: 1, Kind: kindAfter, Time: time.Now().UTC(), Session: rec.Session, Workspace: w.dir, Of: undo.commit})
	}
	if err != nil {
		err = fmt.Errorf("checkpoint: recording the restore: %w", err)
	}
	if err := errors.Join(applyErr, err); err != nil {
		return res, err
	}
	return res, nil
}

// apply writes the plan to the workspace: removals first (deepest
// first), then writes. Every path goes through an os.Root of the
// workspace, so a directory swapped for a symlink cannot send a write
// outside it. It goes on past a file it cannot restore and reports all.
func (w *Workspace) apply(ctx context.Context, tree string, plan []action) error {
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer root.Close()
	var errs []error
	var writes []action
	var removed []string
	for i := len(plan) - 1; i >= 0; i-- {
		a := plan[i]
		if a.to.present() {
			writes = append(writes, a)
			continue
		}
		if err := root.Remove(a.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", a.path, err))
			continue
		}
		removed = append(removed, a.path)
	}
	if len(removed) > 0 {
		keep, err := w.treeDirs(ctx, tree)
		if err != nil {
			errs = append(errs, err)
		} else {
			pruneDirs(root, removed, keep)
		}
	}
	slices.Reverse(writes)
	if len(writes) > 0 {
		if err := w.writeBlobs(ctx, root, writes); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint: restore incomplete: %w", err)
	}
	return nil
}

// treeDirs returns the directories of a tree.
func (w *Workspace) treeDirs(ctx context.Context, tree string) (map[string]bool, error) {
	out, err := w.git("").run(ctx, nil, "ls-tree", "-r", "-d", "-z", "--name-only", "--full-tree", tree)
	if err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	for _, d := range splitNul(out) {
		dirs[d] = true
	}
	return dirs, nil
}

// pruneDirs removes the directories left empty by removing files, up to
// the workspace, unless the checkpoint has them.
func pruneDirs(root *os.Root, removed []string, keep map[string]bool) {
	for _, p := range removed {
		for d := path.Dir(p); d != "." && d != "/" && !keep[d]; d = path.Dir(d) {
			if root.Remove(d) != nil { // not empty (or not a directory): stop
				break
			}
		}
	}
}

// writeBlobs writes the files of the plan from the store, reading them
// through one git cat-file --batch.
func (w *Workspace) writeBlobs(ctx context.Context, root *os.Root, writes []action) error {
	var in bytes.Buffer
	for _, a := range writes {
		in.WriteString(a.to.id + "\n")
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := w.git("").stream(ctx, &in, pw, "cat-file", "--batch")
		pw.CloseWithError(err)
		done <- err
	}()
	defer func() {
		pr.Close()
		<-done
	}()
	br := bufio.NewReaderSize(pr, 64<<10)
	var errs []error
	for _, a := range writes {
		// <id> SP blob SP <size> LF <content> LF
		head, err := br.ReadString('\n')
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("reading %s from the store: %w", a.path, err))...)
		}
		f := strings.Fields(head)
		if len(f) != 3 || f[1] != "blob" {
			return errors.Join(append(errs, fmt.Errorf("reading %s from the store: %q", a.path, strings.TrimSpace(head)))...)
		}
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("reading %s from the store: %w", a.path, err))...)
		}
		body := io.LimitReader(br, size)
		if err := writeFile(root, a, body); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s: %w", a.path, err))
		}
		if _, err := io.Copy(io.Discard, body); err != nil { // what a failed write left unread
			return errors.Join(append(errs, err)...)
		}
		if _, err := br.Discard(1); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

// writeFile puts one file of a restore in place: a symlink, or a regular
// file written to a temporary name and renamed over the old one, with the
// executable bits of the checkpoint. An existing file keeps its other
// permission bits.
func writeFile(root *os.Root, a action, body io.Reader) error {
	dir := path.Dir(a.path)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	perm := fs.FileMode(0o644)
	if st, err := root.Lstat(a.path); err == nil {
		switch {
		case st.IsDir():
			// A directory where the checkpoint has a file: one the
			// removals emptied goes; one with someone's files in it stays.
			if err := root.Remove(a.path); err != nil {
				return fmt.Errorf("a directory is in the way: %w", err)
			}
		case st.Mode().IsRegular():
			perm = st.Mode().Perm()
		}
	}
	if a.to.mode == "120000" {
		target, err := io.ReadAll(io.LimitReader(body, 64<<10))
		if err != nil {
			return err
		}
		if err := root.Remove(a.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return root.Symlink(string(target), a.path)
	}
	if a.to.mode == "100755" {
		perm |= (perm & 0o444) >> 2 // x wherever r, as git does
		perm |= 0o100
	} else {
		perm &^= 0o111
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := path.Join(dir, ".weft-restore-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, body)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, a.path)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}
