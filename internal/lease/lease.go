// Package lease holds named leases for a node: it takes a lease from a
// store.Leases (PostgreSQL when several nodes share the store, Local when
// one process is alone), renews it in the background while the work under
// it runs, and says when it is lost, so that the work stops before
// another node takes it over. Sessions, runs and the scheduler all claim
// their work through it, so one node does each piece of work at a time.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// DefaultTTL is how long a lease outlives its holder's last renewal: how
// long work a dead node held waits before another node takes it over.
const DefaultTTL = 15 * time.Second

// HeldError is returned by Keeper.Hold when another holder's lease is
// live.
type HeldError struct{ Lease record.Lease }

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease %q is held by %q until %s", e.Lease.Name, e.Lease.Holder, e.Lease.ExpiresAt.Format(time.RFC3339Nano))
}

// Keeper takes and keeps leases for one holder (a node).
type Keeper struct {
	leases store.Leases
	holder string
	ttl    time.Duration
	log    *slog.Logger

	// held are the leases a Held of this keeper stands for, from before
	// it is taken until it is given back in the store: the store would let
	// the keeper take a lease it holds again (same holder, same epoch),
	// and the first Held's release would then drop the second's lease.
	mu   sync.Mutex
	held map[string]*Held
}

// NewKeeper returns a keeper of holder's leases in ls, each lasting ttl
// (DefaultTTL when 0) past its last renewal. Renewals run every ttl/3.
func NewKeeper(ls store.Leases, holder string, ttl time.Duration, log *slog.Logger) *Keeper {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{leases: ls, holder: holder, ttl: ttl, log: log, held: map[string]*Held{}}
}

// Holder is the node the keeper holds leases for.
func (k *Keeper) Holder() string { return k.holder }

// TTL is how long a lease outlives its last renewal.
func (k *Keeper) TTL() time.Duration { return k.ttl }

// Leases is the store the keeper takes leases from.
func (k *Keeper) Leases() store.Leases { return k.leases }

// Hold takes the lease name and renews it until Release or until it is
// lost. It fails with a *HeldError when another holder's lease is live,
// and when this keeper holds it already: a Held not yet released (or
// whose release has not reached the store) is the only one of its lease.
func (k *Keeper) Hold(ctx context.Context, name string) (*Held, error) {
	h := &Held{k: k, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	k.mu.Lock()
	if cur := k.held[name]; cur != nil {
		k.mu.Unlock()
		l := cur.Lease()
		if l.Name == "" { // still being taken
			l = record.Lease{Name: name, Holder: k.holder}
		}
		return nil, &HeldError{Lease: l}
	}
	k.held[name] = h
	k.mu.Unlock()
	if err := k.hold(ctx, name, h); err != nil {
		k.forget(name, h)
		return nil, err
	}
	return h, nil
}

func (k *Keeper) forget(name string, h *Held) {
	k.mu.Lock()
	if k.held[name] == h {
		delete(k.held, name)
	}
	k.mu.Unlock()
}

func (k *Keeper) hold(ctx context.Context, name string, h *Held) error {
	// The lease runs from when the store took it, some time after this:
	// counting from before the call, the holder gives up no later than
	// the store lets another take over.
	sent := time.Now()
	l, ok, err := k.leases.AcquireLease(ctx, name, k.holder, k.ttl)
	if err != nil {
		return err
	}
	if !ok {
		return &HeldError{Lease: l}
	}
	h.mu.Lock()
	h.lease, h.deadline = l, sent.Add(k.ttl)
	h.mu.Unlock()
	go h.renew()
	return nil
}

// Held is a lease a Keeper holds and renews.
type Held struct {
	k        *Keeper
	mu       sync.Mutex
	lease    record.Lease
	deadline time.Time // by the local clock: past it, unrenewed, the lease may be another's
	lost     chan struct{}
	lostOnce sync.Once
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

// Lease is the lease as last renewed.
func (h *Held) Lease() record.Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease
}

// Lost is closed when the lease is lost: a renewal found it another's or
// expired, or renewals failed until it may have expired. Work under it
// must stop: another node may take it over.
func (h *Held) Lost() <-chan struct{} { return h.lost }

func (h *Held) markLost(why error) {
	h.lostOnce.Do(func() {
		if why != nil { // nil: released, nothing to warn of
			name := h.Lease().Name
			h.k.log.Warn("lease lost", "lease", name, "holder", h.k.holder, "error", why)
			// Not this keeper's any more: it may try to take it again.
			h.k.forget(name, h)
		}
		close(h.lost)
	})
}

func (h *Held) renew() {
	defer close(h.done)
	every := h.k.ttl / 3
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		sent := time.Now()
		l, err := h.k.leases.RenewLease(ctx, h.Lease(), h.k.ttl)
		cancel()
		switch {
		case err == nil:
			h.mu.Lock()
			h.lease, h.deadline = l, sent.Add(h.k.ttl)
			h.mu.Unlock()
			t.Reset(every)
		case errors.Is(err, store.ErrLeaseLost):
			h.markLost(err)
			return
		default:
			// The store is unreachable: the lease may still be ours, so
			// keep trying, faster, until it may have expired.
			h.mu.Lock()
			past := !time.Now().Before(h.deadline)
			h.mu.Unlock()
			if past {
				h.markLost(err)
				return
			}
			t.Reset(every / 4)
		}
	}
}

// Release stops renewing the lease and gives it back (unless it was lost
// or passed to another holder). It is safe to call more than once.
func (h *Held) Release(ctx context.Context) error {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
	select {
	case <-h.lost:
		return nil
	default:
	}
	_, err := h.k.leases.ReleaseLease(ctx, h.Lease())
	h.markLost(nil) // whatever ran under it must not think it still holds it
	h.k.forget(h.Lease().Name, h)
	return err
}

// Abandon stops renewing without giving the lease back, as a node that
// dies would: it expires after the TTL. For tests of takeover.
func (h *Held) Abandon() {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
	h.k.forget(h.Lease().Name, h)
}
