package postgres

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLeasesAcrossNodes: of nodes racing for a lease exactly one gets it;
// others cannot take it while it is renewed; once its holder stops
// renewing it expires and another node takes it at a new epoch; the old
// holder can then neither renew nor release it.
func TestLeasesAcrossNodes(t *testing.T) {
	t.Parallel()
	nodes := openNodes(t, 2)
	ctx := t.Context()

	var (
		wg     sync.WaitGroup
		winner atomic.Int32
		won    = make(chan Lease, 16)
	)
	start := make(chan struct{})
	for i := range 16 {
		wg.Go(func() {
			<-start
			// Long enough that no acquirer, however late the machine runs
			// it, finds the winner's lease expired.
			l, ok, err := nodes[i%2].AcquireLease(ctx, "turn:s", fmt.Sprint("node-", i), time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				winner.Add(1)
				won <- l
			}
		})
	}
	close(start)
	wg.Wait()
	if n := winner.Load(); n != 1 {
		t.Fatalf("%d nodes got the lease, want 1", n)
	}
	held := <-won
	if held.Epoch != 1 {
		t.Errorf("first lease at epoch %d", held.Epoch)
	}
	other := "node-x"
	if l, ok, err := nodes[1].AcquireLease(ctx, "turn:s", other, time.Minute); err != nil || ok || l.Holder != held.Holder {
		t.Fatalf("second acquire: %+v %v %v, want refused naming %s", l, ok, err, held.Holder)
	}
	// Renewed by its holder, through any node.
	held, err := nodes[1].RenewLease(ctx, held, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// Acquiring again as the holder extends it at the same epoch.
	if l, ok, err := nodes[0].AcquireLease(ctx, "turn:s", held.Holder, 300*time.Millisecond); err != nil || !ok || l.Epoch != held.Epoch {
		t.Fatalf("re-acquire by the holder: %+v %v %v", l, ok, err)
	}
	ls, err := nodes[0].ListLeases(ctx)
	if err != nil || len(ls) != 1 || ls[0].Holder != held.Holder {
		t.Fatalf("ListLeases: %+v %v", ls, err)
	}
	// The holder stops renewing (it died): the lease expires, another
	// node takes it at a new epoch.
	time.Sleep(500 * time.Millisecond)
	taken, ok, err := nodes[1].AcquireLease(ctx, "turn:s", other, time.Second)
	if err != nil || !ok || taken.Epoch != held.Epoch+1 || taken.Holder != other {
		t.Fatalf("takeover: %+v %v %v", taken, ok, err)
	}
	if _, err := nodes[0].RenewLease(ctx, held, time.Second); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("the old holder renewed: %v", err)
	}
	if released, err := nodes[0].ReleaseLease(ctx, held); err != nil || released {
		t.Errorf("the old holder released the new holder's lease: %v %v", released, err)
	}
	if released, err := nodes[1].ReleaseLease(ctx, taken); err != nil || !released {
		t.Errorf("release: %v %v", released, err)
	}
	if ls, err := nodes[0].ListLeases(ctx); err != nil || len(ls) != 0 {
		t.Errorf("after release: %+v %v", ls, err)
	}
	if _, _, err := nodes[0].AcquireLease(ctx, "x", "h", 0); err == nil {
		t.Error("a zero ttl was accepted")
	}
}
