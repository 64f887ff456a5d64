package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	_ "modernc.org/sqlite" // the dump reads the database with the driver store/sqlite uses

	"github.com/weft-run/weft/internal/sse"
	"github.com/weft-run/weft/llm/llmtest"
)

// Values of the end-to-end secrets test, all 16 bytes and unlike anything
// else in the output.
const (
	e2eSecret = "zqKp2WmXv4Rt8LnB" // registered with --secret MY_TOKEN
	e2eBearer = "bearerHq4Xz9Lm2P" // WEFT_BEARER_TOKEN
	e2eAPIKey = "sk-flagJd8Vn3Qs6" // --api-key, also exported as SNEAKY
	e2eEnvKey = "sk-envRb5Wc2Ke9M" // OPENAI_API_KEY (unused: the flag wins)
)

// leakIn reports which secret (or 6-byte piece of the registered one)
// text contains.
func leakIn(text string) string {
	for _, v := range []string{e2eBearer, e2eAPIKey, e2eEnvKey} {
		if strings.Contains(text, v) {
			return v
		}
	}
	for i := 0; i+6 <= len(e2eSecret); i++ {
		if w := e2eSecret[i : i+6]; strings.Contains(text, w) {
			return w
		}
	}
	return ""
}

// transcript collects everything a client received.
type transcript struct {
	mu sync.Mutex
	b  strings.Builder
}

func (tr *transcript) add(where, s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	fmt.Fprintf(&tr.b, "== %s\n%s\n", where, s)
}

func (tr *transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.b.String()
}

