package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

var update = flag.Bool("update", false, "re-record examples/cassettes/hello.jsonl against the Anthropic fake")

// run executes the CLI in-process with the given environment.
func run(t *testing.T, env map[string]string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	e := environ{
		getenv: func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			return turnEndOffEnv(k)
		},
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errb,
	}
	cmd := newRootCmd(e)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestAsk(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	env := map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1"}

	tests := []struct {
		name     string
		script   llmtest.Script
		args     []string
		stdin    string
		stdout   string
		stderr   []string
		errText  string
		wantCode int
	}{
		{
			name:   "streams the answer and reports usage",
			script: llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("Hello", ", world")}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 3}},
			args:   []string{"ask", "--model", "openai:gpt-4.1", "Say", "hello"},
			stdout: "Hello, world\n",
			stderr: []string{"[openai:gpt-4.1] 10 in", "3 out tokens", "end_turn"},
		},
		{
			name:   "prompt from stdin",
			script: llmtest.Text("ok"),
			args:   []string{"ask", "--model", "openai:gpt-4.1", "-"},
			stdin:  "from stdin\n",
			stdout: "ok\n",
		},
		{
			name:     "provider error exits non-zero with a hint",
			script:   llmtest.Script{Status: 401, ErrorMessage: "Incorrect API key provided"},
			args:     []string{"ask", "--model", "openai:gpt-4.1", "hi"},
			errText:  "hint: the API key was rejected",
			wantCode: 1,
		},
		{
			name:    "bad thinking level",
			args:    []string{"ask", "--model", "openai:gpt-4.1", "--thinking", "max", "hi"},
			errText: `--thinking "max"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Subtests share the fake's script queue, so they run in order.
			if tt.script.Status != 0 || len(tt.script.Blocks) > 0 {
				fake.Push(tt.script)
			}
			stdout, stderr, err := run(t, env, tt.stdin, tt.args...)
			if tt.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.errText)
				}
				if tt.wantCode != 0 && exitCode(err) != tt.wantCode {
					t.Fatalf("exit code = %d, want %d", exitCode(err), tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v\nstderr: %s", err, stderr)
			}
			if stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", stdout, tt.stdout)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
		})
	}
	if got := fake.Requests()[1].JSON()["messages"]; !strings.Contains(llmtest.MustJSON(got), "from stdin") {
		t.Errorf("stdin prompt not sent: %v", got)
	}
}

func TestAskNeedsAModel(t *testing.T) {
	t.Parallel()
	_, _, err := run(t, map[string]string{}, "", "ask", "hi")
	if err == nil || !strings.Contains(err.Error(), "--model") {
		t.Fatalf("err = %v", err)
	}
	_, _, err = run(t, map[string]string{}, "", "ask", "--model", "anthropic:claude-sonnet-4-5", "hi")
	if err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("missing key: err = %v", err)
	}
}

func TestAskCassetteRecordThenReplay(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	fake := llmtest.NewAnthropic(t)
	fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("recorded ", "answer")}})
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-secret-value", "ANTHROPIC_BASE_URL": fake.URL}
	args := []string{"ask", "--model", "anthropic:claude-sonnet-4-5", "--cassette", path, "What now?"}
	out, _, err := run(t, env, "", args...)
	if err != nil || out != "recorded answer\n" {
		t.Fatalf("record: out=%q err=%v", out, err)
	}
	b, _ := os.ReadFile(path)
	if bytes.Contains(b, []byte("sk-ant-secret-value")) {
		t.Fatal("the cassette holds the API key")
	}
	fake.Close()
	// No key, no server: the replay serves the recording.
	out, _, err = run(t, map[string]string{}, "", args...)
	if err != nil || out != "recorded answer\n" {
		t.Fatalf("replay: out=%q err=%v", out, err)
	}
	// A different prompt no longer matches the recording.
	args[len(args)-1] = "Something else?"
	_, _, err = run(t, map[string]string{}, "", args...)
	if err == nil || !strings.Contains(err.Error(), "does not match the recording") {
		t.Fatalf("mismatch: err = %v", err)
	}
}

// TestDemoCassette keeps the README's first command working: it replays the
// shipped cassette. With -update it re-records it against the Anthropic fake
// (the cassette is a recording of weft's protocol fake, not of the real API).
func TestDemoCassette(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "cassettes", "hello.jsonl")
	args := []string{"ask", "--model", "anthropic:claude-sonnet-4-5", "--cassette", path, "Say hello to weft"}
	if *update {
		fake := llmtest.NewAnthropic(t)
		fake.Push(llmtest.Script{
			Blocks: []llmtest.Block{llmtest.TextBlock("Hello, weft! ", "This answer was ", "replayed from a cassette: ", "no key, no network.")},
			Usage:  llm.Usage{InputTokens: 14, OutputTokens: 17},
		})
		_ = os.Remove(path)
		if _, _, err := run(t, map[string]string{"ANTHROPIC_API_KEY": "sk-demo", "ANTHROPIC_BASE_URL": fake.URL}, "", append(args, "--cassette-mode", "record")...); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := run(t, map[string]string{}, "", append(args, "--cassette-mode", "replay")...)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "replayed from a cassette") || !strings.Contains(stderr, "14 in") {
		t.Fatalf("out=%q stderr=%q", out, stderr)
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	out, _, err := run(t, nil, "", "models", "--provider", "anthropic")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "anthropic:claude-sonnet-4-5") || strings.Contains(out, "openai:") {
		t.Fatalf("models output:\n%s", out)
	}
	out, _, err = run(t, nil, "", "models", "--json")
	if err != nil || !strings.Contains(out, `"context_window"`) {
		t.Fatalf("models --json: %v\n%s", err, out)
	}
}
