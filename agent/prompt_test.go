package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
)

// project is a repository with a workspace inside and a home directory.
type project struct{ home, repo, ws string }

func newProject(t *testing.T) project {
	t.Helper()
	root := t.TempDir()
	p := project{home: filepath.Join(root, "home"), repo: filepath.Join(root, "repo")}
	p.ws = filepath.Join(p.repo, "svc")
	for _, d := range []string{p.home, filepath.Join(p.repo, ".git"), p.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fixedDay() time.Time { return time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC) }

// systemOf is the "system" field of an Anthropic request body, exactly as
// sent, with the cache markers cut out.
func systemOf(t *testing.T, body []byte) string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(top["system"]), cacheMarker, "")
}

// TestProjectInstructionsReachTheRequest: AGENTS.md and CLAUDE.md from the
// workspace up to the repository root, and the user's ~/.weft/AGENTS.md,
// are in the system prompt the provider receives; an edited file is
// re-read at the next turn.
func TestProjectInstructionsReachTheRequest(t *testing.T) {
	t.Parallel()
	pr := newProject(t)
	writeFile(t, filepath.Join(pr.repo, "AGENTS.md"), "Run `make check` before you finish. ROOT-RULE")
	writeFile(t, filepath.Join(pr.ws, "CLAUDE.md"), "This service speaks gRPC only. SERVICE-RULE")
	writeFile(t, filepath.Join(pr.home, ".weft", "AGENTS.md"), "Write British English. USER-RULE")
	fake := llmtest.NewAnthropic(t).Push(llmtest.Text("ok"), llmtest.Text("ok"))
	p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}})
	a, err := agent.New(agent.Config{Provider: p, Model: "claude-sonnet-4-5",
		Prompt: prompt.New(prompt.Config{Workspace: pr.ws, Home: pr.home, Now: fixedDay})})
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewSession()
	if c := collect(s, context.Background(), "hi"); c.err != nil {
		t.Fatal(c.err)
	}
	sys := systemOf(t, fake.Requests()[0].Body)
	for _, want := range []string{"You are weft", "USER-RULE", "ROOT-RULE", "SERVICE-RULE", "Working directory: " + pr.ws} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	if !(strings.Index(sys, "USER-RULE") < strings.Index(sys, "ROOT-RULE") && strings.Index(sys, "ROOT-RULE") < strings.Index(sys, "SERVICE-RULE")) {
		t.Errorf("instructions out of order (user, repository root, workspace):\n%s", sys)
	}
	writeFile(t, filepath.Join(pr.ws, "CLAUDE.md"), "This service now speaks HTTP. EDITED-RULE, longer")
	if c := collect(s, context.Background(), "again"); c.err != nil {
		t.Fatal(c.err)
	}
	if sys := systemOf(t, fake.Requests()[1].Body); !strings.Contains(sys, "EDITED-RULE") || strings.Contains(sys, "SERVICE-RULE") {
		t.Errorf("the edited CLAUDE.md was not re-read:\n%s", sys)
	}
}

