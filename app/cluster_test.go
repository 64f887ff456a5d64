package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/app"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/run"
	"github.com/weft-run/weft/server"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type healthBody struct {
	Status string `json:"status"`
	Node   string `json:"node"`
	Store  struct {
		Kind string `json:"kind"`
		OK   bool   `json:"ok"`
	} `json:"store"`
}

func getJSON(t *testing.T, h http.Handler, path string, out any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost"+path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, rec.Body)
	}
}

func leaseNames(ls []record.Lease) string {
	var names []string
	for _, l := range ls {
		names = append(names, l.Name)
	}
	return strings.Join(names, " ")
}

func newNode(t *testing.T, db, id string, ttl time.Duration) *app.App {
	t.Helper()
	a, err := app.New(t.Context(), app.Config{DB: db, Models: models{llmtest.NewScripted("scripted")},
		Workspace: t.TempDir(), NodeID: id, LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return a
}

// TestNodeOnSQLite: one node alone with its SQLite file reports itself
// in GET /v1/health and GET /v1/nodes, with the leases it holds.
func TestNodeOnSQLite(t *testing.T) {
	a := newNode(t, filepath.Join(t.TempDir(), "weft.db"), "solo", 0)
	var h healthBody
	getJSON(t, a.Handler(), "/v1/health", &h)
	if h.Status != "ok" || h.Node != "solo" || h.Store.Kind != "sqlite" || !h.Store.OK {
		t.Errorf("health: %+v", h)
	}
	held, err := a.Leases.Hold(t.Context(), "run:r1")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	// Its own claim, and the scheduler's: alone, it runs the schedules
	// (the scheduler takes its lease as it starts, in the background).
	deadline := time.Now().Add(10 * time.Second)
	for {
		var nodes server.NodesResponse
		getJSON(t, a.Handler(), "/v1/nodes", &nodes)
		if nodes.Self != "solo" || nodes.Store != "sqlite" || len(nodes.Nodes) != 1 || !nodes.Nodes[0].Self {
			t.Fatalf("nodes: %+v", nodes)
		}
		got := leaseNames(nodes.Nodes[0].Leases)
		if got == "run:r1 scheduler" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("leases: %s", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNodesOnPostgres: nodes sharing a database see each other in
// GET /v1/nodes with the leases each holds; a node that shuts down
// leaves the list at once and hands its leases back, so another node
// takes its work without waiting for the TTL.
func TestNodesOnPostgres(t *testing.T) {
	srv := pgtest.Shared(t)
	dsn := srv.NewDatabase(t)
	const ttl = 30 * time.Second // far beyond the test: only a hand-back frees a lease in time
	a := newNode(t, dsn, "node-a", ttl)
	b := newNode(t, dsn, "node-b", ttl)

	var h healthBody
	getJSON(t, b.Handler(), "/v1/health", &h)
	if h.Node != "node-b" || h.Store.Kind != "postgres" || !h.Store.OK {
		t.Errorf("health: %+v", h)
	}
	if _, err := a.Leases.Hold(t.Context(), "run:r1"); err != nil {
		t.Fatal(err)
	}
	var nodes server.NodesResponse
	getJSON(t, b.Handler(), "/v1/nodes", &nodes)
	byID := map[string]server.NodeInfo{}
	for _, n := range nodes.Nodes {
		byID[n.ID] = n
	}
	if len(byID) != 2 || !byID["node-b"].Self || byID["node-a"].Self {
		t.Fatalf("nodes: %+v", nodes)
	}
	// a started first, so it runs the schedules; b retries every half TTL.
	if got := leaseNames(byID["node-a"].Leases); got != "run:r1 scheduler" {
		t.Errorf("node-a's leases: %s", got)
	}
	if got := leaseNames(byID["node-b"].Leases); got != "" {
		t.Errorf("node-b's leases: %s", got)
	}
	var held *lease.HeldError
	if _, err := b.Leases.Hold(t.Context(), "run:r1"); !errors.As(err, &held) {
		t.Fatalf("b took a's live lease: %v", err)
	}

	if err := a.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	getJSON(t, b.Handler(), "/v1/nodes", &nodes)
	if len(nodes.Nodes) != 1 || nodes.Nodes[0].ID != "node-b" {
		t.Errorf("after a's shutdown: %+v", nodes.Nodes)
	}
	hb, err := b.Leases.Hold(t.Context(), "run:r1")
	if err != nil {
		t.Fatalf("a's lease was not handed back at shutdown: %v", err)
	}
	_ = hb.Release(t.Context())
}

// TestShutdownHandsRunsOver: a node shutting down ends its live runs
// interrupted and hands their leases back, so another node on the same
// database resumes one at once, without waiting for the TTL.
func TestShutdownHandsRunsOver(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	const ttl = 30 * time.Second // far beyond the test: only a hand-back frees a lease in time
	a := newNode(t, dsn, "node-a", ttl)
	b := newNode(t, dsn, "node-b", ttl)
	var p run.Plan
	if err := json.Unmarshal([]byte(`{"steps":[{"id":"s","tool":"Bash","args":{"command":"sleep 30"}}]}`), &p); err != nil {
		t.Fatal(err)
	}
	// Bash asks for permission first: the run stays live, waiting.
	r, err := a.Runs.CreateRun(t.Context(), run.RunRequest{Goal: "wait", Config: run.RunConfig{AutoApprove: true}, Workflow: &p})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := b.Runs.GetRun(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status == run.RunRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run never started: %s", d.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var conflict *run.ConflictError
	if _, err := b.Runs.ResumeRun(t.Context(), r.ID); !errors.As(err, &conflict) {
		t.Fatalf("b resumed a run live on a: %v", err)
	}
	if err := a.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d, _ := b.Runs.GetRun(t.Context(), r.ID); d.Status != run.RunInterrupted {
		t.Fatalf("after a's shutdown the run is %s", d.Status)
	}
	if _, err := b.Runs.ResumeRun(t.Context(), r.ID); err != nil {
		t.Fatalf("b cannot resume the run a handed back: %v", err)
	}
	_ = b.Runs.CancelRun(r.ID)
}
