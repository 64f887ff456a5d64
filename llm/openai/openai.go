// Package openai speaks the OpenAI Chat Completions streaming protocol, to
// OpenAI itself and to the servers that copy it (OpenRouter, Ollama,
// LM Studio, DeepSeek, vLLM, DashScope, Zhipu, Moonshot).
//
// Encoding choices where the two models differ:
//
//   - System blocks become one "system" message whose content is their text
//     joined with "\n\n": every compatible server accepts a string there,
//     not all accept an array of parts.
//   - Tool results, which weft carries in user messages, become separate
//     "tool" messages in order, placed before the rest of the user message
//     because they must directly follow the assistant's tool calls. Their
//     text is joined with "\n\n". The tool role takes text only, so images
//     in a tool result follow in a user message, introduced by a line naming
//     the call. IsError is not sent: the protocol has no such flag, and the
//     text says what went wrong.
//   - Thinking blocks are sent back only when they came from a compatible
//     server's reasoning field (Meta "openai.reasoning_field"), under that
//     same field: DeepSeek's thinking-with-tools mode requires it. OpenAI
//     itself never streams reasoning text.
//   - TopK and CacheHint are not sent: the schema has no top_k, and OpenAI
//     caches prompt prefixes on its own. Request.CacheKey goes out as
//     prompt_cache_key, to OpenAI only (Config.PromptCacheKey).
//   - tool_choice and parallel_tool_calls are sent only with tools, since
//     OpenAI rejects them otherwise; "auto" is the default and is omitted.
package openai

import (
	"context"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/internal/wire"
)

// MetaReasoningField is the Block.Meta key naming the delta field a thinking
// block arrived in ("reasoning_content" or "reasoning").
const MetaReasoningField = "openai.reasoning_field"

// DefaultBaseURL is OpenAI's API, /v1 included.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Provider. The zero value talks to OpenAI.
type Config struct {
	// Endpoint's BaseURL includes /v1 (default DefaultBaseURL);
	// "/chat/completions" is appended.
	llm.Endpoint
	// Name is the registry name reported by Name(); default "openai".
	Name string
	// MaxTokensField is "max_completion_tokens" (the default) or
	// "max_tokens" (the only one Ollama reads; also LM Studio, vLLM,
	// DeepSeek).
	MaxTokensField string
	// ReasoningEffort sends reasoning_effort from Request.Thinking. New
	// turns it on when Name is "" or "openai", whose API understands it;
	// the presets decide for the others.
	ReasoningEffort bool
	// NoStreamUsage leaves out stream_options.include_usage, for servers
	// that reject it. The stream then reports no usage.
	NoStreamUsage bool
	// PromptCacheKey sends Request.CacheKey as prompt_cache_key, which
	// routes requests sharing a prefix to where it is cached. New turns it
	// on when Name is "" or "openai": OpenAI's API takes it, and the
	// compatible servers are not known to (a strict one rejects an unknown
	// field), so the presets leave it off.
	PromptCacheKey bool
	// NoPromptCache sends no prompt_cache_key whatever the requests say.
	// (OpenAI caches prompt prefixes by itself; there is nothing else to
	// turn off.)
	NoPromptCache bool
}

// Provider streams chat completions. It is safe for concurrent use.
type Provider struct {
	cfg Config
	url string
}

// New builds a provider from cfg, filling in its defaults.
func New(cfg Config) *Provider {
	if cfg.Name == "" || cfg.Name == "openai" {
		cfg.ReasoningEffort = true
		cfg.PromptCacheKey = true
	}
	if cfg.Name == "" {
		cfg.Name = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.MaxTokensField != "max_tokens" {
		cfg.MaxTokensField = "max_completion_tokens"
	}
	return &Provider{cfg: cfg, url: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions"}
}

// Name is the provider's registry name.
func (p *Provider) Name() string { return p.cfg.Name }

type preset struct {
	baseURL         string
	maxTokensField  string
	reasoningEffort bool
}

// presets hold what differs between the servers. Only OpenAI reads
// max_completion_tokens; DeepSeek picks its thinking mode by model, not by
// effort.
var presets = map[string]preset{
	"openai":     {DefaultBaseURL, "max_completion_tokens", true},
	"openrouter": {"https://openrouter.ai/api/v1", "max_tokens", true},
	"ollama":     {"http://localhost:11434/v1", "max_tokens", true},
	"lmstudio":   {"http://localhost:1234/v1", "max_tokens", true},
	"deepseek":   {"https://api.deepseek.com/v1", "max_tokens", false},
	"vllm":       {"http://localhost:8000/v1", "max_tokens", true},
	// The Chinese services' mainland endpoints; their thinking switches
	// are not reasoning_effort (DashScope's enable_thinking, GLM's
	// thinking.type, Kimi's thinking models by name).
	"dashscope": {"https://dashscope.aliyuncs.com/compatible-mode/v1", "max_tokens", false},
	"zhipu":     {"https://open.bigmodel.cn/api/paas/v4", "max_tokens", false},
	"moonshot":  {"https://api.moonshot.cn/v1", "max_tokens", false},
}

// ForPreset builds the provider for a named OpenAI-compatible server, with
// ep's BaseURL taking precedence over the preset's when set. Local servers
// (ollama, lmstudio, vllm) need no key.
func ForPreset(name string, ep llm.Endpoint) (*Provider, bool) {
	cfg, ok := PresetConfig(name, ep)
	if !ok {
		return nil, false
	}
	return New(cfg), true
}

// PresetConfig is the Config ForPreset builds with, for callers that change
// more than the endpoint (New fills in the rest).
func PresetConfig(name string, ep llm.Endpoint) (Config, bool) {
	ps, ok := presets[name]
	if !ok {
		return Config{}, false
	}
	if ep.BaseURL == "" {
		ep.BaseURL = ps.baseURL
	}
	return Config{Endpoint: ep, Name: name, MaxTokensField: ps.maxTokensField, ReasoningEffort: ps.reasoningEffort}, true
}

// PresetNames lists the presets ForPreset knows, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Stream sends req and yields the strictly framed response.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		f := llm.NewFramer(yield)
		name := p.cfg.Name
		body, err := encodeRequest(req, &p.cfg)
		if err != nil {
			f.Fail(name, err)
			return
		}
		key, err := p.cfg.Key()
		if err != nil {
			f.Fail(name, err)
			return
		}
		hdr := http.Header{
			"Content-Type": {"application/json"},
			"Accept":       {"text/event-stream"},
		}
		if key != "" {
			hdr["Authorization"] = []string{"Bearer " + key}
		}
		resp, err := wire.Post(ctx, &p.cfg.Endpoint, name, p.url, body, hdr)
		if err != nil {
			p.cfg.Report(key, err)
			f.Fail(name, err)
			return
		}
		defer resp.Close()
		if resp.StatusCode/100 != 2 {
			e := httpError(name, resp)
			p.cfg.Report(key, e)
			f.Fail(name, e)
			return
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			// Not a stream: an error some servers send with a 200, or a
			// server that ignored stream:true. Either way nothing streams,
			// and decoding it as SSE would lose the answer silently.
			e := notStreamed(name, resp)
			p.cfg.Report(key, e)
			f.Fail(name, e)
			return
		}
		err = decodeStream(ctx, name, resp, f)
		if f.Stopped() {
			return
		}
		p.cfg.Report(key, err)
		if err != nil {
			f.Fail(name, err)
		}
	}
}

var _ llm.Provider = (*Provider)(nil)
