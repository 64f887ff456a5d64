package registry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/registry"
)

// chineseProviders are seed 000's providers weft lacked: MiniMax over its
// Anthropic-compatible endpoint, and the OpenAI-compatible presets.
var chineseProviders = []struct {
	name, keyVar, model string
	anthropic           bool
	// path is a base URL path like the service's own (the Anthropic fake
	// serves /v1/messages only), defaultURL where requests go without an
	// override.
	path, defaultURL string
}{
	{"minimax", "MINIMAX_API_KEY", "MiniMax-M2.7", true, "", "https://api.minimaxi.com/anthropic/v1/messages"},
	{"dashscope", "DASHSCOPE_API_KEY", "qwen3-coder-plus", false, "/compatible-mode/v1", "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions"},
	{"zhipu", "ZHIPUAI_API_KEY", "glm-4.6", false, "/api/paas/v4", "https://open.bigmodel.cn/api/paas/v4/chat/completions"},
	{"moonshot", "MOONSHOT_API_KEY", "kimi-k2-thinking", false, "/v1", "https://api.moonshot.cn/v1/chat/completions"},
}

// TestChinesePresetsAgainstTheirProtocolFakes: each preset reads its key
// variable, talks its wire protocol to the base URL (overridden here with
// WEFT_<NAME>_BASE_URL to the loopback fake), reports its own name and
// finds its model in the catalogue.
func TestChinesePresetsAgainstTheirProtocolFakes(t *testing.T) {
	t.Parallel()
	for _, tt := range chineseProviders {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var srv *llmtest.Server
			if tt.anthropic {
				srv = llmtest.NewAnthropic(t)
			} else {
				srv = llmtest.NewOpenAI(t, llmtest.OpenAIReasoningField("reasoning_content"))
			}
			srv.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.ThinkingBlock("sig", "let me see"), llmtest.TextBlock("你好")}})
			r := registry.New(registry.Config{Getenv: env(tt.keyVar, "key-"+tt.name,
				"WEFT_"+strings.ToUpper(tt.name)+"_BASE_URL", srv.URL+tt.path)})
			p, info, err := r.Resolve(tt.name + ":" + tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name() != tt.name || !info.Known || info.Provider != tt.name || info.Images || info.ContextWindow < 100_000 || !info.Tools {
				t.Errorf("provider %q, info %+v", p.Name(), info)
			}
			req := &llm.Request{Model: info.ID, System: llm.SystemText("你是助手。"), Messages: []llm.Message{llm.UserText("hi")},
				MaxTokens: 1024, Thinking: llm.ThinkingLow}
			res := llm.Collect(p.Stream(context.Background(), req))
			if res.Outcome.Status != llm.StatusCompleted || res.Message.Text() != "你好" {
				t.Fatalf("result = %+v", res)
			}
			if th := res.Message.Content[0]; th.Type != llm.BlockThinking || th.Text != "let me see" {
				t.Errorf("thinking lost: %+v", res.Message.Content)
			}
			got := srv.LastRequest()
			body := got.JSON()
			if body["model"] != tt.model {
				t.Errorf("model sent = %v", body["model"])
			}
			if tt.anthropic {
				if got.Path != tt.path+"/v1/messages" || got.Header.Get("X-Api-Key") != "key-minimax" {
					t.Errorf("request %s %v", got.Path, got.Header)
				}
				// Thinking and prompt caching through the Anthropic codec.
				if th, _ := body["thinking"].(map[string]any); th["type"] != "enabled" {
					t.Errorf("thinking not requested: %s", got.Body)
				}
				if !strings.Contains(string(got.Body), `"cache_control":{"type":"ephemeral"}`) {
					t.Errorf("no cache breakpoint: %s", got.Body)
				}
				return
			}
			if got.Path != tt.path+"/chat/completions" || got.Header.Get("Authorization") != "Bearer key-"+tt.name {
				t.Errorf("request %s %v", got.Path, got.Header)
			}
			if body["max_tokens"] == nil || body["max_completion_tokens"] != nil || body["reasoning_effort"] != nil || body["prompt_cache_key"] != nil {
				t.Errorf("fields the service does not take were sent: %s", got.Body)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestChinesePresetsDefaultsAndErrors: without an override each preset
// goes to its service's endpoint (captured in memory: no network); a
// missing key names the variable; a refused key names the provider and
// the other region's base URL.
func TestChinesePresetsDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range chineseProviders {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var gotURL string
			client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				gotURL = r.URL.String()
				return &http.Response{StatusCode: 401, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(`{"error":{"message":"invalid api key","type":"authentication_error"}}`)), Request: r}, nil
			})}
			r := registry.New(registry.Config{HTTPClient: client, Getenv: env(tt.keyVar, "wrong-region-key")})
			p, info, err := r.Resolve(tt.name + ":" + tt.model)
			if err != nil {
				t.Fatal(err)
			}
			res := llm.Collect(p.Stream(context.Background(), &llm.Request{Model: info.ID, Messages: []llm.Message{llm.UserText("hi")}}))
			if gotURL != tt.defaultURL {
				t.Errorf("sent to %q, want %q", gotURL, tt.defaultURL)
			}
			var e *llm.Error
			if !errors.As(res.Outcome.Err, &e) || e.Category != llm.CategoryAuth || e.Provider != tt.name ||
				!strings.HasPrefix(res.Outcome.Message, tt.name+": auth") ||
				!strings.Contains(e.Hint, "WEFT_"+strings.ToUpper(tt.name)+"_BASE_URL=https://") {
				t.Errorf("outcome %+v, error %+v", res.Outcome, e)
			}

			_, err = registry.New(registry.Config{Getenv: env()}).Provider(tt.name)
			if err == nil || !strings.Contains(err.Error(), tt.keyVar) || !errors.Is(err, llm.ErrNoKey) {
				t.Errorf("missing key: %v", err)
			}
			if !slices.Contains(registry.CredentialVariables(), tt.keyVar) || !slices.Contains(registry.CredentialVariables(), "WEFT_"+strings.ToUpper(tt.name)+"_API_KEY") {
				t.Errorf("%s is not among the credential variables tools never see", tt.keyVar)
			}
		})
	}
}

func TestBareNamesOfTheChineseModels(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"MiniMax-M2": "minimax", "qwen-max": "dashscope", "qwen3-coder-plus": "dashscope", "qwq-plus": "dashscope",
		"glm-4.6": "zhipu", "kimi-k2-turbo-preview": "moonshot", "moonshot-v1-128k": "moonshot",
	} {
		p, m, err := registry.ParseSpec(spec)
		if err != nil || p != want || m != spec {
			t.Errorf("ParseSpec(%q) = %q, %q, %v; want %q", spec, p, m, err, want)
		}
	}
	// Local servers' tags still imply nothing.
	if _, _, err := registry.ParseSpec("qwen3:32b"); err == nil {
		t.Error("qwen3:32b was given a provider")
	}
}
