// Package checkpoint keeps snapshots of a workspace in a git repository of
// weft's own, so that what an agent changed can be undone (seed 004 §4).
//
// The snapshots live in one bare repository under ~/.weft/checkpoints
// (Options.Dir), driven with GIT_DIR, GIT_WORK_TREE and an index file of
// the store's, so the workspace's own .git (its HEAD, index, refs,
// config and hooks) is never read or written. Each session's checkpoints
// are a chain of commits on a ref of their own,
// refs/weft/<workspace>/<session>, where <workspace> is a hash of the
// workspace's resolved path; the blobs and trees are shared by every
// workspace and session, so a checkpoint costs only what changed.
//
// A snapshot leaves out what is not source: the workspace's .gitignore
// (git's own matching), DefaultExcludes (node_modules, .venv, build
// outputs, compiled objects), nested repositories, files over
// Options.MaxFileSize and binary files (a NUL byte in the first 8,000
// bytes, git's test).
//
// Workspace is the API of one workspace: Snapshot and Settle (the policy
// stage's, before and after a call), List, Diff, Restore and Undo (the
// front doors').
package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options configure a Store. The zero value (with Dir set) is the
// default: 10 MB files, binaries left out, DefaultExcludes.
type Options struct {
	// Dir is the store's directory; DefaultDir(home) is ~/.weft/checkpoints.
	Dir string
	// MaxFileSize leaves out files larger than this many bytes; 0 means
	// DefaultMaxFileSize, negative means no limit.
	MaxFileSize int64
	// Exclude are further patterns in .gitignore syntax, after
	// DefaultExcludes (so "!build/" takes build directories back in).
	Exclude []string
	// IncludeBinary keeps binary files (a NUL byte near the start) in
	// snapshots.
	IncludeBinary bool
	// MaxFiles refuses a snapshot that would add more files than this at
	// once (weft started in a home directory, say): 0 means
	// DefaultMaxFiles, negative means no limit.
	MaxFiles int
	// Git is the git binary; "" means "git" on PATH.
	Git string
	// Timeout bounds one snapshot; 0 means DefaultTimeout.
	Timeout time.Duration
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxFileSize = 10 << 20
	DefaultMaxFiles    = 100_000
	DefaultTimeout     = 30 * time.Second
	// ColdTimeout bounds a workspace's first snapshot, which hashes and
	// stores every file (tens of seconds for 10,000 files on a busy disk);
	// the later ones only look at what changed.
	ColdTimeout = 10 * time.Minute
)

// DefaultExcludes are left out of every snapshot, in .gitignore syntax:
// dependencies, virtual environments, caches and build outputs, which are
// large, regenerated, and not what an undo should bring back.
var DefaultExcludes = []string{
	".git/", "node_modules/", ".venv/", "__pycache__/",
	"dist/", "build/", "target/", ".next/", ".nuxt/", ".svelte-kit/", ".turbo/",
	".parcel-cache/", ".gradle/", ".tox/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/",
	"*.exe", "*.dll", "*.so", "*.dylib", "*.o", "*.obj", "*.a", "*.lib", "*.class", "*.pyc", "*.pyo",
}

// DefaultDir is the store's directory under a home directory.
func DefaultDir(home string) string { return filepath.Join(home, ".weft", "checkpoints") }

// ErrTooManyFiles is a snapshot's error when the workspace has more new
// files than Options.MaxFiles.
var ErrTooManyFiles = errors.New("checkpoint: the workspace has too many files to snapshot (Options.MaxFiles)")

// ErrNoGit is returned by Open when there is no git binary.
var ErrNoGit = errors.New("checkpoint: workspace checkpoints need git, which is not installed (Debian: apt-get install git)")

// Store is the checkpoint repository. It is safe for concurrent use, and
// several weft processes may share one directory: a checkpoint is a commit
// added to its session's ref by a compare-and-swap.
type Store struct {
	opts     Options
	git      string
	gitDir   string
	excludes string // the exclude file of these options
	exclKey  string // a hash of its content: part of the index file's name
	env      []string

	mu         sync.Mutex
	workspaces map[string]*Workspace // by resolved path
	gcs        sync.WaitGroup        // background work: packing, warming
	bg         context.Context       // background work's, ended by Close
	stop       context.CancelFunc    //
	commits    int                   // since the last gc --auto
}

