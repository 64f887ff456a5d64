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
	return &Keeper{leases: ls, holder: holder, ttl: ttl, log: log}
}

// Holder is the node the keeper holds leases for.
func (k *Keeper) Holder() string { return k.holder }

// TTL is how long a lease outlives its last renewal.
func (k *Keeper) TTL() time.Duration { return k.ttl }

// Leases is the store the keeper takes leases from.
func (k *Keeper) Leases() store.Leases { return k.leases }

// Hold takes the lease name and renews it until Release or until it is
// lost. It fails with a *HeldError when another holder's lease is live.
// Holding a lease the keeper holds already (not released) extends it and
// returns a second Held for it; keep one Held per lease.
func (k *Keeper) Hold(ctx context.Context, name string) (*Held, error) {
	// The lease runs from when the store took it, some time after this:
	// counting from before the call, the holder gives up no later than
	// the store lets another take over.
	sent := time.Now()
	l, ok, err := k.leases.AcquireLease(ctx, name, k.holder, k.ttl)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &HeldError{Lease: l}
	}
	h := &Held{k: k, lease: l, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		deadline: sent.Add(k.ttl)}
	go h.renew()
	return h, nil
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
			h.k.log.Warn("lease lost", "lease", h.lease.Name, "holder", h.k.holder, "error", why)
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
	return err
}

// Abandon stops renewing without giving the lease back, as a node that
// dies would: it expires after the TTL. For tests of takeover.
func (h *Held) Abandon() {
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.done
}
