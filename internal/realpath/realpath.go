// Package realpath resolves a path to the file it really names, the one
// place where the permission rules and the file tools agree on what a path
// means. Rules that compared paths as typed while the tools followed links
// let /proc/self/root/<ws>/.env read the .env that Read(./.env) denies; both
// sides now resolve with Resolve, and the tools then open the resolved path
// with Open or OpenDir, which refuse any symlink that appeared since.
package realpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxLinks bounds symlink hops, as the kernel's ELOOP limit does.
const MaxLinks = 255

// ErrTooManyLinks is returned for a symlink loop or a chain longer than
// MaxLinks.
var ErrTooManyLinks = errors.New("too many levels of symbolic links")

// Resolve turns the absolute path p into an absolute path free of "..",
// "." and symlinks. p is cleaned first (so "link/.." is the directory that
// holds link, never where link points: the tools then use the result, so
// the lexical reading is the one that is checked and the one that is used).
//
// Every symlink is followed, including the kernel's magic links under /proc
// (/proc/self/root, /proc/self/cwd, /proc/<pid>/fd/N, /dev/fd/N through
// /proc/self/fd) by their link text. The path need not exist: the deepest
// existing ancestor is resolved and the rest appended, and a dangling
// symlink is followed by its text (creating a file through it would create
// its target). Only a loop or an unreadable link is an error.
func Resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", errors.New("realpath: path is not absolute: " + p)
	}
	links := 0
	return resolve(filepath.Clean(p), &links)
}

func resolve(p string, links *int) (string, error) {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, nil
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p, nil
	}
	rp, err := resolve(parent, links)
	if err != nil {
		return "", err
	}
	cand := filepath.Join(rp, filepath.Base(p))
	fi, err := os.Lstat(cand)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		// Missing, or unreadable: the operation on cand reports the real
		// problem.
		return cand, nil
	}
	*links++
	if *links > MaxLinks {
		return "", ErrTooManyLinks
	}
	target, err := os.Readlink(cand)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(rp, target)
	}
	return resolve(filepath.Clean(target), links)
}

// Within reports whether p is root or lies below it; both are clean and
// absolute.
func Within(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return len(p) > 0 && p[0] == filepath.Separator
	}
	return len(p) > len(root) && p[:len(root)] == root && p[len(root)] == filepath.Separator
}
