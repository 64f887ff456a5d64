package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestCatalogLookup(t *testing.T) {
	t.Parallel()
	c := DefaultCatalog()
	tests := []struct {
		provider, model string
		wantKnown       bool
		wantName        string // DisplayName of the entry that should match
		wantCtx         int
		wantProvider    string
	}{
		{"anthropic", "claude-sonnet-4-5", true, "Claude Sonnet 4.5", 200_000, "anthropic"},
		// Dated snapshot: the longest catalogued prefix wins over claude-sonnet-4.
		{"anthropic", "claude-sonnet-4-5-20250929", true, "Claude Sonnet 4.5", 200_000, "anthropic"},
		{"anthropic", "claude-sonnet-4-20250514", true, "Claude Sonnet 4", 200_000, "anthropic"},
		{"anthropic", "claude-opus-4-1-20250805", true, "Claude Opus 4.1", 200_000, "anthropic"},
		{"anthropic", "claude-opus-4-5-20251101", true, "Claude Opus 4.5", 200_000, "anthropic"},
		{"anthropic", "claude-3-5-haiku-latest", true, "Claude Haiku 3.5", 200_000, "anthropic"},
		// Vertex-style version suffix.
		{"anthropic", "claude-haiku-4-5@20251001", true, "Claude Haiku 4.5", 200_000, "anthropic"},
		{"openai", "gpt-4.1-mini-2025-04-14", true, "GPT-4.1 mini", 1_047_576, "openai"},
		{"openai", "gpt-4.1-2025-04-14", true, "GPT-4.1", 1_047_576, "openai"},
		{"openai", "gpt-5-nano", true, "GPT-5 nano", 400_000, "openai"},
		{"openai", "o4-mini-2025-04-16", true, "o4-mini", 200_000, "openai"},
		{"gemini", "gemini-2.5-flash-lite-preview-09-2025", true, "Gemini 2.5 Flash-Lite", 1_048_576, "gemini"},
		{"gemini", "gemini-2.5-pro", true, "Gemini 2.5 Pro", 1_048_576, "gemini"},
		{"deepseek", "deepseek-reasoner", true, "DeepSeek Reasoner", 131_072, "deepseek"},
		// Ollama tags.
		{"ollama", "llama3.3:70b", true, "Llama 3.3", 131_072, "ollama"},
		{"ollama", "qwen3:8b", true, "Qwen3", 40_960, "ollama"},
		{"ollama", "gpt-oss:20b", true, "gpt-oss", 131_072, "ollama"},
		{"lmstudio", "openai/gpt-oss-20b", true, "gpt-oss", 131_072, "lmstudio"},
		// A prefix that is not followed by a separator does not match:
		// gpt-4.10 is not a gpt-4.1, o30 is not o3.
		{"openai", "gpt-4.10", false, "", UnknownContextWindow, "openai"},
		{"openai", "o30", false, "", UnknownContextWindow, "openai"},
		// The provider scopes the lookup.
		{"openrouter", "gpt-4.1", false, "", UnknownContextWindow, "openrouter"},
		{"ollama", "mistral:7b", false, "", UnknownContextWindow, "ollama"},
		{"vllm", "", false, "", UnknownContextWindow, "vllm"},
		// No provider: search them all.
		{"", "claude-haiku-4-5-20251001", true, "Claude Haiku 4.5", 200_000, "anthropic"},
		{"", "nobody-knows", false, "", UnknownContextWindow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.model, func(t *testing.T) {
			t.Parallel()
			m := c.Lookup(tt.provider, tt.model)
			if m.Known != tt.wantKnown || m.DisplayName != tt.wantName || m.ContextWindow != tt.wantCtx {
				t.Fatalf("Lookup = known %v name %q ctx %d, want known %v name %q ctx %d",
					m.Known, m.DisplayName, m.ContextWindow, tt.wantKnown, tt.wantName, tt.wantCtx)
			}
			if m.ID != tt.model || m.Provider != tt.wantProvider {
				t.Fatalf("Lookup id/provider = %q/%q, want %q/%q", m.ID, m.Provider, tt.model, tt.wantProvider)
			}
			if !m.Known {
				if m.MaxOutputTokens != UnknownMaxOutputTokens || !m.Tools || m.InputPrice != 0 || m.OutputPrice != 0 || m.Thinking {
					t.Fatalf("unknown model defaults = %+v", m)
				}
			}
		})
	}
}

