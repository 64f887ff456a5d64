package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// weftBinary builds cmd/weft once per test run: the CLI tests run the real
// binary, as a person or a script would.
func weftBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "weft-cli-test")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "weft")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = errors.New(string(out))
		}
	})
	if binErr != nil {
		t.Fatalf("go build: %v", binErr)
	}
	return binPath
}

type cliResult struct {
	stdout, stderr string
	code           int
}

func runBinary(t *testing.T, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(weftBinary(t), args...)
	cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, turnEndOff...), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{out.String(), errb.String(), code}
}

func TestRunBinary(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("TODO: ship it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bashCall := llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("Let me look."), llmtest.ToolBlock("call_1", "Bash", `{"command":"cat notes.txt"}`)}}
	answer := llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("One TODO: ship it.")}, Usage: llm.Usage{InputTokens: 50, OutputTokens: 6}}

	tests := []struct {
		name    string
		scripts []llmtest.Script
		args    []string
		code    int
		stdout  []string
		stderr  []string
		check   func(t *testing.T, r cliResult, fake *llmtest.Server)
	}{
		{
			name:    "text transcript with an approved tool call",
			scripts: []llmtest.Script{bashCall, answer},
			args:    []string{"run", "--yes", "find the TODOs"},
			stdout:  []string{"Let me look.", "● Bash(cat notes.txt)", "⎿ TODO: ship it", "One TODO: ship it."},
			stderr:  []string{"[end_turn] 2 turns"},
		},
		{
			name:    "no terminal and no --yes: the call is denied, never approved silently",
			scripts: []llmtest.Script{bashCall, answer},
			args:    []string{"run", "find the TODOs"},
			stdout:  []string{"⎿ error: Permission denied: there is no terminal to ask for approval"},
			check: func(t *testing.T, r cliResult, fake *llmtest.Server) {
				if strings.Contains(r.stdout, "⎿ TODO") {
					t.Error("the command ran without approval")
				}
			},
		},
		{
			name:    "stream-json: one JSON event per line",
			scripts: []llmtest.Script{bashCall, answer},
			args:    []string{"run", "--yes", "--format", "stream-json", "go"},
			check: func(t *testing.T, r cliResult, fake *llmtest.Server) {
				var types []string
				sc := bufio.NewScanner(strings.NewReader(r.stdout))
				for sc.Scan() {
					var ev map[string]any
					if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
						t.Fatalf("line %q: %v", sc.Text(), err)
					}
					types = append(types, ev["type"].(string))
					if ev["type"] == "tool_result" && ev["output"] != "TODO: ship it" {
						t.Errorf("tool_result = %v", ev)
					}
				}
				got := strings.Join(types, " ")
				for _, want := range []string{"turn_start", "text_delta", "tool_use", "tool_result", "turn_end", "done"} {
					if !strings.Contains(got, want) {
						t.Errorf("no %s in %s", want, got)
					}
				}
				if !strings.HasSuffix(got, "done") {
					t.Errorf("stream does not end with done: %s", got)
				}
			},
		},
		{
			name:    "json: one object at the end",
			scripts: []llmtest.Script{answer},
			args:    []string{"run", "--format", "json", "hi"},
			check: func(t *testing.T, r cliResult, fake *llmtest.Server) {
				var res runResult
				if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
					t.Fatalf("%v: %s", err, r.stdout)
				}
				if res.Result != "One TODO: ship it." || res.StopReason != "end_turn" || res.TurnCount != 1 || res.IsError {
					t.Errorf("json result = %+v", res)
				}
			},
		},
		{
			name:    "provider error: one clear line and a non-zero exit",
			scripts: []llmtest.Script{{Status: 401, ErrorMessage: "Incorrect API key provided"}},
			args:    []string{"run", "hi"},
			code:    1,
			stderr:  []string{"error: openai: auth (HTTP 401)", "hint: the API key was rejected"},
		},
		{
			name:    "a retry is printed once, by its cause",
			scripts: []llmtest.Script{{Status: 529}, answer},
			args:    []string{"run", "hi"},
			stdout:  []string{"One TODO: ship it."},
			check: func(t *testing.T, r cliResult, fake *llmtest.Server) {
				var lines []string
				for _, l := range strings.Split(r.stderr, "\n") {
					if strings.Contains(strings.ToLower(l), "retry") {
						lines = append(lines, l)
					}
				}
				if len(lines) != 1 || !strings.Contains(lines[0], "(overloaded)") || !strings.Contains(lines[0], "attempt 2 of 5") {
					t.Errorf("want one retry line naming the cause, got %q", lines)
				}
			},
		},
		{
			name:    "a bad request is not retried",
			scripts: []llmtest.Script{{Status: 400, ErrorMessage: "Invalid value for 'temperature'"}, answer},
			args:    []string{"run", "hi"},
			code:    1,
			stderr:  []string{"error: openai: bad_request (HTTP 400)"},
			check: func(t *testing.T, r cliResult, fake *llmtest.Server) {
				if n := len(fake.Requests()); n != 1 || strings.Contains(strings.ToLower(r.stderr), "retry") {
					t.Errorf("%d requests; stderr %q", n, r.stderr)
				}
			},
		},
		{
			name: "unknown provider",
			args: []string{"run", "--model", "nope:model", "hi"},
			code: 1,
			check: func(t *testing.T, r cliResult, fake *llmtest.Server) {
				if !strings.Contains(r.stderr, "nope") || strings.Contains(r.stderr, "goroutine") {
					t.Errorf("stderr = %q", r.stderr)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewOpenAI(t)
			fake.Push(tt.scripts...)
			env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + ws}
			r := runBinary(t, env, "", append(tt.args, "--model", "openai:gpt-4.1")[0:len(tt.args)+func() int {
				for _, a := range tt.args {
					if a == "--model" {
						return 0
					}
				}
				return 2
			}()]...)
			if r.code != tt.code {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			if tt.check != nil {
				tt.check(t, r, fake)
			}
		})
	}
}

func TestChatBinary(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("Hi there.")}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 3}},
		llmtest.Text("You said hello before."),
	)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + t.TempDir()}
	r := runBinary(t, env, "hello\n/cost\nwhat did I say?\n/bogus\n/exit\nnever sent\n", "chat", "--model", "openai:gpt-4.1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, s := range []string{"Hi there.", "1 turns, 10 in / 3 out tokens", "You said hello before."} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "unknown command /bogus") {
		t.Errorf("stderr = %s", r.stderr)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d, want 2 (nothing after /exit)", len(reqs))
	}
	// The second request carries the whole conversation.
	if msgs := reqs[1].JSON()["messages"].([]any); len(msgs) != 4 {
		t.Errorf("second request has %d messages, want system+user+assistant+user", len(msgs))
	}
}

func TestToolsBinary(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "", "tools", "--json")
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Count int `json:"count"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	names := map[string]bool{}
	for _, tl := range out.Tools {
		names[tl.Name] = len(tl.InputSchema) > 2
	}
	for _, want := range []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep", "WebFetch", "TodoWrite", "AskUserQuestion"} {
		if !names[want] {
			t.Errorf("tool %s missing or without a schema", want)
		}
	}
	if out.Count != len(out.Tools) {
		t.Errorf("count = %d", out.Count)
	}
	r = runBinary(t, nil, "", "tools")
	if !strings.Contains(r.stdout, "Bash") || !strings.Contains(r.stdout, "execute") {
		t.Errorf("tools table:\n%s", r.stdout)
	}
}
