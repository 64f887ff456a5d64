package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// systemAndTools are the system message and the tool names of an OpenAI
// request body.
func systemAndTools(t *testing.T, req llmtest.Request) (string, []string) {
	t.Helper()
	body := req.JSON()
	var sys string
	for _, m := range body["messages"].([]any) {
		if mm := m.(map[string]any); mm["role"] == "system" {
			sys, _ = mm["content"].(string)
		}
	}
	var tools []string
	for _, tl := range body["tools"].([]any) {
		tools = append(tools, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	return sys, tools
}

func TestRunSystemPromptFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		model    string
		env      map[string]string
		args     []string
		want     []string
		not      []string
		wantErr  string
		suffix   string
		hasTools []string
	}{
		{name: "weft's prompt with the project's instructions", model: "openai:gpt-4.1",
			want: []string{"You are weft, an AI coding agent.", "PROJECT-RULE: use tabs", "# Environment"}, hasTools: []string{"Skill", "Read"}},
		{name: "--append-system comes last", model: "openai:gpt-4.1", args: []string{"--append-system", "APPENDED-TEXT"},
			want: []string{"You are weft", "PROJECT-RULE"}, suffix: "APPENDED-TEXT"},
		{name: "--system replaces weft's prompt, not the project's", model: "openai:gpt-4.1", args: []string{"--system", "You are a release bot."},
			want: []string{"You are a release bot.", "PROJECT-RULE"}, not: []string{"You are weft", "# Environment"}},
		{name: "--bundle picks the Chinese bundle", model: "openai:gpt-4.1", args: []string{"--bundle", "qwen/programming"},
			want: []string{"你是 weft", "# 运行环境", "PROJECT-RULE"}, not: []string{"You are weft"}},
		{name: "WEFT_BUNDLE", model: "openai:gpt-4.1", env: map[string]string{"WEFT_BUNDLE": "deepseek"}, want: []string{"你是 weft"}},
		{name: "an unknown bundle falls back", model: "openai:gpt-4.1", args: []string{"--bundle", "nosuch/bundle"}, want: []string{"You are weft"}},
		{name: "a malformed bundle is an error", model: "openai:gpt-4.1", args: []string{"--bundle", "no such"}, wantErr: "--bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("PROJECT-RULE: use tabs"), 0o644); err != nil {
				t.Fatal(err)
			}
			fake := llmtest.NewOpenAI(t).Push(llmtest.Text("ok"))
			env := map[string]string{"HOME": t.TempDir(), "WEFT_WORKSPACE": ws, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL + "/v1"}
			for k, v := range tt.env {
				env[k] = v
			}
			_, _, err := run(t, env, "", append(append([]string{"run", "--model", tt.model}, tt.args...), "hi")...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sys, tools := systemAndTools(t, fake.Requests()[0])
			for _, w := range tt.want {
				if !strings.Contains(sys, w) {
					t.Errorf("system prompt lacks %q:\n%s", w, sys)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(sys, n) {
					t.Errorf("system prompt has %q:\n%s", n, sys)
				}
			}
			if tt.suffix != "" && !strings.HasSuffix(sys, tt.suffix) {
				t.Errorf("system prompt does not end with %q:\n%s", tt.suffix, sys)
			}
			for _, want := range tt.hasTools {
				if !strings.Contains(" "+strings.Join(tools, " ")+" ", " "+want+" ") {
					t.Errorf("tools %v lack %s", tools, want)
				}
			}
		})
	}
}

// TestRunVisionModel: a text-only model (deepseek-chat) gets Read's image
// as the --vision-model's description, and describe_image; a model that
// sees images gets neither.
func TestRunVisionModel(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 32)...)
	if err := os.WriteFile(filepath.Join(ws, "shot.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	text := llmtest.NewOpenAI(t).Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("r1", "Read", `{"file_path":"shot.png"}`)}},
		llmtest.Text("It says hello."))
	vis := llmtest.NewOpenAI(t).Push(llmtest.Text("A sign that reads HELLO-FROM-VISION"))
	env := map[string]string{"HOME": t.TempDir(), "WEFT_WORKSPACE": ws,
		"DEEPSEEK_API_KEY": "sk-d", "WEFT_DEEPSEEK_BASE_URL": text.URL + "/v1",
		"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": vis.URL + "/v1"}
	if _, _, err := run(t, env, "", "run", "--yes", "--model", "deepseek:deepseek-chat", "--vision-model", "openai:gpt-4.1", "what does shot.png say?"); err != nil {
		t.Fatal(err)
	}
	_, tools := systemAndTools(t, text.Requests()[0])
	if !strings.Contains(strings.Join(tools, " "), "describe_image") {
		t.Errorf("a text-only model was not offered describe_image: %v", tools)
	}
	second := string(text.Requests()[1].Body)
	if strings.Contains(second, "image_url") || !strings.Contains(second, "HELLO-FROM-VISION") {
		t.Errorf("the image was not replaced by its description: %s", second)
	}
	if len(vis.Requests()) != 1 || !strings.Contains(string(vis.Requests()[0].Body), "data:image/png;base64,") {
		t.Errorf("the vision model did not get the image")
	}

	// A model that sees images is offered no describe_image.
	fake := llmtest.NewOpenAI(t).Push(llmtest.Text("ok"))
	env2 := map[string]string{"HOME": t.TempDir(), "WEFT_WORKSPACE": ws, "OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": fake.URL + "/v1"}
	if _, _, err := run(t, env2, "", "run", "--model", "openai:gpt-4.1", "hi"); err != nil {
		t.Fatal(err)
	}
	if _, tools := systemAndTools(t, fake.Requests()[0]); strings.Contains(strings.Join(tools, " "), "describe_image") {
		t.Errorf("describe_image offered to a model that sees images: %v", tools)
	}
	// A vision model that cannot see is refused.
	_, _, err := run(t, env, "", "run", "--model", "deepseek:deepseek-chat", "--vision-model", "deepseek:deepseek-chat", "hi")
	if err == nil || !strings.Contains(err.Error(), "does not accept images") {
		t.Errorf("error %v", err)
	}
}
