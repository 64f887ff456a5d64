package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestRunStopsAStuckModel is the scenario through weft run --yes:
// a model that reads a missing file over and over. The Read runs 5 times,
// then the guardrail refuses it and the circuit breaker ends the run;
// weft exits 1 and says why. The settings key and --no-guardrails change
// that.
func TestRunStopsAStuckModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings string
		args     []string
		requests int
		stop     string
		wantErr  bool
	}{
		{name: "defaults", requests: 6, stop: "stuck", wantErr: true},
		{name: "settings key", settings: `{"guardrails": {"sameCallFailures": 2, "failedRounds": 1, "stuckRounds": 2}}`, requests: 3, stop: "stuck", wantErr: true},
		{name: "settings turn them off", settings: `{"guardrails": {"enabled": false}}`, args: []string{"--max-turns", "9"}, requests: 9, stop: "max_turns"},
		{name: "flag turns them off", args: []string{"--no-guardrails", "--max-turns", "9"}, requests: 9, stop: "max_turns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			missing := filepath.Join(ws, "config.yaml")
			fake := llmtest.NewOpenAI(t)
			for i := range 40 {
				fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(fmt.Sprint("call_", i), "Read", fmt.Sprintf(`{"file_path":%q}`, missing))}})
			}
			env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1", "WEFT_WORKSPACE": ws}
			args := []string{"run", "--yes", "--format", "json", "--model", "openai:gpt-4.1"}
			if tt.settings != "" {
				path := filepath.Join(t.TempDir(), "settings.json")
				if err := os.WriteFile(path, []byte(tt.settings), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--settings", path)
			}
			args = append(append(args, tt.args...), "read the config")
			stdout, _, err := run(t, env, "", args...)
			var exit *exitError
			if tt.wantErr != (err != nil) || (err != nil && (!errors.As(err, &exit) || exit.code != 1)) {
				t.Fatalf("err = %v", err)
			}
			var res runResult
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			if res.StopReason != tt.stop || res.IsError != tt.wantErr || len(fake.Requests()) != tt.requests {
				t.Fatalf("result = %+v after %d model calls, want %s after %d", res, len(fake.Requests()), tt.stop, tt.requests)
			}
			if tt.wantErr && !strings.Contains(res.Error, "circuit breaker") {
				t.Fatalf("error = %q", res.Error)
			}
		})
	}
}

// TestRunTextShowsTheBreaker: in text mode the circuit breaker's note and
// stop are lines of their own, and the refused call's result says why.
func TestRunTextShowsTheBreaker(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	fake := llmtest.NewOpenAI(t)
	for i := range 10 {
		fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock(fmt.Sprint("call_", i), "Read", `{"file_path":"nope.txt"}`)}})
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1", "WEFT_WORKSPACE": ws}
	stdout, stderr, err := run(t, env, "", "run", "--yes", "--model", "openai:gpt-4.1", "read it")
	if err == nil {
		t.Fatal("a stuck run exited 0")
	}
	for _, want := range []string{"circuit breaker: every tool call failed in 3 rounds in a row", "circuit breaker: stopped", "[stuck]", "error: stopped: every tool call kept failing"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "blocked by a guardrail: Read failed 5 times in a row") {
		t.Errorf("stdout lacks the refusal:\n%s", stdout)
	}
}

// TestChatRateLimit: /ratelimit shows the key pool, masked; a 429 on one
// key moved the run to the other key at once.
func TestChatRateLimit(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Script{Status: 429, RetryAfter: time.Minute}, llmtest.Text("Hello."))
	env := map[string]string{"OPENAI_API_KEY": "sk-aaaaaaaaaaaa1111,sk-bbbbbbbbbbbb2222", "OPENAI_BASE_URL": fake.URL + "/v1", "WEFT_WORKSPACE": t.TempDir()}
	start := time.Now()
	stdout, stderr, err := run(t, env, "hi\n/ratelimit\n/exit\n", "chat", "--model", "openai:gpt-4.1")
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the chat took %v: the retry waited out the Retry-After", d)
	}
	for _, want := range []string{"Hello.", "openai: 2 keys, 1 usable now", "key-1", "sk-a...1111", "cooling", "left", "key-2", "sk-b...2222", "ok", "rate_limit"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "aaaaaaaaaaaa") {
		t.Errorf("a key is shown unmasked:\n%s", stdout)
	}
	// One key: no pool.
	fake.Push(llmtest.Text("Hi."))
	env["OPENAI_API_KEY"] = "sk-single-key-0000"
	stdout, _, err = run(t, env, "/ratelimit\n/exit\n", "chat", "--model", "openai:gpt-4.1")
	if err != nil || !strings.Contains(stdout, "openai: one API key (no pool)") {
		t.Fatalf("single key: %v\n%s", err, stdout)
	}
}

// TestServeMetrics: weft serve --metrics serves the Prometheus registry
// at GET /metrics behind the bearer token (the web UI does not shadow
// it), with the sessions gauge; without the flag there is no such route.
func TestServeMetrics(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, "--db", filepath.Join(t.TempDir(), "w.db"), "--metrics", "--bearer-token", "a-long-enough-test-token-0123456789")
	p.expect("GET", "/metrics", "", 401)
	resp := p.request("GET", "/metrics", "", "Authorization", "Bearer a-long-enough-test-token-0123456789")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "go_goroutines") || !strings.Contains(string(body), "process_") {
		t.Fatalf("GET /metrics: %d\n%s", resp.StatusCode, body)
	}
	// The session service's gauge is wired in (app.Config.Gauges).
	if !strings.Contains(string(body), "weft_sessions_active 0") {
		t.Errorf("GET /metrics lacks weft_sessions_active:\n%s", body)
	}
	p.stop()

	q := startServe(t, nil, "--db", filepath.Join(t.TempDir(), "w.db"))
	resp = q.request("GET", "/metrics", "")
	defer resp.Body.Close()
	body, _ = io.ReadAll(resp.Body)
	if strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("GET /metrics without --metrics served the metrics:\n%s", body)
	}
	q.stop()
}
