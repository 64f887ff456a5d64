package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// tinyModels gives a local model weft does not know its real limits.
const tinyModels = `[
  {"provider": "ollama", "id": "tiny-local", "context_window": 8192, "max_output_tokens": 1234}
]`

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// maxTokensSent is the output limit the last request to an Ollama fake
// asked for.
func maxTokensSent(t *testing.T, fake *llmtest.Server) int {
	t.Helper()
	last := fake.LastRequest()
	v, ok := last.JSON()["max_tokens"].(float64)
	if !ok {
		t.Fatalf("no max_tokens in %s", last.Body)
	}
	return int(v)
}

// TestModelsFileReachesEveryFrontDoor: a models file, from --models,
// $WEFT_MODELS or ~/.weft/models.json, gives a local model its real limits
// in ask, run, chat and serve alike.
func TestModelsFileReachesEveryFrontDoor(t *testing.T) {
	t.Parallel()
	file := writeFile(t, filepath.Join(t.TempDir(), "models.json"), tinyModels)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".weft", "models.json"), tinyModels)
	ws := t.TempDir()

	tests := []struct {
		name  string
		env   map[string]string
		stdin string
		args  []string
		want  int
	}{
		{"ask, no file: an unknown model's default", nil, "", []string{"ask", "--model", "ollama:tiny-local", "hi"}, 4096},
		{"ask --models", nil, "", []string{"ask", "--model", "ollama:tiny-local", "--models", file, "hi"}, 1234},
		{"run with WEFT_MODELS", map[string]string{"WEFT_MODELS": file}, "", []string{"run", "--model", "ollama:tiny-local", "hi"}, 1234},
		{"chat with ~/.weft/models.json", map[string]string{"HOME": home}, "hi\n/exit\n", []string{"chat", "--model", "ollama:tiny-local"}, 1234},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewOpenAI(t)
			fake.Push(llmtest.Text("ok"))
			env := map[string]string{"OLLAMA_HOST": fake.URL, "WEFT_WORKSPACE": ws}
			for k, v := range tt.env {
				env[k] = v
			}
			_, stderr, err := run(t, env, tt.stdin, tt.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if got := maxTokensSent(t, fake); got != tt.want {
				t.Fatalf("max_tokens = %d, want %d", got, tt.want)
			}
		})
	}

	t.Run("serve with WEFT_MODELS", func(t *testing.T) {
		t.Parallel()
		fake := llmtest.NewOpenAI(t)
		fake.Push(llmtest.Text("ok"))
		dir := t.TempDir()
		p := startServe(t, []string{"WEFT_MODELS=" + file, "OLLAMA_HOST=" + fake.URL},
			"--db", filepath.Join(dir, "weft.db"), "--workspace", dir, "--model", "ollama:tiny-local")
		p.expect("POST", "/v1/sessions", `{"session_id":"s"}`, 201)
		resp := p.request("POST", "/v1/sessions/s/messages", `{"prompt":"hi"}`)
		if _, err := frames(t, resp, func(f frame) bool { return f.event == "done" }); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := maxTokensSent(t, fake); got != 1234 {
			t.Fatalf("max_tokens = %d, want 1234", got)
		}
		p.stop()
	})
}

