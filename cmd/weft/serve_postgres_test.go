//go:build !nopostgres

package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/store/postgres/pgtest"
)

func TestOpenStoreChoice(t *testing.T) {
	for _, tc := range []struct {
		dsn     string
		pg      bool
		display string
	}{
		{"./weft.db", false, "./weft.db"},
		{"/var/lib/weft/postgres.db", false, "/var/lib/weft/postgres.db"},
		{"postgres://weft:s3cret@db:5432/weft?sslmode=disable", true, "postgres://weft:xxxxx@db:5432/weft?sslmode=disable"},
		{"postgresql://weft@db/weft", true, "postgresql://weft@db/weft"},
		{"POSTGRES://db/weft?password=s3cret", true, "postgres://db/weft?password=xxxxx"},
	} {
		if got := isPostgresDSN(tc.dsn); got != tc.pg {
			t.Errorf("isPostgresDSN(%q) = %v, want %v", tc.dsn, got, tc.pg)
		}
		if got := storeDisplay(tc.dsn); got != tc.display {
			t.Errorf("storeDisplay(%q) = %q, want %q", tc.dsn, got, tc.display)
		}
	}
}

// TestServePostgres: weft serve on a PostgreSQL database, by --db and by
// WEFT_DB: a turn through one node, its history read back through a
// second node on the same database (no one-writer refusal as on a SQLite
// file), and the URL's password never printed.
func TestServePostgres(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	srv, err := pgtest.Start(pgtest.Options{NoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dsn := srv.NewDatabase(t)
	// Trust authentication accepts any password: this one is only there
	// to be kept out of the log.
	dsn = strings.Replace(dsn, "weft@", "weft:hunter2@", 1)
	dir := t.TempDir()
	fake := llmtest.NewOpenAI(t)
	model := []string{"--model", "openai:gpt-4.1", "--base-url", fake.URL + "/v1", "--permission-mode", "bypass", "--workspace", dir}

	a := startServe(t, []string{"WEFT_API_KEY=k"}, append([]string{"--db", dsn}, model...)...)
	b := startServe(t, []string{"WEFT_API_KEY=k", "WEFT_DB=" + dsn}, model...)
	if m := b.expect("GET", "/v1/health", "", 200); m["status"] != "ok" {
		t.Fatalf("health %v", m)
	}
	a.expect("POST", "/v1/sessions", `{"session_id":"s"}`, 201)
	fake.Push(llmtest.Text("Hello from PostgreSQL."))
	resp := a.request("POST", "/v1/sessions/s/messages", `{"prompt":"hi"}`)
	turn, err := frames(t, resp, nil)
	resp.Body.Close()
	if !errors.Is(err, io.EOF) || len(turn) == 0 || turn[len(turn)-1].event != "done" {
		t.Fatalf("turn: %v %q\n%s", err, eventNames(turn), a.log())
	}
	if m := b.expect("GET", "/v1/sessions/s", "", 200); m["last_seq"] != float64(len(turn)) {
		t.Errorf("node b sees last_seq %v, want %d", m["last_seq"], len(turn))
	}
	resp = b.request("GET", "/v1/sessions/s/events?after=0", "")
	replay, err := frames(t, resp, func(f frame) bool { return f.event == "done" })
	resp.Body.Close()
	if err != nil || len(replay) != len(turn) {
		t.Fatalf("replay on node b: %v, %d frames, want %d", err, len(replay), len(turn))
	}
	for i := range turn {
		if replay[i] != turn[i] {
			t.Fatalf("frame %d on node b %+v, want %+v", i, replay[i], turn[i])
		}
	}
	a.stop()
	b.stop()
	for _, p := range []*serveProc{a, b} {
		if strings.Contains(p.log(), "hunter2") {
			t.Errorf("the database password is in the log:\n%s", p.log())
		}
		if !strings.Contains(p.log(), "database postgres://weft:xxxxx@127.0.0.1") {
			t.Errorf("the listening line does not name the database:\n%s", p.log())
		}
	}
}
