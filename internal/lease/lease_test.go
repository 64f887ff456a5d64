package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

func TestHoldIsExclusiveAndRenewed(t *testing.T) {
	ctx := context.Background()
	ls := NewLocal()
	a := NewKeeper(ls, "node-a", 90*time.Millisecond, nil)
	b := NewKeeper(ls, "node-b", 90*time.Millisecond, nil)

	ha, err := a.Hold(ctx, "session:s1")
	if err != nil {
		t.Fatal(err)
	}
	// Renewals keep it a's well past one TTL.
	time.Sleep(300 * time.Millisecond)
	var held *HeldError
	if _, err := b.Hold(ctx, "session:s1"); !errors.As(err, &held) || held.Lease.Holder != "node-a" {
		t.Fatalf("b took a's renewed lease: %v", err)
	}
	select {
	case <-ha.Lost():
		t.Fatal("a renewed lease counts as lost")
	default:
	}
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-ha.Lost() // released: whatever ran under it stops
	hb, err := b.Hold(ctx, "session:s1")
	if err != nil {
		t.Fatalf("b cannot take a released lease: %v", err)
	}
	if hb.Lease().Epoch <= ha.Lease().Epoch {
		t.Fatalf("epoch did not grow: %d then %d", ha.Lease().Epoch, hb.Lease().Epoch)
	}
	_ = hb.Release(ctx)
}

func TestAbandonedLeaseExpiresAndIsTakenOver(t *testing.T) {
	ctx := context.Background()
	ls := NewLocal()
	a := NewKeeper(ls, "node-a", 60*time.Millisecond, nil)
	b := NewKeeper(ls, "node-b", 60*time.Millisecond, nil)
	ha, err := a.Hold(ctx, "run:r1")
	if err != nil {
		t.Fatal(err)
	}
	ha.Abandon() // as kill -9 would
	deadline := time.Now().Add(2 * time.Second)
	for {
		hb, err := b.Hold(ctx, "run:r1")
		if err == nil {
			if hb.Lease().Holder != "node-b" {
				t.Fatalf("holder %q", hb.Lease().Holder)
			}
			_ = hb.Release(ctx)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("abandoned lease never expired: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// a's old lease is gone: renewing it says so.
	if _, err := ls.RenewLease(ctx, ha.Lease(), time.Second); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renewing a taken-over lease: %v", err)
	}
}

// flaky is a store.Leases whose renewals fail the way told.
type flaky struct {
	*Local
	renewErr atomic.Value // error
}

func (f *flaky) RenewLease(ctx context.Context, l record.Lease, ttl time.Duration) (record.Lease, error) {
	if err, _ := f.renewErr.Load().(error); err != nil {
		return record.Lease{}, err
	}
	return f.Local.RenewLease(ctx, l, ttl)
}

func TestLostIsSignalled(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"taken by another", store.ErrLeaseLost},
		{"store unreachable past expiry", errors.New("connection refused")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &flaky{Local: NewLocal()}
			k := NewKeeper(f, "node-a", 60*time.Millisecond, nil)
			h, err := k.Hold(context.Background(), "scheduler")
			if err != nil {
				t.Fatal(err)
			}
			f.renewErr.Store(tc.err)
			select {
			case <-h.Lost():
			case <-time.After(2 * time.Second):
				t.Fatal("a lease that could not be renewed is not reported lost")
			}
			_ = h.Release(context.Background())
		})
	}
}

func TestLocalRejectsBadInput(t *testing.T) {
	ls := NewLocal()
	for _, tc := range []struct {
		name, lease, holder string
		ttl                 time.Duration
	}{
		{"no name", "", "a", time.Second},
		{"no holder", "x", "", time.Second},
		{"tiny ttl", "x", "a", time.Microsecond},
	} {
		if _, _, err := ls.AcquireLease(context.Background(), tc.lease, tc.holder, tc.ttl); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// slowRenew is a store.Leases whose renewals take long to answer, then
// fail once fail is set.
type slowRenew struct {
	*Local
	delay time.Duration
	fail  atomic.Bool
}

func (s *slowRenew) RenewLease(ctx context.Context, l record.Lease, ttl time.Duration) (record.Lease, error) {
	time.Sleep(s.delay)
	if s.fail.Load() {
		return record.Lease{}, errors.New("connection refused")
	}
	return s.Local.RenewLease(ctx, l, ttl)
}

// TestLostNoLaterThanTheStoreExpires: the holder counts its lease from
// when it asked for a renewal, not from when the answer came (the store
// extended it somewhere in between), so that it stops no later than the
// store lets another node take the work over.
func TestLostNoLaterThanTheStoreExpires(t *testing.T) {
	const ttl = 300 * time.Millisecond
	s := &slowRenew{Local: NewLocal(), delay: 80 * time.Millisecond}
	h, err := NewKeeper(s, "node-a", ttl, nil).Hold(context.Background(), "run:r1")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(context.Background())
	time.Sleep(ttl/3 + s.delay + 20*time.Millisecond) // one slow renewal answered
	s.fail.Store(true)
	renewed := h.Lease()
	select {
	case <-h.Lost():
		if now := time.Now(); now.After(renewed.ExpiresAt) {
			t.Errorf("lost %v after the store let the lease expire", now.Sub(renewed.ExpiresAt))
		}
	case <-time.After(3 * ttl):
		t.Fatal("never lost")
	}
}

// slowRelease is a store.Leases whose releases wait until let go.
type slowRelease struct {
	*Local
	entered, proceed chan struct{}
}

func (s *slowRelease) ReleaseLease(ctx context.Context, l record.Lease) (bool, error) {
	s.entered <- struct{}{}
	<-s.proceed
	return s.Local.ReleaseLease(ctx, l)
}

// TestOneHeldPerLease: a keeper holding a lease (or still giving it back)
// does not take it a second time. The store would let it (same holder,
// same epoch), and the first Held's release would then drop the lease the
// second one runs under: another node would take over live work.
func TestOneHeldPerLease(t *testing.T) {
	ctx := context.Background()
	ls := &slowRelease{Local: NewLocal(), entered: make(chan struct{}), proceed: make(chan struct{})}
	k := NewKeeper(ls, "node-a", time.Minute, nil)
	h1, err := k.Hold(ctx, "session:s")
	if err != nil {
		t.Fatal(err)
	}
	var held *HeldError
	if _, err := k.Hold(ctx, "session:s"); !errors.As(err, &held) {
		t.Fatalf("a second Hold of a held lease: %v", err)
	}
	released := make(chan error)
	go func() { released <- h1.Release(ctx) }()
	<-ls.entered // the release is on its way to the store
	if _, err := k.Hold(ctx, "session:s"); !errors.As(err, &held) {
		t.Fatalf("Hold while the release is on its way: %v", err)
	}
	close(ls.proceed)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	go func() {
		for range ls.entered {
		}
	}()
	h2, err := k.Hold(ctx, "session:s")
	if err != nil {
		t.Fatalf("Hold after the release: %v", err)
	}
	if got, _ := ls.ListLeases(ctx); len(got) != 1 || got[0].Holder != "node-a" {
		t.Fatalf("live leases after the second Hold: %+v", got)
	}
	_ = h2.Release(ctx)
}
