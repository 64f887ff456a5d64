package lease

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// Local is a store.Leases for a process alone with its store (SQLite,
// which one process holds with a file lock, or memory): leases by the
// local clock, in memory. It lets the code that claims work be the same
// on one node as on several.
type Local struct {
	mu     sync.Mutex
	leases map[string]record.Lease
	now    func() time.Time
}

var _ store.Leases = (*Local)(nil)

// NewLocal returns an empty Local.
func NewLocal() *Local { return &Local{leases: map[string]record.Lease{}, now: time.Now} }

// AcquireLease implements store.Leases.
func (m *Local) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (record.Lease, bool, error) {
	if name == "" || holder == "" {
		return record.Lease{}, false, errors.New("lease: acquire: empty name or holder")
	}
	if ttl < time.Millisecond {
		return record.Lease{}, false, errors.New("lease: acquire: ttl below 1ms")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now().UTC()
	cur, ok := m.leases[name]
	live := ok && cur.ExpiresAt.After(now)
	switch {
	case live && cur.Holder == holder:
		cur.ExpiresAt = now.Add(ttl)
	case live:
		return cur, false, nil
	default:
		cur = record.Lease{Name: name, Holder: holder, Epoch: cur.Epoch + 1, AcquiredAt: now, ExpiresAt: now.Add(ttl)}
	}
	m.leases[name] = cur
	return cur, true, nil
}

// RenewLease implements store.Leases.
func (m *Local) RenewLease(_ context.Context, l record.Lease, ttl time.Duration) (record.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now().UTC()
	cur, ok := m.leases[l.Name]
	if !ok || cur.Holder != l.Holder || cur.Epoch != l.Epoch || !cur.ExpiresAt.After(now) {
		return record.Lease{}, store.ErrLeaseLost
	}
	cur.ExpiresAt = now.Add(ttl)
	m.leases[l.Name] = cur
	return cur, nil
}

// ReleaseLease implements store.Leases.
func (m *Local) ReleaseLease(_ context.Context, l record.Lease) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[l.Name]
	if !ok || cur.Holder != l.Holder || cur.Epoch != l.Epoch {
		return false, nil
	}
	// Keep the epoch, so the next holder's is higher.
	cur.ExpiresAt = time.Time{}
	m.leases[l.Name] = cur
	return true, nil
}

// ListLeases implements store.Leases.
func (m *Local) ListLeases(context.Context) ([]record.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	out := []record.Lease{}
	for _, l := range m.leases {
		if l.ExpiresAt.After(now) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b record.Lease) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