// TestModelsFileErrors: a broken models file stops the command with the
// file, the line and the field, wherever it was named.
func TestModelsFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, filepath.Join(dir, "bad.json"), "[\n  {\"provider\": \"ollama\", \"id\": \"tiny\",\n   \"context_window\": -1}\n]")
	typo := writeFile(t, filepath.Join(dir, "typo.json"), "[{\"provider\": \"olama\", \"id\": \"tiny\"}]")
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".weft", "models.json"), "[{\"provider\": \"ollama\", \"id\": \"tiny\", \"max_ouput_tokens\": 5}]")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"negative window", nil, []string{"run", "--model", "ollama:tiny", "--models", bad, "hi"},
			bad + `:3: entry 0 (ollama/tiny): field "context_window": must be a positive number of tokens, got -1`},
		{"unknown provider", map[string]string{"WEFT_MODELS": typo}, []string{"ask", "--model", "ollama:tiny", "hi"},
			typo + `:1: entry 0 (olama/tiny): field "provider": "olama" is not a provider weft knows`},
		{"typo in the home file", map[string]string{"HOME": home}, []string{"models"},
			filepath.Join(home, ".weft", "models.json") + `:1: entry 0: unknown field "max_ouput_tokens" (did you mean "max_output_tokens"?)`},
		{"missing file", nil, []string{"models", "--models", filepath.Join(dir, "nope.json")}, "nope.json: no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := run(t, tt.env, "", tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestModelsShowsSources: weft models says where each entry came from, and
// its JSON loads back as a models file.
func TestModelsShowsSources(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".weft", "models.json"), `[
  {"provider": "ollama", "id": "tiny-local", "context_window": 8192, "max_output_tokens": 1234},
  {"provider": "ollama", "id": "llama3.3", "context_window": 65536}
]`)
	project := writeFile(t, filepath.Join(t.TempDir(), "project.json"), `[{"provider": "ollama", "id": "qwen3", "display_name": "Qwen3 here"}]`)
	env := map[string]string{"HOME": home}
	out, _, err := run(t, env, "", "models", "--provider", "ollama", "--models", project)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = line
		}
	}
	for model, want := range map[string][]string{
		"ollama:tiny-local": {"8192", "1234", "~/.weft/models.json"},
		"ollama:llama3.3":   {"65536", "builtin > ~/.weft/models.json"},
		"ollama:qwen3":      {"builtin > " + project},
		"ollama:gpt-oss":    {"builtin"},
	} {
		for _, w := range want {
			if !strings.Contains(rows[model], w) {
				t.Errorf("%s row %q lacks %q", model, rows[model], w)
			}
		}
	}
	if !strings.Contains(rows["MODEL"], "SOURCE") {
		t.Errorf("header %q", rows["MODEL"])
	}

	out, _, err = run(t, env, "", "models", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Provider string   `json:"provider"`
		ID       string   `json:"id"`
		Sources  []string `json:"sources"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range list {
		if m.ID == "tiny-local" {
			found = strings.Join(m.Sources, ",") == filepath.Join(home, ".weft", "models.json")
		}
	}
	if !found {
		t.Fatalf("tiny-local's sources are not in the JSON:\n%s", out)
	}
	// The JSON is a models file.
	dump := writeFile(t, filepath.Join(t.TempDir(), "dump.json"), out)
	if _, _, err := run(t, nil, "", "models", "--models", dump); err != nil {
		t.Fatalf("weft models --json does not load back: %v", err)
	}
}

// TestPromptCacheSwitch: run and chat ask Anthropic to cache the prompt
// unless --no-prompt-cache (or WEFT_NO_PROMPT_CACHE) says not to; ask, one
// call with nothing to reuse, never does.
func TestPromptCacheSwitch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		stdin string
		want  bool
	}{
		{"run caches by default", nil, []string{"run", "hi"}, "", true},
		{"chat caches by default", nil, []string{"chat"}, "hi\n/exit\n", true},
		{"--no-prompt-cache", nil, []string{"run", "--no-prompt-cache", "hi"}, "", false},
		{"WEFT_NO_PROMPT_CACHE", map[string]string{"WEFT_NO_PROMPT_CACHE": "1"}, []string{"run", "hi"}, "", false},
		{"ask never asks for caching", nil, []string{"ask", "--system", "Be brief.", "hi"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewAnthropic(t)
			fake.Push(llmtest.Text("ok"))
			env := map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": fake.URL, "WEFT_WORKSPACE": t.TempDir()}
			for k, v := range tt.env {
				env[k] = v
			}
			args := append(tt.args, "--model", "anthropic:claude-sonnet-4-5")
			if _, stderr, err := run(t, env, tt.stdin, args...); err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			body := string(fake.LastRequest().Body)
			if got := strings.Contains(body, `"cache_control"`); got != tt.want {
				t.Fatalf("cache_control sent = %v, want %v:\n%s", got, tt.want, body)
			}
		})
	}
}