// Open opens (creating it if need be) the store in opts.Dir.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("checkpoint: no directory for the store")
	}
	if opts.MaxFileSize == 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.MaxFiles == 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	bin := opts.Git
	if bin == "" {
		bin = "git"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, ErrNoGit
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{opts: opts, git: path, gitDir: filepath.Join(dir, "store.git"), env: baseEnv(), workspaces: map[string]*Workspace{}}
	s.bg, s.stop = context.WithCancel(context.Background())
	for _, d := range []string{dir, filepath.Join(dir, "index")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.gitDir, "HEAD")); err != nil {
		// Two processes may race here: git init on an existing repository
		// only re-initialises it.
		g := &gitCmd{bin: path, gitDir: s.gitDir, env: s.env}
		if err := os.MkdirAll(s.gitDir, 0o700); err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		if _, err := g.run(context.Background(), nil, "init", "--quiet", "--bare"); err != nil {
			return nil, fmt.Errorf("checkpoint: creating the store: %w", err)
		}
	}
	// The workspace's .gitattributes must not change what is stored: no
	// end-of-line conversion, no filter, no $Id$ expansion. info/attributes
	// outranks every .gitattributes file.
	if err := writeIfChanged(filepath.Join(s.gitDir, "info", "attributes"),
		"* -text -eol -filter -ident -working-tree-encoding -merge\n"); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	excl := strings.Join(append(append([]string(nil), DefaultExcludes...), opts.Exclude...), "\n") + "\n"
	for _, p := range opts.Exclude {
		if strings.ContainsAny(p, "\n\r") {
			return nil, fmt.Errorf("checkpoint: exclude pattern %q spans lines", p)
		}
	}
	sweep(filepath.Join(dir, "index"), time.Hour)
	sweep(filepath.Join(s.gitDir, "refs", "weft"), 10*time.Minute)
	sum := sha256.Sum256([]byte(excl))
	s.exclKey = hex.EncodeToString(sum[:6])
	s.excludes = filepath.Join(dir, "excludes-"+s.exclKey)
	if err := writeIfChanged(s.excludes, excl); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return s, nil
}

// sweep removes what a weft or git process killed mid-snapshot left
// under dir: temporary index files (".tmp-", ".plan-") and lock files
// older than age. A stale ref lock would otherwise refuse every later
// checkpoint of its session; no live process holds one for minutes.
func sweep(dir string, age time.Duration) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		n := d.Name()
		if !strings.HasSuffix(n, ".lock") && !strings.Contains(n, ".tmp-") && !strings.Contains(n, ".plan-") {
			return nil
		}
		if info, err := d.Info(); err == nil && time.Since(info.ModTime()) > age {
			os.Remove(p)
		}
		return nil
	})
}

// Dir is the store's directory.
func (s *Store) Dir() string { return filepath.Dir(s.gitDir) }

// Close waits for background maintenance to end.
func (s *Store) Close() error {
	s.stop()
	s.gcs.Wait()
	return nil
}

// writeIfChanged writes content to path atomically unless it already
// holds it.
func writeIfChanged(path, content string) error {
	if b, err := os.ReadFile(path); err == nil && string(b) == content {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// Workspace returns the checkpoints of the workspace in dir (made
// absolute, symlinks resolved: two spellings of one directory are one
// workspace).
func (s *Store) Workspace(dir string) (*Workspace, error) {
	if dir == "" {
		return nil, errors.New("checkpoint: no workspace")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: workspace: %w", err)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("checkpoint: workspace %s is not a directory", dir)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.workspaces[real]; ok {
		return w, nil
	}
	w := newWorkspace(s, real)
	s.workspaces[real] = w
	return w, nil
}

// WorkspaceKey is the hash that names a workspace's refs: the first 8
// bytes of SHA-256 of its resolved path, in hex.
func WorkspaceKey(resolved string) string {
	h := sha256.Sum256([]byte(resolved))
	return hex.EncodeToString(h[:8])
}

// gcEvery is how many commits go by between two `git gc --auto` runs:
// loose objects add up, and git's plumbing never packs them itself.
const gcEvery = 256

// committed counts a commit and, every gcEvery, packs the store in the
// background (gc --auto does nothing until there is enough to pack).
func (s *Store) committed() {
	s.mu.Lock()
	s.commits++
	due := s.commits%gcEvery == 0
	s.mu.Unlock()
	if !due {
		return
	}
	s.gcs.Add(1)
	go func() {
		defer s.gcs.Done()
		g := &gitCmd{bin: s.git, gitDir: s.gitDir, env: s.env}
		ctx, cancel := context.WithTimeout(s.bg, 5*time.Minute)
		defer cancel()
		if _, err := g.run(ctx, nil, "-c", "gc.auto=6700", "gc", "--auto", "--quiet"); err != nil {
			s.opts.Logger.Warn("checkpoint: packing the store failed", "error", err)
		}
	}()
}
