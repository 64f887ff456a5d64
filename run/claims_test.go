package run_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/internal/lease/leasetest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/store/postgres"
	"github.com/weft-run/weft/store/postgres/pgtest"
	"github.com/weft-run/weft/tool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// pgNode is a run service of one node on a shared PostgreSQL database,
// with a hold tool that waits until released.
type pgNode struct {
	id      string
	db      *postgres.DB
	runs    *run.Service
	leases  *leasetest.Mortal
	release chan struct{}
}

const claimTTL = 600 * time.Millisecond

func newPGNode(t *testing.T, dsn, id string) *pgNode {
	t.Helper()
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	n := &pgNode{id: id, db: db, leases: &leasetest.Mortal{Leases: db}, release: make(chan struct{})}
	hold := tool.Func("hold", "waits until released", tool.Meta{ReadOnly: true},
		func(ctx context.Context, in textIn, _ *tool.Call) (tool.Result, error) {
			select {
			case <-n.release:
				return tool.Text("released on " + id), nil
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
		})
	reg, err := tool.NewRegistry(hold)
	if err != nil {
		t.Fatal(err)
	}
	n.runs, err = run.New(t.Context(), run.Config{Runs: db, Workflows: db, Audits: db, Tools: reg,
		Policy: func() *policy.Policy { return &policy.Policy{} }, PermissionTimeout: 2 * time.Second,
		Leases: lease.NewKeeper(n.leases, id, claimTTL, nil), Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.runs.Shutdown(ctx)
	})
	return n
}

func countEvents(t *testing.T, db *postgres.DB, runID, typ string) int {
	t.Helper()
	evs, err := db.RunEvents().ReadEvents(t.Context(), runID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func waitStatus(t *testing.T, m *run.Service, id, want string, within time.Duration) record.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, err := m.GetRun(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == want {
			return r.Run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s after %v, want %s", id, r.Status, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunsClaimedAcrossNodes: a run executes under its lease on the node
// that started it; nodes starting or sweeping meanwhile leave it alone
// and cannot resume it. When that node dies (its lease expires), exactly
// one of the other nodes marks it interrupted, within the TTL and a
// sweep, and it resumes on another node to its end.
func TestRunsClaimedAcrossNodes(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	a := newPGNode(t, dsn, "node-a")
	created, err := a.runs.CreateRun(t.Context(), run.RunRequest{Goal: "hold", Config: run.RunConfig{AutoApprove: true},
		Workflow: mustPlan(t, `{"steps":[{"id":"h","tool":"hold","args":{"text":"x"}}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	readRun(t, a.runs, created.ID, 0, "step_start")

	// Nodes starting (start-up recovery) and sweeping while a runs it.
	b := newPGNode(t, dsn, "node-b")
	c := newPGNode(t, dsn, "node-c")
	time.Sleep(3 * claimTTL)
	if r, _ := b.runs.GetRun(t.Context(), created.ID); r.Status != run.RunRunning {
		t.Fatalf("a live run was taken from its node: %s", r.Status)
	}
	var conflict *run.ConflictError
	if _, err := b.runs.ResumeRun(t.Context(), created.ID); !errors.As(err, &conflict) {
		t.Fatalf("resuming a run live on another node: %v", err)
	}

	// a dies: renewals fail, nothing is handed back.
	a.leases.Kill()
	killed := time.Now()
	// The lease expires within the TTL; a sweep finds it so, and the next,
	// half a TTL later, takes the run over.
	got := waitStatus(t, b.runs, created.ID, run.RunInterrupted, 5*claimTTL)
	if took := time.Since(killed); took > 2*claimTTL+claimTTL/2+300*time.Millisecond {
		t.Errorf("taken over after %v", took)
	}
	time.Sleep(2 * claimTTL) // every node swept again meanwhile
	if n := countEvents(t, b.db, created.ID, event.RunInterrupted); n != 1 {
		t.Errorf("%d interrupted events, want 1 (one node marks it)", n)
	}

	// Resumed on c, it completes there; a, which lost the lease, wrote
	// nothing over it.
	close(c.release)
	if _, err := c.runs.ResumeRun(t.Context(), created.ID); err != nil {
		t.Fatal(err)
	}
	readRun(t, c.runs, created.ID, got.LastSeq, "plan_approval_requested")
	if err := c.runs.Approve(t.Context(), created.ID, run.Approval{}); err != nil {
		t.Fatal(err)
	}
	end, err := c.runs.WaitRun(t.Context(), created.ID)
	if err != nil || end.Status != run.RunCompleted {
		t.Fatalf("resumed run: %+v, %v", end, err)
	}
	if res, _ := c.runs.RunResult(t.Context(), created.ID); string(res) != `"released on node-c"` {
		t.Errorf("result %s", res)
	}
	final, err := b.runs.GetRun(t.Context(), created.ID)
	if err != nil || final.Status != run.RunCompleted {
		t.Errorf("after a's attempt ended: %s, %v", final.Status, err)
	}
	if n := countEvents(t, b.db, created.ID, event.RunComplete); n != 1 {
		t.Errorf("%d complete events", n)
	}
}
