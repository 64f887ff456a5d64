package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Consolidation ("dream", seed 004 §6.3): now and then a background agent
// merges, dedupes and prunes a memory directory. The Dreamer decides when
// (three gates), makes sure one process at a time does it (a lock file),
// and puts the directory back as it was when the agent fails.

// Defaults of DreamConfig.
const (
	DefaultDreamInterval = 24 * time.Hour
	DefaultDreamScan     = 10 * time.Minute
	DefaultDreamSessions = 3
	// maxSnapshot bounds what a dream snapshots in memory; a directory
	// holding more (hand-written files, a sync's leftovers) is not
	// consolidated.
	maxSnapshot = 8 << 20
)

// Files of the Dreamer in the memory directory. Dot files are never
// entries, and the git sync leaves them out.
const (
	DreamStateFile = ".dream.json"
	dreamLockFile  = ".dream.lock"
	dreamStateLock = ".dream-state.lock"
)

// ErrDreamBusy: another Dreamer (in this process or another) holds the
// directory's consolidation lock.
var ErrDreamBusy = errors.New("memory: another process is consolidating this memory")

// DreamConfig gates consolidation. The zero value means the defaults.
type DreamConfig struct {
	// Interval is the least time between two consolidations (the time
	// gate); 0 means 24 h.
	Interval time.Duration
	// ScanEvery is the least time between two checks of the session gate
	// (the scan throttle); 0 means 10 minutes.
	ScanEvery time.Duration
	// MinSessions is how many sessions must have used the memory since
	// the last consolidation; 0 means 3.
	MinSessions int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DreamState is the Dreamer's state, kept in DreamStateFile so that every
// process on the directory shares it.
type DreamState struct {
	// LastRun is when the last consolidation succeeded (zero: never).
	LastRun time.Time `json:"last_run"`
	// LastScan is when the gates were last checked past the time gate.
	LastScan time.Time `json:"last_scan"`
	// Sessions are the sessions seen since LastRun.
	Sessions []string `json:"sessions"`
}

// maxDreamSessions bounds DreamState.Sessions: the gate needs a count,
// not a history.
const maxDreamSessions = 64

// Dreamer consolidates one memory directory.
type Dreamer struct {
	dir *Dir
	cfg DreamConfig
}

// NewDreamer returns the Dreamer of d.
func NewDreamer(d *Dir, cfg DreamConfig) *Dreamer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultDreamInterval
	}
	if cfg.ScanEvery <= 0 {
		cfg.ScanEvery = DefaultDreamScan
	}
	if cfg.MinSessions <= 0 {
		cfg.MinSessions = DefaultDreamSessions
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Dreamer{dir: d, cfg: cfg}
}

// Dir is the directory the Dreamer consolidates.
func (dr *Dreamer) Dir() *Dir { return dr.dir }

// flock opens (creating) name in the directory and locks it; with wait
// false it fails with ErrDreamBusy when someone holds it. The lock goes
// with the process: a killed dreamer leaves no stale lock behind.
func (dr *Dreamer) flock(name string, wait bool) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dr.dir.Path(), name), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrDreamBusy
		}
		return nil, fmt.Errorf("memory: locking %s: %w", name, err)
	}
	return f, nil
}

func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}

// State reads the state file; a missing or unreadable one is the zero
// state (a damaged file must not stop consolidation for good).
func (dr *Dreamer) State() DreamState {
	var st DreamState
	b, _, err := readRegular(filepath.Join(dr.dir.Path(), DreamStateFile), 1<<20)
	if err == nil {
		_ = json.Unmarshal(b, &st)
	}
	return st
}

// update changes the state under the state lock (short: never held
// while the agent works).
func (dr *Dreamer) update(fn func(*DreamState) error) (DreamState, error) {
	l, err := dr.flock(dreamStateLock, true)
	if err != nil {
		return DreamState{}, err
	}
	defer unlock(l)
	st := dr.State()
	if err := fn(&st); err != nil {
		return st, err
	}
	b, err := json.Marshal(st)
	if err != nil {
		return st, err
	}
	return st, atomicWrite(dr.dir.Path(), filepath.Join(dr.dir.Path(), DreamStateFile), b)
}

// NoteSession counts session toward the session gate (once however often
// it is noted).
func (dr *Dreamer) NoteSession(session string) error {
	if session == "" {
		return nil
	}
	st := dr.State()
	if slices.Contains(st.Sessions, session) {
		return nil
	}
	_, err := dr.update(func(st *DreamState) error {
		if !slices.Contains(st.Sessions, session) {
			st.Sessions = append(st.Sessions, session)
			if n := len(st.Sessions); n > maxDreamSessions {
				st.Sessions = st.Sessions[n-maxDreamSessions:]
			}
		}
		return nil
	})
	return err
}

// errGate stops update without writing.
var errGate = errors.New("gate closed")

