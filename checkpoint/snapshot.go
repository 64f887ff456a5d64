package checkpoint

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Workspace is the checkpoints of one workspace. Its methods are safe for
// concurrent use; within one process they take turns (a snapshot walks
// the whole workspace, and two at once would only slow each other down).
type Workspace struct {
	s   *Store
	dir string // resolved
	key string // WorkspaceKey(dir)

	mu     sync.Mutex
	chains map[string]*chain // by ref, the parsed commits of a session
	diffs  map[[2]string][]change
	trees  map[string]map[string]blob
}

func newWorkspace(s *Store, dir string) *Workspace {
	return &Workspace{s: s, dir: dir, key: WorkspaceKey(dir), chains: map[string]*chain{}, diffs: map[[2]string][]change{}, trees: map[string]map[string]blob{}}
}

// Dir is the workspace's resolved path.
func (w *Workspace) Dir() string { return w.dir }

// Key is WorkspaceKey of the workspace.
func (w *Workspace) Key() string { return w.key }

// indexPath is the workspace's index file in the store: a cache of the
// files' stat data and blob ids, so that a snapshot hashes only what
// changed. Its name carries the excludes' hash: other excludes, another
// index.
func (w *Workspace) indexPath() string {
	return filepath.Join(w.s.Dir(), "index", w.key+"-"+w.s.exclKey)
}

func (w *Workspace) git(index string) *gitCmd {
	return &gitCmd{bin: w.s.git, gitDir: w.s.gitDir, workTree: w.dir, index: index, excludes: w.s.excludes, env: w.s.env}
}

// tree snapshots the workspace as it is into a tree object and returns
// its id. Nothing in the workspace is written. The call holds w.mu.
//
// The store's index for the workspace is copied to a temporary index
// file, used, and renamed back: another weft process snapshotting the same
// workspace then never finds the index locked, and the worst a race does
// is lose one process's stat cache (the next snapshot hashes a few files
// again). The copy keeps the original's modification time, which git
// compares with the files' to tell a racily changed file.
func (w *Workspace) tree(ctx context.Context) (string, error) {
	return w.treeOpts(ctx, false)
}

// treeOpts is tree; refresh also re-reads the stat data of every file into
// the index (Warm).
func (w *Workspace) treeOpts(ctx context.Context, refresh bool) (string, error) {
	timeout := w.s.opts.Timeout
	if _, err := os.Stat(w.indexPath()); err != nil {
		timeout = max(timeout, ColdTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tree, err := w.treeWith(ctx, true, refresh)
	if err != nil && ctx.Err() == nil {
		// A damaged index, or one naming a blob the store has since
		// packed away: start from an empty one.
		w.s.opts.Logger.Warn("checkpoint: snapshot failed; retrying with a fresh index", "workspace", w.dir, "error", err)
		tree, err = w.treeWith(ctx, false, refresh)
	}
	return tree, err
}

// Warm snapshots the workspace without recording a checkpoint, so that
// the first checkpoint only looks at what changed since: weft calls it in
// the background as it starts. It also refreshes the index's stat data:
// a file written in the same second as the index was is "racily clean"
// to git, which then compares its content at every snapshot until a
// refresh records it as clean.
func (w *Workspace) Warm(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.treeOpts(ctx, true)
	return err
}

// WarmInBackground runs Warm on its own goroutine; Store.Close stops it.
func (w *Workspace) WarmInBackground() {
	w.s.gcs.Add(1)
	go func() {
		defer w.s.gcs.Done()
		if err := w.Warm(w.s.bg); err != nil && w.s.bg.Err() == nil {
			w.s.opts.Logger.Warn("checkpoint: warming the workspace's index failed", "workspace", w.dir, "error", err)
		}
	}()
}

func (w *Workspace) treeWith(ctx context.Context, warm, refresh bool) (string, error) {
	tmp, before, err := w.tempIndex(warm)
	if err != nil {
		return "", err
	}
	keep := false
	defer func() {
		if !keep {
			os.Remove(tmp)
		}
	}()
	g := w.git(tmp)
	// What changed since the index was written: untracked files that no
	// exclude matches, and modified or deleted ones.
	out, err := g.run(ctx, nil, "ls-files", "-z", "--others", "--modified", "--exclude-standard")
	if err != nil {
		return "", err
	}
	add, remove := w.sort(out)
	if m := w.s.opts.MaxFiles; m > 0 && len(add) > m {
		return "", fmt.Errorf("%w: %d to add, at most %d", ErrTooManyFiles, len(add), m)
	}
	if len(add) == 0 && len(remove) == 0 && !refresh {
		// Nothing changed since the index was written: its cache tree is
		// the snapshot, and neither git write-tree nor a new index is
		// needed.
		if _, root, ok := indexEntries(before, nil); ok && root != "" {
			return root, nil
		}
	}
	if len(remove) > 0 {
		if _, err := g.run(ctx, bytes.NewReader(nulJoin(remove)), "update-index", "-z", "--force-remove", "--stdin"); err != nil {
			return "", err
		}
	}
	if len(add) > 0 {
		if _, err := g.run(ctx, bytes.NewReader(nulJoin(add)), "update-index", "-z", "--add", "--remove", "--replace", "--stdin"); err != nil {
			return "", err
		}
	}
	touched := append(add, remove...)
	if hasGitignore(add) || hasGitignore(remove) {
		// A changed .gitignore may exclude files the index already has:
		// they leave the snapshot as they would never have entered it.
		out, err := g.run(ctx, nil, "ls-files", "-z", "--cached", "--ignored", "--exclude-standard")
		if err != nil {
			return "", err
		}
		if ign := splitNul(out); len(ign) > 0 {
			touched = append(touched, ign...)
			if _, err := g.run(ctx, bytes.NewReader(nulJoin(ign)), "update-index", "-z", "--force-remove", "--stdin"); err != nil {
				return "", err
			}
		}
	}
	if refresh {
		// Exit status 1 lists files that need an update: not an error.
		if _, err := g.run(ctx, nil, "update-index", "-q", "--refresh", "--ignore-missing", "--unmerged"); err != nil && ctx.Err() != nil {
			return "", err
		}
	}
	out, err = g.run(ctx, nil, "write-tree")
	if err != nil {
		return "", err
	}
	tree := strings.TrimSpace(string(out))
	if !isHex(tree) {
		return "", fmt.Errorf("git write-tree: unexpected output %q", firstLine(tree))
	}
	w.noteDiff(before, tmp, tree, touched)
	if err := os.Rename(tmp, w.indexPath()); err == nil {
		keep = true
	}
	return tree, nil
}

// tempIndex copies the workspace's index to a new temporary file (an
// empty name for git to create when there is none, or when !warm), and
// returns what it copied.
func (w *Workspace) tempIndex(warm bool) (string, []byte, error) {
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := w.indexPath() + ".tmp-" + hex.EncodeToString(rnd[:])
	if !warm {
		return tmp, nil, nil
	}
	src, err := os.Open(w.indexPath())
	if errors.Is(err, fs.ErrNotExist) {
		return tmp, nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return "", nil, err
	}
	b, err := io.ReadAll(src)
	if err != nil {
		return "", nil, err
	}
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, err
	}
	_, err = dst.Write(b)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(tmp, st.ModTime(), st.ModTime())
	}
	if err != nil {
		os.Remove(tmp)
		return "", nil, err
	}
	return tmp, b, nil
}

