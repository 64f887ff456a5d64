package postgres

import (
	"testing"
	"time"

	"github.com/weft-run/weft/store"
)

// TestNodeRegistry: heartbeats from several nodes on one database make
// them alive; a node that stops heartbeating ages out; one that leaves is
// gone at once; a restart resets its start time.
func TestNodeRegistry(t *testing.T) {
	t.Parallel()
	dbs := openNodes(t, 2)
	ctx := t.Context()
	a, err := dbs[0].Heartbeat(ctx, store.Node{ID: "node-a", Addr: "10.0.0.1:8080", Version: "v1"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].Heartbeat(ctx, store.Node{ID: "node-b", Addr: "10.0.0.2:8080", Version: "v1"}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].Heartbeat(ctx, store.Node{ID: ""}, true); err == nil {
		t.Error("a heartbeat without an id was accepted")
	}
	time.Sleep(5 * time.Millisecond)
	a2, err := dbs[0].Heartbeat(ctx, store.Node{ID: "node-a", Addr: "10.0.0.1:8080", Version: "v2"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !a2.StartedAt.Equal(a.StartedAt) || !a2.HeartbeatAt.After(a.HeartbeatAt) || a2.Version != "v2" {
		t.Errorf("second heartbeat: %+v after %+v; want the start kept, the heartbeat later, the version updated", a2, a)
	}

	ids := func(alive time.Duration) []string {
		t.Helper()
		ns, err := dbs[1].ListNodes(ctx, alive)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, n := range ns {
			out = append(out, n.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		alive time.Duration
		want  int
	}{
		{"both alive within a minute", time.Minute, 2},
		{"none within a microsecond", time.Microsecond, 0},
	} {
		if got := ids(tc.alive); len(got) != tc.want {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
	// b stops heartbeating: it ages out while a keeps beating.
	time.Sleep(150 * time.Millisecond)
	if _, err := dbs[0].Heartbeat(ctx, store.Node{ID: "node-a"}, false); err != nil {
		t.Fatal(err)
	}
	if got := ids(100 * time.Millisecond); len(got) != 1 || got[0] != "node-a" {
		t.Errorf("after b went quiet: %v, want [node-a]", got)
	}
	if err := dbs[0].LeaveNode(ctx, "node-a"); err != nil {
		t.Fatal(err)
	}
	if got := ids(time.Minute); len(got) != 1 || got[0] != "node-b" {
		t.Errorf("after a left: %v, want [node-b]", got)
	}
	a3, err := dbs[0].Heartbeat(ctx, store.Node{ID: "node-b"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !a3.StartedAt.After(a.StartedAt) {
		t.Errorf("a restart kept the old start time %v", a3.StartedAt)
	}
}
