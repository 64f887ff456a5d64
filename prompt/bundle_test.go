package prompt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/prompt"
)

func TestFamilyOf(t *testing.T) {
	t.Parallel()
	tests := []struct{ model, want string }{
		{"claude-sonnet-4-5", "claude"},
		{"claude-opus-4-1@20250805", "claude"},
		{"gpt-4o", "gpt"},
		{"o3-mini", "gpt"},
		{"o1", "gpt"},
		{"gemini-2.5-pro", "gemini"},
		{"qwen-max", "qwen"},
		{"openai-compatible:qwen-max", "qwen"},
		{"dashscope:qwen3-coder-plus", "qwen"},
		{"openrouter:qwen/qwen3-coder", "qwen"},
		{"vllm:Qwen/Qwen2.5-72B-Instruct", "qwen"},
		{"ollama:qwen3:32b", "qwen"},
		{"QwQ-32B", "qwen"},
		{"deepseek-chat", "deepseek"},
		{"dashscope:deepseek-v3", "deepseek"},
		{"ERNIE-4.0-8K", "ernie"},
		{"glm-4.6", "glm"},
		{"zhipu:glm-4.5-air", "glm"},
		{"hunyuan-turbos-latest", "hunyuan"},
		{"kimi-k2-0905-preview", "kimi"},
		{"moonshot:moonshot-v1-128k", "kimi"},
		{"MiniMax-M2", "minimax"},
		{"ollama:llama3.3:70b", "llama"},
		{"openrouter:anthropic/claude-sonnet-4", "claude"},
		{"mistral-large-latest", "mistral"},
		{"some-local-model", ""},
		{"o1x-preview", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := prompt.FamilyOf(tt.model); got != tt.want {
			t.Errorf("FamilyOf(%q) = %q, want %q", tt.model, got, tt.want)
		}
	}
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    prompt.BundleKey
		wantErr string
	}{
		{"", prompt.BundleKey{}, ""},
		{"qwen/programming", prompt.BundleKey{ModelFamily: "qwen", Scenario: "programming"}, ""},
		{" Qwen / Warehouse ", prompt.BundleKey{ModelFamily: "qwen", Scenario: "warehouse"}, ""},
		{"deepseek", prompt.BundleKey{ModelFamily: "deepseek"}, ""},
		{"/medical", prompt.BundleKey{Scenario: "medical"}, ""},
		{"/", prompt.BundleKey{}, "want family/scenario"},
		{"qwen/pro gramming", prompt.BundleKey{}, "letters, digits"},
		{"qwen/../../etc", prompt.BundleKey{}, "letters, digits"},
		{strings.Repeat("a", 65) + "/x", prompt.BundleKey{}, "longer than 64"},
	}
	for _, tt := range tests {
		got, err := prompt.ParseKey(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ParseKey(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && err != nil:
			t.Errorf("ParseKey(%q): %v", tt.in, err)
		case got != tt.want:
			t.Errorf("ParseKey(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestRegistryResolveFallsBack(t *testing.T) {
	t.Parallel()
	r := prompt.NewRegistry()
	warehouse := prompt.NewOverlay(prompt.NewChineseBundle()).OverrideStatic("intro", "你是仓储物流助手。")
	r.Register(prompt.KeyFor("qwen", "warehouse"), warehouse)
	tests := []struct {
		key  prompt.BundleKey
		want prompt.BundleKey
	}{
		{prompt.KeyFor("qwen", "warehouse"), prompt.KeyFor("qwen", "warehouse")},
		{prompt.KeyFor("qwen", "programming"), prompt.KeyFor("qwen", "programming")},
		{prompt.KeyFor("qwen", "medical"), prompt.KeyFor("qwen", "programming")}, // the family's bundle
		{prompt.KeyFor("glm", ""), prompt.KeyFor("glm", "programming")},
		{prompt.KeyFor("nosuchfamily", "nosuchscenario"), prompt.DefaultKey},
		{prompt.KeyFor("gpt", "programming"), prompt.DefaultKey},
		{prompt.BundleKey{}, prompt.DefaultKey},
	}
	for _, tt := range tests {
		if _, got := r.Resolve(tt.key); got != tt.want {
			t.Errorf("Resolve(%v) found %v, want %v", tt.key, got, tt.want)
		}
	}
	// The zero Registry still resolves: to the built-in default.
	var zero prompt.Registry
	if b, k := zero.Resolve(prompt.KeyFor("qwen", "programming")); b == nil || k != prompt.DefaultKey {
		t.Errorf("zero registry: %v %v", b, k)
	}
	// Keys with an empty part are refused: they would shadow inference.
	r.Register(prompt.BundleKey{ModelFamily: "x"}, prompt.DefaultBundle())
	for _, k := range r.Keys() {
		if k.ModelFamily == "" || k.Scenario == "" {
			t.Errorf("registered a partial key %v", k)
		}
	}
	for _, k := range prompt.ChineseBundleKeys() {
		if b, got := r.Resolve(k); got != k || b != prompt.NewChineseBundle() {
			t.Errorf("Chinese key %v resolved to %v", k, got)
		}
	}
}

// build is Build with a fixed date and no project files.
func build(t *testing.T, b *prompt.Builder, ctx context.Context, req prompt.Request) prompt.Prompt {
	t.Helper()
	return b.Build(ctx, req)
}

func fixedNow() time.Time { return time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC) }

func TestBuildPicksBundlePerRequest(t *testing.T) {
	t.Parallel()
	b := prompt.New(prompt.Config{Now: fixedNow})
	en := "You are weft, an AI coding agent."
	zh := "你是 weft，一个 AI 编程智能体。"
	tests := []struct {
		name    string
		ctx     context.Context
		req     prompt.Request
		want    string
		wantKey prompt.BundleKey
	}{
		{"claude model: English", context.Background(), prompt.Request{Model: "claude-sonnet-4-5", Provider: "anthropic"}, en, prompt.DefaultKey},
		{"qwen behind an OpenAI-compatible server: Chinese", context.Background(),
			prompt.Request{Model: "qwen-max", Provider: "openai-compatible"}, zh, prompt.KeyFor("qwen", "programming")},
		{"family only in the vendor path", context.Background(),
			prompt.Request{Model: "Qwen/Qwen2.5-72B-Instruct", Provider: "vllm"}, zh, prompt.KeyFor("qwen", "programming")},
		{"deepseek: Chinese", context.Background(), prompt.Request{Model: "deepseek-chat", Provider: "deepseek"}, zh, prompt.KeyFor("deepseek", "programming")},
		{"request key wins over the model", context.Background(),
			prompt.Request{Model: "claude-sonnet-4-5", Key: prompt.KeyFor("glm", "programming")}, zh, prompt.KeyFor("glm", "programming")},
		{"context key wins over the request's", prompt.WithBundleKey(context.Background(), prompt.DefaultKey),
			prompt.Request{Model: "qwen-max", Key: prompt.KeyFor("qwen", "programming")}, en, prompt.DefaultKey},
		{"parts merge: the context's scenario, the request's family", prompt.WithBundleKey(context.Background(), prompt.KeyFor("", "support")),
			prompt.Request{Model: "claude-sonnet-4-5", Key: prompt.KeyFor("glm", "")}, zh, prompt.KeyFor("glm", "programming")},
		{"unknown key falls back to the default", context.Background(),
			prompt.Request{Model: "gpt-4.1", Key: prompt.KeyFor("nosuch", "thing")}, en, prompt.DefaultKey},
		{"unknown scenario falls back to the family's", context.Background(),
			prompt.Request{Model: "qwen-max", Key: prompt.KeyFor("", "warehouse")}, zh, prompt.KeyFor("qwen", "programming")},
	}
	for _, tt := range tests {
		p := build(t, b, tt.ctx, tt.req)
		if len(p.Blocks) != 1 {
			t.Errorf("%s: %d system blocks, want 1", tt.name, len(p.Blocks))
			continue
		}
		if !strings.HasPrefix(p.Blocks[0].Text, tt.want) {
			t.Errorf("%s: prompt starts %q, want %q", tt.name, firstLine(p.Blocks[0].Text), tt.want)
		}
		if p.Key != tt.wantKey {
			t.Errorf("%s: key %v, want %v", tt.name, p.Key, tt.wantKey)
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func TestChineseBundleMatchesTheDefaultsSections(t *testing.T) {
	t.Parallel()
	names := func(list []*prompt.Section) []string {
		var out []string
		for _, s := range list {
			out = append(out, s.Name+"/"+s.Kind.String())
		}
		return out
	}
	en, zh := prompt.DefaultBundle(), prompt.NewChineseBundle()
	if a, b := names(en.StaticSections()), names(zh.StaticSections()); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("static sections differ: %v vs %v", a, b)
	}
	if a, b := names(en.DynamicSections()), names(zh.DynamicSections()); strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("dynamic sections differ: %v vs %v", a, b)
	}
	for _, s := range zh.StaticSections() {
		if strings.Count(s.Text, "\n") < strings.Count(sectionText(en, s.Name), "\n") {
			t.Errorf("Chinese %s has fewer lines than the English one", s.Name)
		}
	}
	// The dynamic sections speak Chinese too.
	b := prompt.New(prompt.Config{Now: fixedNow, Workspace: t.TempDir()})
	p := b.Build(context.Background(), prompt.Request{Model: "glm-4.6", Provider: "zhipu",
		Tools: []llm.ToolSpec{{Name: "Read"}, {Name: "Bash"}}})
	for _, want := range []string{"# 运行环境", "工作目录：", "模型：zhipu:glm-4.6", "今天的日期：2025-03-14", "# 工具\n你可以调用以下工具：Read、Bash。"} {
		if !strings.Contains(p.Text(), want) {
			t.Errorf("Chinese prompt lacks %q:\n%s", want, p.Text())
		}
	}
}

func sectionText(b prompt.Bundle, name string) string {
	for _, s := range b.StaticSections() {
		if s.Name == name {
			return s.Text
		}
	}
	return ""
}

func TestOverlays(t *testing.T) {
	t.Parallel()
	reg := prompt.NewRegistry()
	base := prompt.NewOverlay(prompt.DefaultBundle()).OverrideStatic("intro", "You are the warehouse assistant.")
	calls := 0
	full := base.
		OverrideDynamic("env_info", func(ctx context.Context) string { return "# Site\nModel " + prompt.ModelIDFromCtx(ctx) }).
		OverrideVolatile("tool_descs", func(ctx context.Context) string { calls++; return "Stock levels change by the minute." }, "stock moves").
		OverrideStatic("no_such_section", "never shown")
	reg.Register(prompt.KeyFor("claude", "warehouse"), full)
	reg.Register(prompt.KeyFor("claude", "plain"), base)
	b := prompt.New(prompt.Config{Bundles: reg, Now: fixedNow})

	p := b.Build(context.Background(), prompt.Request{Model: "claude-haiku-4-5", Key: prompt.KeyFor("", "warehouse")})
	if len(p.Blocks) != 2 {
		t.Fatalf("want the stable block and the volatile one, got %d blocks", len(p.Blocks))
	}
	if !strings.HasPrefix(p.Blocks[0].Text, "You are the warehouse assistant.\n\n# Doing tasks") {
		t.Errorf("intro not replaced in place:\n%s", p.Blocks[0].Text)
	}
	if !strings.Contains(p.Blocks[0].Text, "# Site\nModel claude-haiku-4-5") || strings.Contains(p.Blocks[0].Text, "# Environment") {
		t.Errorf("env_info not replaced:\n%s", p.Blocks[0].Text)
	}
	if strings.Contains(p.Text(), "never shown") {
		t.Error("an override of a section the base lacks was added")
	}
	if p.Blocks[1].Text != "Stock levels change by the minute." {
		t.Errorf("volatile block = %q", p.Blocks[1].Text)
	}
	b.Build(context.Background(), prompt.Request{Model: "claude-haiku-4-5", Key: prompt.KeyFor("", "warehouse")})
	if calls != 2 {
		t.Errorf("volatile section computed %d times in two builds, want 2", calls)
	}
	// Deriving full from base left base as it was.
	p = b.Build(context.Background(), prompt.Request{Model: "claude-haiku-4-5", Key: prompt.KeyFor("", "plain")})
	if len(p.Blocks) != 1 || !strings.Contains(p.Text(), "# Environment") {
		t.Errorf("the base overlay changed:\n%s", p.Text())
	}
}

func TestNewBundleFromFuncOrdersByKind(t *testing.T) {
	t.Parallel()
	reg := prompt.NewRegistry()
	reg.Register(prompt.KeyFor("x", "y"), prompt.NewBundleFromFunc(
		func() []*prompt.Section {
			return []*prompt.Section{prompt.StaticSection("intro", "You are X's assistant."), prompt.StaticSection("empty", "")}
		},
		func() []*prompt.Section {
			return []*prompt.Section{
				prompt.VolatileSection("clock", func(context.Context) string { return "Now: turn" }, "changes"),
				prompt.DynamicSection("env", func(ctx context.Context) string { return "Model: " + prompt.ModelIDFromCtx(ctx) }),
				// A static section listed among the dynamic ones still
				// comes before them.
				prompt.StaticSection("rules", "Rule one."),
			}
		}))
	b := prompt.New(prompt.Config{Bundles: reg, Now: fixedNow})
	p := b.Build(context.Background(), prompt.Request{Model: "m1", Key: prompt.KeyFor("x", "y")})
	want := []string{"You are X's assistant.\n\nRule one.\n\nModel: m1", "Now: turn"}
	if len(p.Blocks) != 2 || p.Blocks[0].Text != want[0] || p.Blocks[1].Text != want[1] {
		t.Errorf("blocks = %q, want %q", blockTexts(p), want)
	}
}

func blockTexts(p prompt.Prompt) []string {
	var out []string
	for _, b := range p.Blocks {
		out = append(out, b.Text)
	}
	return out
}

// TestDynamicSectionsAreStableWithinAnEnvironment: a dynamic section is
// computed once per environment, so its bytes do not change from turn to
// turn even when its function would (it reads a clock); a change of the
// environment (the tools) computes it again.
func TestDynamicSectionsAreStableWithinAnEnvironment(t *testing.T) {
	t.Parallel()
	n := 0
	reg := prompt.NewRegistry()
	reg.Register(prompt.DefaultKey, prompt.NewOverlay(prompt.DefaultBundle()).OverrideDynamic("env_info",
		func(context.Context) string { n++; return "computed " + strings.Repeat("!", n) }))
	b := prompt.New(prompt.Config{Bundles: reg, Now: fixedNow})
	req := prompt.Request{Model: "claude-sonnet-4-5", Tools: []llm.ToolSpec{{Name: "Read"}}}
	first := b.Build(context.Background(), req).Text()
	for range 3 {
		if got := b.Build(context.Background(), req).Text(); got != first {
			t.Fatalf("prompt changed without a change of environment:\n%s\nvs\n%s", got, first)
		}
	}
	req.Tools = append(req.Tools, llm.ToolSpec{Name: "Bash"})
	if got := b.Build(context.Background(), req).Text(); got == first || n != 2 {
		t.Errorf("a new tool did not recompute the section (computed %d times)", n)
	}
}

func TestReplaceKeepsProjectSections(t *testing.T) {
	t.Parallel()
	b := prompt.New(prompt.Config{Now: fixedNow, Append: "Always answer in haiku."})
	p := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5", Replace: "You are a pirate.",
		Tools: []llm.ToolSpec{{Name: "Read"}}})
	text := p.Text()
	if !strings.HasPrefix(text, "You are a pirate.") || strings.Contains(text, "You are weft") ||
		strings.Contains(text, "# Environment") || strings.Contains(text, "# Tools") {
		t.Errorf("--system did not replace weft's sections:\n%s", text)
	}
	if !strings.HasSuffix(text, "Always answer in haiku.") {
		t.Errorf("the appended text is not last:\n%s", text)
	}
	p = b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5"})
	if !strings.HasPrefix(p.Text(), "You are weft") || !strings.HasSuffix(p.Text(), "Always answer in haiku.") {
		t.Errorf("--append-system did not add to weft's prompt:\n%s", p.Text())
	}
}
