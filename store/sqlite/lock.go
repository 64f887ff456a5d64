package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrLocked is wrapped by Open's error when another process (or another
// DB in this one) has the database open: one writer per database.
var ErrLocked = errors.New("database is in use")

// lockFile holds the exclusive lock of a database file: its path plus
// ".lock". The event log numbers events before the store sees them, and
// the store caches each session's last seq; two writers on one file would
// both hand out the same seqs, so a second Open fails instead. The lock is
// an flock(2) on the sidecar file (not on the database, whose locks SQLite
// manages): the kernel drops it when the holder exits, however it exits,
// so a kill -9 leaves no stale lock. The file holds the holder's pid, for
// the message; it is never removed (removing it would let a third process
// lock a fresh file while the second still waits on the old one).
type lockFile struct{ f *os.File }

func lockPath(dbPath string) string { return dbPath + ".lock" }

// acquireLock locks dbPath's lock file, or fails with ErrLocked naming the
// holder's pid when it can.
func acquireLock(dbPath string) (*lockFile, error) {
	path := lockPath(dbPath)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open lock file %s: %w", path, err)
	}
	locked, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	if !locked {
		holder := "another process"
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				holder = fmt.Sprintf("another process (pid %d)", pid)
				if pid == os.Getpid() {
					holder = "this process"
				}
			}
		}
		f.Close()
		return nil, fmt.Errorf("sqlite: %s is already open in %s; only one weft may use a database at a time: stop the other one or use another database file: %w",
			dbPath, holder, ErrLocked)
	}
	// Best effort: the pid only makes the message above better.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &lockFile{f: f}, nil
}

// release unlocks (closing the file drops the flock).
func (l *lockFile) release() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}
