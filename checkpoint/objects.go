package checkpoint

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A checkpoint's commit and its ref move are written here, as git would
// write them, instead of by `git commit-tree` and `git update-ref`: two
// git processes fewer on every checkpoint and after-record, which on a
// loaded machine is most of what a warm checkpoint costs besides the scan
// of the workspace. The formats are git's own (a zlib-compressed loose
// object named by the SHA-1 of its header and body; a loose ref file
// moved under its ".lock" as git's files backend does), so git reads,
// packs and collects them as its own. A store whose object ids are not
// SHA-1 falls back to the git processes.

// commitAuthor is what commit-tree writes from the store's environment
// (baseEnv's GIT_AUTHOR_* and GIT_COMMITTER_*).
const commitAuthor = "weft <weft@localhost>"

// writeCommit stores a commit of tree on parent ("" for none) with msg
// and returns its id.
func writeCommit(gitDir, tree, parent, msg string, now time.Time) (string, error) {
	if now.IsZero() {
		now = time.Now()
	}
	var body bytes.Buffer
	fmt.Fprintf(&body, "tree %s\n", tree)
	if parent != "" {
		fmt.Fprintf(&body, "parent %s\n", parent)
	}
	stamp := strconv.FormatInt(now.Unix(), 10) + " +0000"
	fmt.Fprintf(&body, "author %s %s\ncommitter %s %s\n\n", commitAuthor, stamp, commitAuthor, stamp)
	body.WriteString(msg)
	return writeObject(gitDir, "commit", body.Bytes())
}

// writeObject stores a loose object and returns its id. An object that
// is there already is left as it is (objects never change).
func writeObject(gitDir, typ string, body []byte) (string, error) {
	head := typ + " " + strconv.Itoa(len(body)) + "\x00"
	h := sha1.New()
	h.Write([]byte(head))
	h.Write(body)
	id := hex.EncodeToString(h.Sum(nil))
	dir := filepath.Join(gitDir, "objects", id[:2])
	path := filepath.Join(dir, id[2:])
	if _, err := os.Stat(path); err == nil {
		return id, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Written under a temporary name and renamed: a reader never sees a
	// partial object, and a process killed mid-write leaves only a
	// tmp_obj_ file, which git's prune removes.
	f, err := os.CreateTemp(dir, "tmp_obj_")
	if err != nil {
		return "", err
	}
	zw := zlib.NewWriter(f)
	_, err = zw.Write([]byte(head))
	if err == nil {
		_, err = zw.Write(body)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o444)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return id, nil
}

// sha1ID reports whether id is a SHA-1 object id (40 hex digits).
func sha1ID(id string) bool { return len(id) == 40 && isHex(id) }

// errRefMoved: the ref is not where the caller saw it (another process
// moved it, or holds its lock).
var errRefMoved = errors.New("the ref moved")

// casRef moves ref (a name under refs/) to id if it is at old now (""
// meaning it does not exist), as `git update-ref ref id old` does: under
// the ref's lock file, which git's own writers (and pack-refs) take too.
func casRef(gitDir, ref, id, old string) error {
	path := filepath.Join(gitDir, filepath.FromSlash(ref))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s is locked", errRefMoved, ref)
	}
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(lock)
		}
	}()
	cur, err := readRef(gitDir, ref)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("%w: %s is at %q, not %q", errRefMoved, ref, cur, old)
	}
	if _, err := f.WriteString(id + "\n"); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(lock)
		done = true
		return err
	}
	done = true
	if err := os.Rename(lock, path); err != nil {
		os.Remove(lock)
		return err
	}
	return nil
}

// readRef returns where ref points: its loose file, else its line in
// packed-refs, else "".
func readRef(gitDir, ref string) (string, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(ref)))
	if err == nil {
		id := strings.TrimSpace(string(b))
		if !isHex(id) {
			return "", fmt.Errorf("ref %s holds %q", ref, firstLine(id))
		}
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	f, err := os.Open(filepath.Join(gitDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		id, name, ok := strings.Cut(line, " ")
		if ok && name == ref {
			return id, nil
		}
	}
	return "", sc.Err()
}
