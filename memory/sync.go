package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// SyncAdapter keeps a memory directory in step with a remote copy (seed
// 000): a team's shared memory, or one user's across machines.
type SyncAdapter interface {
	// Pull brings the remote's changes into localDir and returns how many
	// files changed.
	Pull(ctx context.Context, localDir string) (pulled int, err error)
	// Push sends localDir's changes, settling a divergence as policy says,
	// and returns how many files it sent.
	Push(ctx context.Context, localDir string, policy ConflictPolicy) (pushed int, err error)
	// IsAvailable reports whether the adapter can sync at all; when it
	// cannot, the store skips every sync step.
	IsAvailable() bool
}

// ConflictPolicy says what Push does when the local and the remote copy
// both changed since they last agreed.
type ConflictPolicy int

const (
	// ConflictLocalWins overwrites the remote with the local copy (CLI,
	// one user: the default).
	ConflictLocalWins ConflictPolicy = iota
	// ConflictServerWins drops the local changes for the remote's.
	ConflictServerWins
	// ConflictMerge merges both; conflicting lines get conflict markers in
	// the memory file, for the agent (or consolidation) to settle.
	ConflictMerge
	// ConflictFail changes nothing and returns ErrSyncConflict.
	ConflictFail
)

func (p ConflictPolicy) String() string {
	switch p {
	case ConflictLocalWins:
		return "local-wins"
	case ConflictServerWins:
		return "server-wins"
	case ConflictMerge:
		return "merge"
	case ConflictFail:
		return "fail"
	}
	return "unknown"
}

// ErrSyncConflict: under ConflictFail, the local and remote copies
// diverged.
var ErrSyncConflict = errors.New("memory sync: local and remote memory diverged")

// PullPolicy says when a store pulls.
type PullPolicy int

const (
	// PullOnSessionStart pulls once, before the store is first read (CLI:
	// the default).
	PullOnSessionStart PullPolicy = iota
	// PullWithTTL pulls before a read when the last pull is older than
	// SyncConfig.TTL (SDK and API use).
	PullWithTTL
	// PullAlways pulls before every read.
	PullAlways
	// PullNever never pulls (offline).
	PullNever
)

// SyncConfig is how a store syncs.
type SyncConfig struct {
	Pull     PullPolicy
	TTL      time.Duration // for PullWithTTL
	Conflict ConflictPolicy
}

// DefaultSyncConfig is the CLI's: pull once per session, local wins.
func DefaultSyncConfig() SyncConfig {
	return SyncConfig{Pull: PullOnSessionStart, Conflict: ConflictLocalWins}
}

// APISyncConfig is a server's: pull when the last pull is older than
// ttl, the remote wins.
func APISyncConfig(ttl time.Duration) SyncConfig {
	return SyncConfig{Pull: PullWithTTL, TTL: ttl, Conflict: ConflictServerWins}
}

// Sync pairs an adapter with its configuration.
type Sync struct {
	Adapter SyncAdapter
	Config  SyncConfig
}

// NoopSyncAdapter syncs nothing: IsAvailable is false, so stores skip
// every sync step. It is what a store without a Sync uses.
type NoopSyncAdapter struct{}

func (NoopSyncAdapter) Pull(context.Context, string) (int, error)                 { return 0, nil }
func (NoopSyncAdapter) Push(context.Context, string, ConflictPolicy) (int, error) { return 0, nil }
func (NoopSyncAdapter) IsAvailable() bool                                         { return false }

// syncer applies one directory's Sync.
type syncer struct {
	sync Sync
	dir  *Dir
	now  func() time.Time

	mu       sync.Mutex
	pulled   bool
	lastPull time.Time
}

func newSyncer(s Sync, d *Dir, now func() time.Time) *syncer {
	if s.Adapter == nil {
		s.Adapter = NoopSyncAdapter{}
	}
	return &syncer{sync: s, dir: d, now: now}
}

// maybePull pulls when the policy says it is time. A failed pull counts
// as done for OnSessionStart and TTL, so that an unreachable remote is
// not retried on every prompt.
func (s *syncer) maybePull(ctx context.Context) error {
	if !s.sync.Adapter.IsAvailable() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	switch s.sync.Config.Pull {
	case PullNever:
		return nil
	case PullOnSessionStart:
		if s.pulled {
			return nil
		}
	case PullWithTTL:
		if s.pulled && now.Sub(s.lastPull) < s.sync.Config.TTL {
			return nil
		}
	}
	s.pulled, s.lastPull = true, now
	n, err := s.sync.Adapter.Pull(ctx, s.dir.Path())
	if n > 0 {
		// The index is not synced: rebuild it from the entries pulled.
		err = errors.Join(err, s.dir.UpdateIndex())
	}
	return err
}

func (s *syncer) push(ctx context.Context) (int, error) {
	if !s.sync.Adapter.IsAvailable() {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.sync.Adapter.Push(ctx, s.dir.Path(), s.sync.Config.Conflict)
	// ServerWins and Merge may have changed local entries.
	return n, errors.Join(err, s.dir.UpdateIndex())
}

// ParseConflictPolicy reads a policy as configuration spells it:
// "local-wins", "server-wins", "merge" or "fail" ("" is local-wins).
func ParseConflictPolicy(s string) (ConflictPolicy, error) {
	for _, p := range []ConflictPolicy{ConflictLocalWins, ConflictServerWins, ConflictMerge, ConflictFail} {
		if s == p.String() {
			return p, nil
		}
	}
	if s == "" {
		return ConflictLocalWins, nil
	}
	return 0, fmt.Errorf("conflict policy %q: want local-wins, server-wins, merge or fail", s)
}

func (p PullPolicy) String() string {
	switch p {
	case PullOnSessionStart:
		return "session-start"
	case PullWithTTL:
		return "ttl"
	case PullAlways:
		return "always"
	case PullNever:
		return "never"
	}
	return "unknown"
}

// ParsePullPolicy reads "session-start", "ttl", "always" or "never" (""
// is session-start).
func ParsePullPolicy(s string) (PullPolicy, error) {
	for _, p := range []PullPolicy{PullOnSessionStart, PullWithTTL, PullAlways, PullNever} {
		if s == p.String() {
			return p, nil
		}
	}
	if s == "" {
		return PullOnSessionStart, nil
	}
	return 0, fmt.Errorf("pull policy %q: want session-start, ttl, always or never", s)
}