func TestCatalogBuiltinTable(t *testing.T) {
	t.Parallel()
	c := DefaultCatalog()
	want := map[string][]string{
		"anthropic": {"claude-opus-4-5", "claude-opus-4-1", "claude-sonnet-4-5", "claude-sonnet-4", "claude-haiku-4-5", "claude-3-5-haiku"},
		"openai":    {"gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini", "o3", "o4-mini", "gpt-5", "gpt-5-mini"},
		"gemini":    {"gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite"},
		"deepseek":  {"deepseek-chat", "deepseek-reasoner"},
		"ollama":    {"llama3.3", "qwen3", "gpt-oss"},
	}
	for p, ids := range want {
		for _, id := range ids {
			m := c.Lookup(p, id)
			if !m.Known || m.ContextWindow <= 0 || m.MaxOutputTokens <= 0 || m.MaxOutputTokens > m.ContextWindow || !m.Tools || m.DisplayName == "" {
				t.Errorf("%s/%s: implausible entry %+v", p, id, m)
			}
		}
	}
	for _, m := range c.List() {
		switch m.Provider {
		case "anthropic":
			if m.ContextWindow != 200_000 || !near(m.CacheWritePrice, m.InputPrice*1.25) || !near(m.CacheReadPrice, m.InputPrice*0.1) {
				t.Errorf("%s: anthropic cache prices or window off: %+v", m.ID, m)
			}
		case "gemini":
			if m.ContextWindow != 1_048_576 {
				t.Errorf("%s: window %d", m.ID, m.ContextWindow)
			}
		case "ollama", "lmstudio":
			if m.InputPrice != 0 || m.OutputPrice != 0 {
				t.Errorf("%s/%s: a local model has a price", m.Provider, m.ID)
			}
		}
		if m.Provider != "ollama" && m.Provider != "lmstudio" && (m.InputPrice <= 0 || m.OutputPrice <= m.InputPrice || m.CacheReadPrice >= m.InputPrice) {
			t.Errorf("%s/%s: implausible prices %+v", m.Provider, m.ID, m)
		}
	}
}