// Due checks the gates in the seed's order: the time gate (Interval
// since the last consolidation), the scan throttle (ScanEvery since the
// last check that got past the time gate; such a check is recorded) and
// the session gate (MinSessions sessions since the last consolidation).
// It returns whether all three are open, and which closed otherwise.
func (dr *Dreamer) Due() (bool, string, error) {
	now := dr.cfg.Now()
	st := dr.State()
	if !st.LastRun.IsZero() && now.Sub(st.LastRun) < dr.cfg.Interval {
		return false, "time", nil
	}
	if !st.LastScan.IsZero() && now.Sub(st.LastScan) < dr.cfg.ScanEvery && now.Sub(st.LastScan) >= 0 {
		return false, "throttle", nil
	}
	st, err := dr.update(func(st *DreamState) error {
		// Another process may have scanned (or dreamt) since State.
		if !st.LastScan.IsZero() && now.Sub(st.LastScan) < dr.cfg.ScanEvery && now.Sub(st.LastScan) >= 0 {
			return errGate
		}
		st.LastScan = now
		return nil
	})
	if errors.Is(err, errGate) {
		return false, "throttle", nil
	}
	if err != nil {
		return false, "", err
	}
	if len(st.Sessions) < dr.cfg.MinSessions {
		return false, "sessions", nil
	}
	return true, "", nil
}

// Consolidate is the work of a dream: an agent changing the directory's
// files. An error (or a panic) makes the Dreamer put them back.
type Consolidate func(ctx context.Context, d *Dir) error

// MaybeRun runs fn when the gates are open (Due) and no one else holds
// the lock; ran says whether it did.
func (dr *Dreamer) MaybeRun(ctx context.Context, fn Consolidate) (ran bool, err error) {
	due, _, err := dr.Due()
	if err != nil || !due {
		return false, err
	}
	err = dr.Run(ctx, fn)
	if errors.Is(err, ErrDreamBusy) {
		return false, nil
	}
	return true, err
}

// Run consolidates now, whatever the gates say: it takes the lock
// (ErrDreamBusy when another holds it), snapshots the directory, runs fn,
// and on failure restores the snapshot byte for byte (contents, modes and
// times of the files, files fn added removed). On success the state
// starts a new period: LastRun now, no sessions.
func (dr *Dreamer) Run(ctx context.Context, fn Consolidate) (err error) {
	l, err := dr.flock(dreamLockFile, false)
	if err != nil {
		return err
	}
	defer unlock(l)
	snap, err := dr.snapshot()
	if err != nil {
		return err
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("memory: consolidation panicked: %v\n%s", r, debug.Stack())
			}
		}()
		err = fn(ctx, dr.dir)
	}()
	if err != nil {
		if rerr := dr.restore(snap); rerr != nil {
			return fmt.Errorf("%w; putting memory back failed too: %v", err, rerr)
		}
		return fmt.Errorf("memory: consolidation failed, memory put back as it was: %w", err)
	}
	now := dr.cfg.Now()
	_, err = dr.update(func(st *DreamState) error {
		st.LastRun, st.LastScan, st.Sessions = now, now, nil
		return nil
	})
	return err
}

// snapFile is one file of a snapshot.
type snapFile struct {
	data  []byte
	mode  fs.FileMode
	mtime time.Time
}

// ownFile: a file of the Dreamer's or of a write in progress, which a
// snapshot leaves alone.
func ownFile(name string) bool {
	return strings.HasPrefix(name, ".dream") || strings.HasPrefix(name, ".tmp-")
}

// snapshot reads every regular file directly in the directory (entries,
// the index, hand-written files); subdirectories (.git) are not the
// agent's to change and are left out.
func (dr *Dreamer) snapshot() (map[string]snapFile, error) {
	des, err := os.ReadDir(dr.dir.Path())
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	snap := map[string]snapFile{}
	total := 0
	for _, de := range des {
		if !de.Type().IsRegular() || ownFile(de.Name()) {
			continue
		}
		b, fi, err := readRegular(filepath.Join(dr.dir.Path(), de.Name()), maxSnapshot)
		if err != nil {
			return nil, fmt.Errorf("memory: snapshot before consolidation: %w", err)
		}
		if total += len(b); total > maxSnapshot {
			return nil, fmt.Errorf("memory: %w: the directory holds over %d MB, not consolidating it", ErrTooLarge, maxSnapshot>>20)
		}
		snap[de.Name()] = snapFile{data: b, mode: fi.Mode().Perm(), mtime: fi.ModTime()}
	}
	return snap, nil
}

// restore makes the directory's top-level files what snap holds.
func (dr *Dreamer) restore(snap map[string]snapFile) error {
	root := dr.dir.Path()
	dr.dir.mu.Lock()
	defer dr.dir.mu.Unlock()
	des, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	var errs []error
	for _, de := range des {
		if _, ok := snap[de.Name()]; ok || de.IsDir() || ownFile(de.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(root, de.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	for name, f := range snap {
		p := filepath.Join(root, name)
		if cur, err := os.ReadFile(p); err == nil && string(cur) == string(f.data) {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == f.mode && fi.ModTime().Equal(f.mtime) {
				continue
			}
		}
		if err := atomicWrite(root, p, f.data); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Chmod(p, f.mode); err != nil {
			errs = append(errs, err)
		}
		if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
			errs = append(errs, err)
		}
	}
	dr.dir.gen.Add(1)
	return errors.Join(errs...)
}