// TestSecretsNeverPersistedOrSent drives a real weft serve through a
// session and a run that both handle a registered secret: the user's
// prompt holds it, the scripted model streams it split across deltas and
// plan tokens, writes it into tool inputs (Bash, TodoWrite, memory) and
// into a plan, and Bash prints it. Afterwards no table of the SQLite
// database, no byte of its files, no SSE stream, no WebSocket frame, no
// REST answer, no audit line and no log line holds the value (or a piece
// of it), the bearer token or a provider key; and no model request did.
// Bash saw the registered secret under its own name and none of weft's
// credentials.
func TestSecretsNeverPersistedOrSent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(settings, []byte(`{"permissions":{"allow":["TodoWrite","memory_remember"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "weft.db")
	fake := llmtest.NewOpenAI(t)
	bashIn, _ := json.Marshal(map[string]string{"command": "echo got " + e2eSecret + "; echo A=$WEFT_BEARER_TOKEN B=$OPENAI_API_KEY C=$WEFT_API_KEY D=$SNEAKY E=$MY_TOKEN"})
	fake.Push(
		// The session's turn: text that splits the value across deltas,
		// then three tool calls carrying it.
		llmtest.Script{Blocks: []llmtest.Block{
			llmtest.TextBlock("Using zqKp2", "WmXv4Rt", "8LnB now."),
			llmtest.ToolBlock("call_bash", "Bash", string(bashIn)),
			llmtest.ToolBlock("call_todo", "TodoWrite", `{"todos":[{"content":"rotate `+e2eSecret+`","status":"pending"}]}`),
			llmtest.ToolBlock("call_mem", "memory_remember", `{"text":"the deploy token is `+e2eSecret+`"}`),
		}},
		llmtest.Text("All done with ", e2eSecret, "."),
		// The run's planner: the plan streams with the value split across
		// tokens.
		llmtest.Text(`{"steps":[{"id":"show","tool":"Bash","args":{"command":"echo step zqKp2Wm`, `Xv4Rt8LnB"}}]}`),
	)
	env := []string{"MY_TOKEN=" + e2eSecret, "WEFT_BEARER_TOKEN=" + e2eBearer, "SNEAKY=" + e2eAPIKey, "OPENAI_API_KEY=" + e2eEnvKey}
	p := startServe(t, env, "--db", db, "--workspace", ws, "--model", "openai:gpt-4.1", "--base-url", fake.URL+"/v1",
		"--api-key", e2eAPIKey, "--secret", "MY_TOKEN", "--settings", settings, "--memory", "--log-level", "debug",
		"--audit-log", filepath.Join(dir, "audit.jsonl"))
	auth := []string{"Authorization", "Bearer " + e2eBearer}
	var seen transcript
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A WebSocket client attached from the start; it creates the session.
	wsURL := strings.Replace(p.url, "http://", "ws://", 1) + "/v1/ws?token=" + e2eBearer
	conn, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatalf("websocket: %v\n%s", err, p.log())
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"create","session_id":"s"}`)); err != nil {
		t.Fatal(err)
	}
	wsDone := make(chan struct{})
	go func() {
		defer close(wsDone)
		for {
			_, msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			seen.add("websocket", string(msg))
		}
	}()
	waitFor(t, "the session", func() bool {
		resp := p.request("GET", "/v1/sessions/s", "", auth...)
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	// A live SSE reader of the session's events.
	sessDone := make(chan struct{})
	go func() {
		defer close(sessDone)
		req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/v1/sessions/s/events?after=0", nil)
		req.Header.Set(auth[0], auth[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		rd := sse.NewReader(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				return
			}
			seen.add("session events", string(ev.Name)+" "+string(ev.Data))
		}
	}()

	// The turn, answering its permission request (Bash asks).
	prompt, _ := json.Marshal(map[string]string{"prompt": "deploy with " + e2eSecret})
	resp := p.request("POST", "/v1/sessions/s/messages", string(prompt), auth...)
	turn, err := frames(t, resp, func(f frame) bool {
		if f.event == "permission_request" {
			var req struct{ ID string }
			_ = json.Unmarshal([]byte(f.data), &req)
			p.expect("POST", "/v1/sessions/s/permissions/"+req.ID, `{"allow":true}`, 200, auth...)
		}
		return false
	})
	resp.Body.Close()
	if !errors.Is(err, io.EOF) || len(turn) == 0 || turn[len(turn)-1].event != "done" {
		t.Fatalf("turn: %v %s\n%s", err, eventNames(turn), p.log())
	}
	var bashOut string
	for _, f := range turn {
		seen.add("turn stream", f.event+" "+f.data)
		if f.event == "tool_result" && strings.Contains(f.data, `"Bash"`) {
			var d struct{ Output string }
			_ = json.Unmarshal([]byte(f.data), &d)
			bashOut = d.Output
		}
	}
	if want := "got [SECRET:MY_TOKEN]\nA= B= C= D= E=[SECRET:MY_TOKEN]"; bashOut != want {
		t.Errorf("Bash printed %q, want %q", bashOut, want)
	}

	// The run: planned by the model, its Bash step asks.
	goal, _ := json.Marshal(map[string]any{"goal": "show " + e2eSecret, "config": map[string]any{"autoApprove": true}})
	created := p.expect("POST", "/v1/runs", string(goal), 200, auth...)
	runID, _ := created["runId"].(string)
	resp = p.request("GET", "/v1/runs/"+runID+"/events", "", auth...)
	runFrames, err := frames(t, resp, func(f frame) bool {
		if f.event == "permission_request" {
			var req struct{ ID string }
			_ = json.Unmarshal([]byte(f.data), &req)
			p.expect("POST", "/v1/runs/"+runID+"/permissions/"+req.ID, `{"allow":true}`, 200, auth...)
		}
		return f.event == "complete" || f.event == "error"
	})
	resp.Body.Close()
	if err != nil || runFrames[len(runFrames)-1].event != "complete" {
		t.Fatalf("run: %v %s\n%s", err, eventNames(runFrames), p.log())
	}
	for _, f := range runFrames {
		seen.add("run stream", f.event+" "+f.data)
	}
	for _, path := range []string{"/v1/runs", "/v1/runs/" + runID, "/v1/sessions/s", "/v1/sessions", "/v1/audit", "/v1/tasks"} {
		r := p.request("GET", path, "", auth...)
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		seen.add("GET "+path, string(b))
	}
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the live readers catch up
	cancel()
	<-wsDone
	<-sessDone
	p.stop()

	all := seen.String()
	for _, want := range []string{"websocket", "session events", "[SECRET:MY_TOKEN]", "todos", "plan_token", "step_complete"} {
		if !strings.Contains(all, want) {
			t.Errorf("the transcript lacks %q; the test did not exercise what it checks:\n%s", want, all)
		}
	}
	if w := leakIn(all); w != "" {
		t.Errorf("a client received %q:\n%s", w, all)
	}
	if w := leakIn(p.log()); w != "" {
		t.Errorf("the log shows %q:\n%s", w, p.log())
	}
	for i, r := range fake.Requests() {
		if w := leakIn(string(r.Body)); w != "" {
			t.Errorf("model request %d carried %q: %s", i, w, r.Body)
		}
	}
	if n := len(fake.Requests()); n != 3 {
		t.Errorf("the model got %d requests, want 3", n)
	}
	for _, name := range []string{"audit.jsonl"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w := leakIn(string(b)); w != "" {
			t.Errorf("%s holds %q", name, w)
		}
	}
	dumpChecked(t, db)
}

// dumpChecked reads every row of every table of the database and every
// byte of its files, and fails on any secret.
func dumpChecked(t *testing.T, path string) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	nonEmpty := map[string]bool{}
	for _, table := range tables {
		rs, err := conn.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			nonEmpty[table] = true
			for i, v := range vals {
				var s string
				switch x := v.(type) {
				case string:
					s = x
				case []byte:
					s = string(x)
				default:
					continue
				}
				if w := leakIn(s); w != "" {
					t.Errorf("table %s, column %s holds %q: %.300s", table, cols[i], w, s)
				}
			}
		}
		rs.Close()
	}
	for _, table := range []string{"sessions", "messages", "events", "runs", "run_steps", "run_events", "memories", "audit"} {
		if !nonEmpty[table] {
			t.Errorf("table %s is empty: the test did not exercise it", table)
		}
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		f, err := os.Open(path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(bufio.NewReader(f))
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if w := leakIn(string(b)); w != "" {
			t.Errorf("the file %s holds %q", filepath.Base(path+suffix), w)
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