func TestDefaultCatalogIsACopy(t *testing.T) {
	t.Parallel()
	a, b := DefaultCatalog(), DefaultCatalog()
	a.Add(ModelInfo{Provider: "openai", ID: "gpt-4.1", InputPrice: 99})
	if got := b.Lookup("openai", "gpt-4.1").InputPrice; got != 2 {
		t.Fatalf("an override leaked into another DefaultCatalog: input price %v", got)
	}
	if got := DefaultCatalog().Lookup("openai", "gpt-4.1").InputPrice; got != 2 {
		t.Fatalf("an override leaked into the built-in table: input price %v", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestModelInfoCost(t *testing.T) {
	t.Parallel()
	sonnet := DefaultCatalog().Lookup("anthropic", "claude-sonnet-4-5-20250929")
	gpt := DefaultCatalog().Lookup("openai", "gpt-4.1")
	tests := []struct {
		name string
		m    ModelInfo
		u    Usage
		want float64
	}{
		{"zero", sonnet, Usage{}, 0},
		{"input only", sonnet, Usage{InputTokens: 1_000_000}, 3},
		{"output only", sonnet, Usage{OutputTokens: 1_000_000}, 15},
		// 10k fresh * 3 + 2k out * 15 + 100k read * 0.30 + 20k write * 3.75, per 1M.
		{"all parts", sonnet, Usage{InputTokens: 10_000, OutputTokens: 2_000, CacheReadTokens: 100_000, CacheWriteTokens: 20_000},
			(10_000*3 + 2_000*15 + 100_000*0.3 + 20_000*3.75) / 1e6},
		// Reasoning tokens are part of OutputTokens and not billed twice.
		{"reasoning inside output", gpt, Usage{InputTokens: 500, OutputTokens: 1000, ReasoningTokens: 800, CacheReadTokens: 1500},
			(500*2 + 1000*8 + 1500*0.5) / 1e6},
		{"unknown model is free", DefaultCatalog().Lookup("vllm", "my-model"), Usage{InputTokens: 1 << 20, OutputTokens: 1 << 20}, 0},
		{"custom", ModelInfo{InputPrice: 1, OutputPrice: 2, CacheReadPrice: 3, CacheWritePrice: 4}, Usage{InputTokens: 1, OutputTokens: 1, CacheReadTokens: 1, CacheWriteTokens: 1}, 10e-6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.m.Cost(tt.u); !near(got, tt.want) {
				t.Fatalf("Cost = %.9f, want %.9f", got, tt.want)
			}
		})
	}
}

func TestCatalogAddAndList(t *testing.T) {
	t.Parallel()
	c := NewCatalog(
		ModelInfo{Provider: "b", ID: "z"},
		ModelInfo{Provider: "a", ID: "y", ContextWindow: 1},
		ModelInfo{Provider: "b", ID: "a"},
	)
	c.Add(ModelInfo{Provider: "a", ID: "y", ContextWindow: 2})
	c.Add(ModelInfo{Provider: "a", ID: "x", Known: false})
	var got []string
	for _, m := range c.List() {
		got = append(got, fmt.Sprintf("%s/%s/%d/%v", m.Provider, m.ID, m.ContextWindow, m.Known))
	}
	want := "a/x/0/true a/y/2/true b/a/0/true b/z/0/true"
	if strings.Join(got, " ") != want {
		t.Fatalf("List = %v, want %s", got, want)
	}
	if NewCatalog().List() != nil {
		t.Fatal("an empty catalogue lists something")
	}
}

func TestCatalogLoadJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means success
		check   func(t *testing.T, c *Catalog)
	}{
		{
			name: "partial override keeps the other fields",
			in:   `[{"provider":"openai","id":"gpt-4.1","input_price":1.5,"images":false}]`,
			check: func(t *testing.T, c *Catalog) {
				m := c.Lookup("openai", "gpt-4.1")
				if m.InputPrice != 1.5 || m.Images || m.OutputPrice != 8 || m.ContextWindow != 1_047_576 || m.DisplayName != "GPT-4.1" || !m.Tools {
					t.Fatalf("after override: %+v", m)
				}
			},
		},
		{
			name: "explicit zero is set, null is left alone",
			in:   `[{"provider":"anthropic","id":"claude-sonnet-4-5","cache_write_price":0,"output_price":null,"tools":false}]`,
			check: func(t *testing.T, c *Catalog) {
				m := c.Lookup("anthropic", "claude-sonnet-4-5-20250929")
				if m.CacheWritePrice != 0 || m.OutputPrice != 15 || m.Tools {
					t.Fatalf("after override: %+v", m)
				}
			},
		},
		{
			name: "new model",
			in: `[{"provider":"vllm","id":"my-llama","display_name":"Mine","context_window":65536,"max_output_tokens":4096,
				"input_price":0.1,"output_price":0.2,"cache_read_price":0.01,"cache_write_price":0.02,
				"thinking":true,"images":true,"caching":true,"tools":true}]`,
			check: func(t *testing.T, c *Catalog) {
				got := c.Lookup("vllm", "my-llama:q4")
				want := ModelInfo{ID: "my-llama:q4", Provider: "vllm", DisplayName: "Mine", ContextWindow: 65536, MaxOutputTokens: 4096,
					InputPrice: 0.1, OutputPrice: 0.2, CacheReadPrice: 0.01, CacheWritePrice: 0.02,
					Thinking: true, Images: true, Caching: true, Tools: true, Known: true}
				if got != want {
					t.Fatalf("Lookup = %+v, want %+v", got, want)
				}
			},
		},
		{
			name: "later entries for one model apply in order",
			in:   `[{"provider":"p","id":"m","input_price":1,"output_price":2},{"provider":"p","id":"m","input_price":3}]`,
			check: func(t *testing.T, c *Catalog) {
				if m := c.Lookup("p", "m"); m.InputPrice != 3 || m.OutputPrice != 2 {
					t.Fatalf("Lookup = %+v", m)
				}
			},
		},
		{name: "empty array", in: `[]`, check: func(t *testing.T, c *Catalog) {}},
		{name: "not an array", in: `{"provider":"p","id":"m"}`, wantErr: "want a JSON array"},
		{name: "invalid JSON", in: `[{"provider":`, wantErr: "not valid JSON"},
		{name: "trailing data", in: `[] []`, wantErr: "after the JSON array"},
		{name: "missing id", in: `[{"provider":"openai","id":"gpt-4o"},{"provider":"openai"}]`, wantErr: `entry 1: field "id": required`},
		{name: "missing provider", in: `[{"id":"gpt-4o"}]`, wantErr: `entry 0 (gpt-4o): field "provider": required`},
		{name: "wrong type", in: `[{"provider":"openai","id":"gpt-4o"},{"provider":"openai","id":"gpt-4o","input_price":"2.5"}]`,
			wantErr: `entry 1 (openai/gpt-4o): field "input_price": want a number, got string`},
		{name: "wrong bool", in: `[{"provider":"openai","id":"gpt-4o","tools":"yes"}]`, wantErr: `entry 0 (openai/gpt-4o): field "tools": want true or false, got string`},
		{name: "wrong int", in: `[{"provider":"openai","id":"gpt-4o","context_window":1.5}]`, wantErr: `entry 0 (openai/gpt-4o): field "context_window": want an integer, got number 1.5`},
		{name: "entry not an object", in: `[{"provider":"a","id":"b"}, 7]`, wantErr: `entry 1: want an object, got a number`},
		{name: "typo", in: `[{"provider":"openai","id":"gpt-4o","input_pirce":2}]`, wantErr: `entry 0: unknown field "input_pirce" (did you mean "input_price"?)`},
		{name: "unknown field far from any", in: `[{"provider":"openai","id":"gpt-4o","colour":"red"}]`, wantErr: `entry 0: unknown field "colour" (the fields are id, provider, display_name,`},
		{name: "negative price", in: `[{"provider":"openai","id":"gpt-4o","output_price":-1}]`, wantErr: `entry 0 (openai/gpt-4o): field "output_price": must not be negative`},
		{name: "negative window", in: `[{"provider":"x","id":"y","context_window":-5}]`, wantErr: `entry 0 (x/y): field "context_window": must be a positive number of tokens, got -5`},
		{name: "zero window", in: `[{"provider":"x","id":"y","context_window":0}]`, wantErr: `entry 0 (x/y): field "context_window": must be a positive number of tokens, got 0`},
		{name: "output over the window", in: `[{"provider":"x","id":"y","context_window":8192,"max_output_tokens":16384}]`,
			wantErr: `entry 0 (x/y): max_output_tokens 16384 is more than context_window 8192`},
		{name: "a field twice", in: `[{"provider":"x","id":"y","input_price":1,"input_price":2}]`, wantErr: `entry 0: field "input_price" is given twice`},
		{name: "wrong id type", in: `[{"provider":"x","id":7}]`, wantErr: `entry 0: field "id": want a string, got number 7`},
		{name: "not an array at all", in: `"models"`, wantErr: "want a JSON array of model entries"},
		{name: "nothing", in: ``, wantErr: "want a JSON array of model entries, got nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultCatalog()
			before := c.List()
			err := c.LoadJSON(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadJSON error = %v, want it to contain %q", err, tt.wantErr)
				}
				// All or nothing: the valid entries before the bad one were not applied.
				if after := c.List(); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatal("a failed load changed the catalogue")
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadJSON: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestCatalogJSONRoundTrip(t *testing.T) {
	t.Parallel()
	src := DefaultCatalog()
	b, err := json.Marshal(src.List())
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"display_name"`, `"context_window"`, `"max_output_tokens"`, `"cache_read_price"`, `"cache_write_price"`, `"known"`} {
		if !bytes.Contains(b, []byte(field)) {
			t.Fatalf("marshalled catalogue lacks %s", field)
		}
	}
	dst := NewCatalog()
	if err := dst.LoadJSON(bytes.NewReader(b)); err != nil {
		t.Fatalf("LoadJSON of List's JSON: %v", err)
	}
	if fmt.Sprint(dst.List()) != fmt.Sprint(src.List()) {
		t.Fatal("round trip changed the catalogue")
	}
}

func TestCatalogConcurrent(t *testing.T) {
	t.Parallel()
	c := DefaultCatalog()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				switch j % 4 {
				case 0:
					c.Add(ModelInfo{Provider: "p", ID: fmt.Sprintf("m%d", i), InputPrice: float64(j)})
				case 1:
					_ = c.LoadJSON(strings.NewReader(`[{"provider":"openai","id":"gpt-4o","input_price":2.5}]`))
				case 2:
					if m := c.Lookup("anthropic", "claude-sonnet-4-5-20250929"); !m.Known {
						t.Error("lost a built-in entry")
					}
				default:
					_ = c.List()
				}
			}
		})
	}
	wg.Wait()
}

func FuzzCatalogLoadJSON(f *testing.F) {
	for _, s := range []string{
		`[]`,
		`[{"provider":"openai","id":"gpt-4.1","input_price":1.5}]`,
		`[{"provider":"x","id":"y","context_window":-1}]`,
		`[{"provider":"x"}]`,
		`[1,"a",null,{}]`,
		`{"a":1}`,
		`[{"provider":"x","id":"y","tools":"no"}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c := DefaultCatalog()
		before := fmt.Sprint(c.List())
		if err := c.LoadJSON(strings.NewReader(in)); err != nil {
			if fmt.Sprint(c.List()) != before {
				t.Fatal("a failed load changed the catalogue")
			}
			return
		}
		for _, m := range c.List() {
			if m.ID == "" || m.Provider == "" || m.ContextWindow <= 0 || m.MaxOutputTokens > m.ContextWindow || m.InputPrice < 0 || !m.Known {
				t.Fatalf("load accepted a bad entry: %+v", m)
			}
		}
	})
}

func FuzzCatalogLookup(f *testing.F) {
	for _, s := range []string{"claude-sonnet-4-5-20250929", "llama3.3:70b", "", "-", "gpt-4.1@", "o3:"} {
		f.Add("anthropic", s)
	}
	c := DefaultCatalog()
	f.Fuzz(func(t *testing.T, provider, model string) {
		m := c.Lookup(provider, model)
		if m.ID != model || m.ContextWindow <= 0 || m.MaxOutputTokens <= 0 {
			t.Fatalf("Lookup(%q, %q) = %+v", provider, model, m)
		}
		if provider != "" && m.Provider != provider {
			t.Fatalf("Lookup(%q, %q) changed the provider: %+v", provider, model, m)
		}
	})
}

// TestCatalogLoadFile: a models file's errors name the file, the line, the
// entry and the field; a good file adds and overrides entries, and Sources
// says where each came from.
func TestCatalogLoadFile(t *testing.T) {
	t.Parallel()
	providers := []string{"anthropic", "ollama", "openai"}
	tests := []struct {
		name    string
		file    string
		wantErr string // after "<path>:"
	}{
		{"typo on its line", "[\n  {\"provider\": \"ollama\", \"id\": \"qwen3\",\n   \"context_windw\": 40960}\n]", `3: entry 0: unknown field "context_windw" (did you mean "context_window"?)`},
		{"negative price on its line", "[\n {\"provider\": \"openai\", \"id\": \"gpt-4.1\"},\n {\"provider\": \"openai\",\n  \"id\": \"gpt-4o\",\n  \"input_price\": -2}\n]",
			`5: entry 1 (openai/gpt-4o): field "input_price": must not be negative, got -2`},
		{"unknown provider", "[{\"provider\": \"olama\", \"id\": \"qwen3\"}]", `1: entry 0 (olama/qwen3): field "provider": "olama" is not a provider weft knows (anthropic, ollama, openai)`},
		{"syntax error on its line", "[\n {\"provider\": \"ollama\",\n  \"id\": \"qwen3\"\n  \"context_window\": 1}\n]", `4: not valid JSON: invalid character '"' after object key:value pair`},
		{"missing provider", "[\n\n {\"id\": \"m\"}]", `3: entry 0 (m): field "provider": required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "models.json")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			c := DefaultCatalog()
			err := c.LoadFile(path, LoadOptions{Providers: providers})
			if err == nil || err.Error() != path+":"+tt.wantErr {
				t.Fatalf("err = %v\nwant %s:%s", err, path, tt.wantErr)
			}
		})
	}

	t.Run("layers and sources", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		home, project := filepath.Join(dir, "home.json"), filepath.Join(dir, "project.json")
		os.WriteFile(home, []byte(`[
  {"provider": "ollama", "id": "qwen2.5-coder:32b", "context_window": 32768, "max_output_tokens": 8192},
  {"provider": "Ollama", "id": "llama3.3", "context_window": 65536}
]`), 0o600)
		os.WriteFile(project, []byte(`[{"provider": "ollama", "id": "llama3.3", "display_name": "Llama (64k)"}]`), 0o600)
		c := DefaultCatalog()
		for _, p := range []string{home, project} {
			if err := c.LoadFile(p, LoadOptions{Providers: providers}); err != nil {
				t.Fatal(err)
			}
		}
		// A new local model gets its real window, and what an unknown model
		// would have for the rest.
		m := c.Lookup("ollama", "qwen2.5-coder:32b")
		if !m.Known || m.ContextWindow != 32768 || m.MaxOutputTokens != 8192 || !m.Tools || m.InputPrice != 0 {
			t.Fatalf("new model = %+v", m)
		}
		if m := c.Lookup("ollama", "llama3.3:70b"); m.ContextWindow != 65536 || m.DisplayName != "Llama (64k)" || m.MaxOutputTokens != 8192 {
			t.Fatalf("overridden model = %+v", m)
		}
		for _, tc := range []struct {
			provider, id string
			want         []string
		}{
			{"ollama", "qwen2.5-coder:32b", []string{home}},
			{"ollama", "llama3.3", []string{"builtin", home, project}},
			{"openai", "gpt-4.1", []string{"builtin"}},
			{"openai", "gpt-9", nil},
		} {
			if got := c.Sources(tc.provider, tc.id); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Sources(%s, %s) = %v, want %v", tc.provider, tc.id, got, tc.want)
			}
		}
	})

	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		err := DefaultCatalog().LoadFile(filepath.Join(t.TempDir(), "nope.json"), LoadOptions{})
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("err = %v", err)
		}
	})
}