// noteDiff remembers what changed between the tree the index was before
// this snapshot and the new tree, read from the two index files (see
// indexDiff), so that the checkpoint's list of changed files needs no
// git process. When it cannot tell, diff asks git.
func (w *Workspace) noteDiff(before []byte, index, tree string, touched []string) {
	if len(before) == 0 {
		return
	}
	after, err := os.ReadFile(index)
	if err != nil {
		return
	}
	d, oldTree, ok := indexDiff(before, after, touched)
	if !ok || oldTree == tree {
		return
	}
	if len(w.diffs) > 4096 {
		clear(w.diffs)
	}
	w.diffs[[2]string{oldTree, tree}] = d
}

// sort splits the paths git listed into those to add (regular files and
// symlinks a snapshot keeps) and those to drop from the index (gone, now
// a directory, too large, binary, unreadable). A directory git lists with
// a trailing slash is a nested repository, which is left out.
func (w *Workspace) sort(out []byte) (add, remove []string) {
	seen := map[string]bool{}
	for _, p := range splitNul(out) {
		if seen[p] || strings.HasSuffix(p, "/") {
			continue
		}
		seen[p] = true
		if w.keep(p) {
			add = append(add, p)
		} else {
			remove = append(remove, p)
		}
	}
	return add, remove
}

// sniffLen is how much of a file is read to tell a binary one: git's own
// measure.
const sniffLen = 8000

// keep reports whether the file at the relative path p belongs in a
// snapshot.
func (w *Workspace) keep(p string) bool {
	full := filepath.Join(w.dir, filepath.FromSlash(p))
	st, err := os.Lstat(full)
	if err != nil {
		return false
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return true
	case !st.Mode().IsRegular():
		return false
	case w.s.opts.MaxFileSize > 0 && st.Size() > w.s.opts.MaxFileSize:
		return false
	}
	f, err := os.Open(full)
	if err != nil {
		return false // git could not read it either
	}
	defer f.Close()
	if w.s.opts.IncludeBinary {
		return true
	}
	buf := make([]byte, sniffLen)
	n, _ := io.ReadFull(f, buf)
	return bytes.IndexByte(buf[:n], 0) < 0
}

func hasGitignore(paths []string) bool {
	for _, p := range paths {
		if p == ".gitignore" || strings.HasSuffix(p, "/.gitignore") {
			return true
		}
	}
	return false
}

func splitNul(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			out = append(out, string(b))
			break
		}
		if i > 0 {
			out = append(out, string(b[:i]))
		}
		b = b[i+1:]
	}
	return out
}

func nulJoin(ss []string) []byte {
	var b bytes.Buffer
	for _, s := range ss {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.Bytes()
}

func isHex(s string) bool {
	if len(s) < 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