// TestSystemPromptIsByteStableAcrossTurns: with nothing changed, every
// model call of a session, over several turns with tool calls, and with a
// fresh Agent per turn as weft serve builds them, sends the same system
// prompt bytes, so the provider's prompt cache holds.
func TestSystemPromptIsByteStableAcrossTurns(t *testing.T) {
	t.Parallel()
	pr := newProject(t)
	writeFile(t, filepath.Join(pr.repo, "AGENTS.md"), "Project rules.")
	writeFile(t, filepath.Join(pr.ws, ".weft", "skills", "deploy", "SKILL.md"), "---\nname: deploy\ndescription: Deploy the service.\n---\nDEPLOY-BODY")
	writeFile(t, filepath.Join(pr.ws, "a.txt"), "alpha\n")
	builder := prompt.New(prompt.Config{Workspace: pr.ws, Home: pr.home, Append: "Be terse."})
	fake := llmtest.NewAnthropic(t).Push(
		toolScript(llmtest.ToolBlock("t1", "Read", `{"file_path":"a.txt"}`)), llmtest.Text("read it"),
		toolScript(llmtest.ToolBlock("t2", "Skill", `{"skill":"deploy"}`)), llmtest.Text("deployed"),
		llmtest.Text("third"),
	)
	p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}})
	reg, err := tool.NewRegistry(append(builtin.Tools(builtin.Config{Workspace: pr.ws}), builder.SkillTool())...)
	if err != nil {
		t.Fatal(err)
	}
	newAgent := func() *agent.Agent {
		a, err := agent.New(agent.Config{Provider: p, Model: "claude-sonnet-4-5", Tools: reg, Prompt: builder,
			Policy: &policy.Policy{Mode: permission.ModeBypass, Workspace: pr.ws}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	s := newAgent().NewSession()
	for _, msg := range []string{"read a.txt", "deploy"} {
		if c := collect(s, context.Background(), msg); c.err != nil {
			t.Fatal(c.err)
		}
	}
	// The next turn on a fresh agent, resuming the history.
	s2 := newAgent().ResumeSessionWith(s.Messages(), s.ToolState())
	if c := collect(s2, context.Background(), "once more"); c.err != nil {
		t.Fatal(c.err)
	}
	reqs := fake.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	first := systemOf(t, reqs[0].Body)
	if !strings.Contains(first, "- deploy: Deploy the service.") || !strings.HasSuffix(strings.TrimSuffix(first, `"}]`), "Be terse.") {
		t.Fatalf("unexpected system prompt:\n%s", first)
	}
	for i, r := range reqs[1:] {
		if got := systemOf(t, r.Body); got != first {
			t.Errorf("request %d: the system prompt changed with nothing changed:\n%s\nvs\n%s", i+2, got, first)
		}
	}
}

// TestSkillBodyReachesTheModelOnlyAfterTheSkillCall: the system prompt
// lists the skill by name and description; its body arrives as the Skill
// call's result, never before.
func TestSkillBodyReachesTheModelOnlyAfterTheSkillCall(t *testing.T) {
	t.Parallel()
	pr := newProject(t)
	writeFile(t, filepath.Join(pr.home, ".claude", "skills", "changelog", "SKILL.md"),
		"---\nname: changelog\ndescription: Write the changelog entry for a change.\nallowed-tools: Bash(git log:*)\n---\nSKILL-BODY: use Keep a Changelog headings.")
	builder := prompt.New(prompt.Config{Workspace: pr.ws, Home: pr.home, Now: fixedDay})
	p := llmtest.NewScripted("scripted",
		toolScript(llmtest.ToolBlock("s1", "Skill", `{"skill":"changelog"}`)),
		llmtest.Text("done"))
	reg, err := tool.NewRegistry(builder.SkillTool())
	if err != nil {
		t.Fatal(err)
	}
	// The zero policy: Skill is read-only, so it runs without asking.
	a, err := agent.New(agent.Config{Provider: p, Model: "claude-sonnet-4-5", Tools: reg, Prompt: builder})
	if err != nil {
		t.Fatal(err)
	}
	if c := collect(a.NewSession(), context.Background(), "add a changelog entry"); c.err != nil {
		t.Fatal(c.err)
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	whole := func(r llm.Request) string {
		b, _ := json.Marshal(r)
		return string(b)
	}
	if first := whole(reqs[0]); strings.Contains(first, "SKILL-BODY") || !strings.Contains(first, "- changelog: Write the changelog entry for a change.") {
		t.Errorf("first request: the skill is not just listed:\n%s", first)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if len(last.Content) != 1 || last.Content[0].Type != llm.BlockToolResult || last.Content[0].IsError ||
		!strings.Contains(whole(reqs[1]), "SKILL-BODY: use Keep a Changelog headings.") {
		t.Errorf("the Skill result did not carry the body: %+v", last)
	}
	if strings.Contains(whole(reqs[1]), "allowed-tools") {
		t.Error("front matter leaked into the result")
	}
}

// TestBundleSelectedPerRequest: agent.Config.Bundle (the HTTP API's
// "bundle") and prompt.WithBundleKey (the SDK's per-run choice) change the
// system prompt; an unknown key falls back to the default bundle; a
// malformed one is refused.
func TestBundleSelectedPerRequest(t *testing.T) {
	t.Parallel()
	builder := prompt.New(prompt.Config{Now: fixedDay})
	reg := builder.Bundles()
	reg.Register(prompt.KeyFor("claude", "warehouse"),
		prompt.NewOverlay(prompt.DefaultBundle()).OverrideStatic("intro", "You are the warehouse assistant."))
	tests := []struct {
		name, model, bundle string
		ctx                 context.Context
		want                string
	}{
		{"default for claude", "claude-sonnet-4-5", "", context.Background(), "You are weft, an AI coding agent."},
		{"Chinese for qwen behind an OpenAI-compatible server", "qwen-max", "", context.Background(), "你是 weft"},
		{"the request's bundle", "claude-sonnet-4-5", "claude/warehouse", context.Background(), "You are the warehouse assistant."},
		{"a scenario only", "claude-sonnet-4-5", "/warehouse", context.Background(), "You are the warehouse assistant."},
		{"unknown key falls back", "claude-sonnet-4-5", "nosuch/family", context.Background(), "You are weft, an AI coding agent."},
		{"the run's context wins", "qwen-max", "claude/warehouse",
			prompt.WithBundleKey(context.Background(), prompt.KeyFor("qwen", "programming")), "你是 weft"},
	}
	for _, tt := range tests {
		p := llmtest.NewScripted("openai-compatible", llmtest.Text("ok"))
		a, err := agent.New(agent.Config{Provider: p, Model: tt.model, Prompt: builder, Bundle: tt.bundle})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if c := collect(a.NewSession(), tt.ctx, "hi"); c.err != nil {
			t.Fatalf("%s: %v", tt.name, c.err)
		}
		sys := p.Requests()[0].System
		if len(sys) != 1 || !strings.HasPrefix(sys[0].Text, tt.want) {
			t.Errorf("%s: system prompt starts %q, want %q", tt.name, firstLineOf(sys), tt.want)
		}
	}
	if _, err := agent.New(agent.Config{Provider: llmtest.NewScripted("x"), Model: "m", Prompt: builder, Bundle: "qwen/not a key"}); err == nil ||
		!strings.Contains(err.Error(), "bundle") {
		t.Errorf("a malformed bundle was accepted: %v", err)
	}
}

func firstLineOf(sys []llm.Block) string {
	if len(sys) == 0 {
		return ""
	}
	l, _, _ := strings.Cut(sys[0].Text, "\n")
	return l
}

// TestVolatileSectionsGoInALaterBlock: the stable part is one system
// block and keeps the Anthropic breakpoint-free bytes; a volatile section
// is a second block after it.
func TestVolatileSectionsGoInALaterBlock(t *testing.T) {
	t.Parallel()
	builder := prompt.New(prompt.Config{Now: fixedDay})
	n := 0
	builder.Bundles().Register(prompt.DefaultKey, prompt.NewOverlay(prompt.DefaultBundle()).
		OverrideVolatile("tool_descs", func(context.Context) string { n++; return strings.Repeat("tick ", n) }, "a counter"))
	fake := llmtest.NewOpenAI(t).Push(llmtest.Text("a"), llmtest.Text("b"))
	p := openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL + "/v1", APIKey: "k"}})
	a, err := agent.New(agent.Config{Provider: p, Model: "gpt-4.1", Prompt: builder})
	if err != nil {
		t.Fatal(err)
	}
	s := a.NewSession()
	for _, m := range []string{"one", "two"} {
		if c := collect(s, context.Background(), m); c.err != nil {
			t.Fatal(c.err)
		}
	}
	sysOf := func(r llmtest.Request) string {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		return body.Messages[0].Content
	}
	a1, a2 := sysOf(fake.Requests()[0]), sysOf(fake.Requests()[1])
	stable1, vol1, _ := strings.Cut(a1, "\n\ntick")
	stable2, vol2, _ := strings.Cut(a2, "\n\ntick")
	if stable1 != stable2 || vol1 == vol2 || !strings.HasSuffix(a2, "tick tick") {
		t.Errorf("want a stable prefix and a changing volatile tail:\n%q\n%q", a1, a2)
	}
}

// TestSystemPromptIsRedacted: a registered secret's value in an
// instruction file does not reach the provider.
func TestSystemPromptIsRedacted(t *testing.T) {
	t.Parallel()
	pr := newProject(t)
	writeFile(t, filepath.Join(pr.ws, "AGENTS.md"), "Deploy with token tok-5up3r-s3cr3t-value please.")
	set := secret.NewSet()
	if err := set.Set("DEPLOY_TOKEN", "tok-5up3r-s3cr3t-value"); err != nil {
		t.Fatal(err)
	}
	p := llmtest.NewScripted("anthropic", llmtest.Text("ok"))
	a, err := agent.New(agent.Config{Provider: p, Model: "claude-sonnet-4-5", Policy: &policy.Policy{Secrets: set},
		Prompt: prompt.New(prompt.Config{Workspace: pr.ws, Now: fixedDay})})
	if err != nil {
		t.Fatal(err)
	}
	if c := collect(a.NewSession(), context.Background(), "hi"); c.err != nil {
		t.Fatal(c.err)
	}
	sys := p.Requests()[0].System[0].Text
	if strings.Contains(sys, "tok-5up3r-s3cr3t-value") || !strings.Contains(sys, "Deploy with token") {
		t.Errorf("secret not redacted from the system prompt:\n%s", sys)
	}
}
