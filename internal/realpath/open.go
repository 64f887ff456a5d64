package realpath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlink is returned by Open, OpenDir and WriteAtomic when a component
// of a path they were given (which Resolve returned free of symlinks) is a
// symlink now: it was swapped in after the path was checked.
var ErrSymlink = errors.New("a symlink appeared in the path after it was checked; it is not followed")

// OpenFile opens the clean absolute path p like os.OpenFile, but follows no
// symlink in any component: each directory is opened relative to the one
// before with O_NOFOLLOW, and so is the file. Use it on a path Resolve
// returned, so that what the permission check saw is what is opened.
func OpenFile(p string, flag int, perm fs.FileMode) (*os.File, error) {
	dir, base, err := openParent(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	if base == "" {
		// p is "/": nothing to follow.
		return os.OpenFile(p, flag, perm)
	}
	fd, err := openat(dir, base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	return os.NewFile(uintptr(fd), p), nil
}

// Open opens p for reading; see OpenFile.
func Open(p string) (*os.File, error) { return OpenFile(p, os.O_RDONLY, 0) }

// ReadFile reads the whole file at p; see OpenFile.
func ReadFile(p string) ([]byte, error) {
	f, err := Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// WriteAtomic replaces the file at the clean absolute path p with data
// through a temporary file in the same directory and a rename, so readers
// see the old or the new content, never a mix, and a failed write leaves
// the old file intact. The directory is reached without following
// symlinks, and the temporary file and the rename are relative to it: a
// symlink swapped into the path after the check makes the write fail
// rather than land elsewhere. A symlink at p itself is replaced, not
// followed.
func WriteAtomic(p string, data []byte, perm fs.FileMode) error {
	dir, base, err := openParent(p)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	if base == "" {
		return pathErr("write", p, unix.EISDIR)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + base + ".weft-" + hex.EncodeToString(rnd[:])
	fd, err := openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return pathErr("create", filepath.Join(filepath.Dir(p), tmp), err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	ok := false
	defer func() {
		if !ok {
			f.Close()
			_ = unix.Unlinkat(dir, tmp, 0)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := unix.Renameat(dir, tmp, dir, base); err != nil {
		return pathErr("rename", p, err)
	}
	ok = true
	return nil
}

// openParent opens the directory holding p, following no symlink, and
// returns it with p's last component ("" for "/").
func openParent(p string) (int, string, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return -1, "", fmt.Errorf("realpath: %q is not a clean absolute path", p)
	}
	fd, err := openat(unix.AT_FDCWD, "/", dirFlags, 0)
	if err != nil {
		return -1, "", pathErr("open", "/", err)
	}
	if p == "/" {
		return fd, "", nil
	}
	parts := strings.Split(p[1:], "/")
	for i, name := range parts[:len(parts)-1] {
		next, err := openat(fd, name, dirFlags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, "", pathErr("open", "/"+strings.Join(parts[:i+1], "/"), err)
		}
		fd = next
	}
	return fd, parts[len(parts)-1], nil
}

func openat(dir int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flags, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// pathErr reports a refused symlink as ErrSymlink and everything else as
// the usual *fs.PathError.
func pathErr(op, p string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) && isSymlinkSomewhere(p) {
		return &fs.PathError{Op: op, Path: p, Err: ErrSymlink}
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// isSymlinkSomewhere reports whether a component of p is a symlink now
// (to tell a swapped-in link from a plain "not a directory").
func isSymlinkSomewhere(p string) bool {
	for q := p; ; q = filepath.Dir(q) {
		if fi, err := os.Lstat(q); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
		if filepath.Dir(q) == q {
			return false
		}
	}
}
