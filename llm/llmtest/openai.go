package llmtest

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/weft-run/weft/llm"
)

// OpenAIProtocol renders scripts as an OpenAI Chat Completions stream, or
// the variants of the compatible servers (see the fields). The zero value
// is OpenAI itself, with DeepSeek's reasoning_content for thinking blocks.
type OpenAIProtocol struct {
	// ReasoningField is the delta field thinking blocks stream in:
	// "reasoning_content" (DeepSeek, llama.cpp; the default) or "reasoning"
	// (Ollama, vLLM, OpenRouter, LM Studio).
	ReasoningField string
	// WholeToolCalls sends each tool call whole in one chunk, as Ollama
	// does, instead of an opening fragment and one per argument chunk.
	WholeToolCalls bool
	// NoDone leaves out the closing "data: [DONE]".
	NoDone bool
	// Refusal streams text blocks as refusal deltas.
	Refusal bool
	// FinishReason, when set, replaces the finish_reason mapped from the
	// script's stop reason (e.g. "function_call").
	FinishReason string
}

// OpenAIOption configures NewOpenAI's protocol.
type OpenAIOption func(*OpenAIProtocol)

// OpenAIReasoningField sets the delta field thinking blocks stream in.
func OpenAIReasoningField(name string) OpenAIOption {
	return func(p *OpenAIProtocol) { p.ReasoningField = name }
}

// OpenAIWholeToolCalls sends every tool call whole in one chunk (Ollama).
func OpenAIWholeToolCalls() OpenAIOption { return func(p *OpenAIProtocol) { p.WholeToolCalls = true } }

// OpenAINoDone omits the closing [DONE].
func OpenAINoDone() OpenAIOption { return func(p *OpenAIProtocol) { p.NoDone = true } }

// OpenAIRefusal streams text blocks as refusal deltas.
func OpenAIRefusal() OpenAIOption { return func(p *OpenAIProtocol) { p.Refusal = true } }

// OpenAIFinishReason overrides the finish_reason sent.
func OpenAIFinishReason(reason string) OpenAIOption {
	return func(p *OpenAIProtocol) { p.FinishReason = reason }
}

// NewOpenAI starts a fake OpenAI-compatible server. Point a client at
// URL + "/v1".
func NewOpenAI(t testing.TB, opts ...OpenAIOption) *Server {
	p := &OpenAIProtocol{}
	for _, o := range opts {
		o(p)
	}
	return NewServer(t, p)
}

var openaiSeq atomic.Int64

type openaiChunk struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	SystemFingerprint string         `json:"system_fingerprint"`
	Choices           []openaiChoice `json:"choices"`
	// Usage is null on every chunk but the last when the request asked
	// for usage, and absent when it did not.
	Usage any `json:"usage,omitempty"`
}

type openaiChoice struct {
	Index        int            `json:"index"`
	Delta        map[string]any `json:"delta"`
	Logprobs     any            `json:"logprobs"`
	FinishReason any            `json:"finish_reason"`
}

type openaiNull struct{}

func (openaiNull) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// Frames renders sc as chunks: the role in the first delta, each tool
// call's id, type and name in its first fragment, finish_reason on the last
// choice chunk, usage once in a chunk with no choices (only when the
// request set stream_options.include_usage), then [DONE].
func (p *OpenAIProtocol) Frames(sc *Script, req *Request) []string {
	model, includeUsage := "gpt-test", false
	if req != nil {
		body := req.JSON()
		if m, ok := body["model"].(string); ok && m != "" {
			model = m
		}
		if so, ok := body["stream_options"].(map[string]any); ok {
			includeUsage, _ = so["include_usage"].(bool)
		}
	}
	base := openaiChunk{
		ID:                "chatcmpl-weft" + strconv.FormatInt(openaiSeq.Add(1), 10),
		Object:            "chat.completion.chunk",
		Created:           1754000000,
		Model:             model,
		SystemFingerprint: "fp_weft",
	}
	if includeUsage {
		base.Usage = openaiNull{}
	}
	var frames []string
	role := true
	emit := func(delta map[string]any, finish any) {
		if role {
			delta["role"] = "assistant"
			role = false
		}
		c := base
		c.Choices = []openaiChoice{{Index: 0, Delta: delta, Logprobs: openaiNull{}, FinishReason: finish}}
		frames = append(frames, "data: "+MustJSON(c)+"\n\n")
	}
	null := openaiNull{}
	if len(sc.Blocks) == 0 || sc.Blocks[0].Type == llm.BlockText {
		// OpenAI opens a text answer with a chunk carrying only the role.
		emit(map[string]any{"content": "", "refusal": null}, null)
	}
	field := p.ReasoningField
	if field == "" {
		field = "reasoning_content"
	}
	tool := 0
	for _, b := range sc.Blocks {
		switch b.Type {
		case llm.BlockThinking:
			for _, c := range b.Chunks {
				d := map[string]any{field: c, "content": null}
				if field == "reasoning" {
					d["content"] = "" // Ollama's shape
				}
				emit(d, null)
			}
		case llm.BlockText:
			key := "content"
			if p.Refusal {
				key = "refusal"
			}
			for _, c := range b.Chunks {
				emit(map[string]any{key: c}, null)
			}
		case llm.BlockToolUse:
			fn := map[string]any{"name": b.Name, "arguments": ""}
			if p.WholeToolCalls {
				fn["arguments"] = b.Joined()
			}
			emit(map[string]any{"content": null, "tool_calls": []any{
				map[string]any{"index": tool, "id": b.ID, "type": "function", "function": fn}}}, null)
			if !p.WholeToolCalls {
				for _, c := range b.Chunks {
					emit(map[string]any{"tool_calls": []any{
						map[string]any{"index": tool, "function": map[string]any{"arguments": c}}}}, null)
				}
			}
			tool++
		}
	}
	emit(map[string]any{}, p.finishReason(sc))
	if includeUsage {
		u := sc.Usage
		prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
		c := base
		c.Choices = []openaiChoice{}
		c.Usage = map[string]any{
			"prompt_tokens":     prompt,
			"completion_tokens": u.OutputTokens,
			"total_tokens":      prompt + u.OutputTokens,
			"prompt_tokens_details": map[string]any{
				"cached_tokens": u.CacheReadTokens, "audio_tokens": 0},
			"completion_tokens_details": map[string]any{
				"reasoning_tokens": u.ReasoningTokens, "audio_tokens": 0,
				"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
		}
		frames = append(frames, "data: "+MustJSON(c)+"\n\n")
	}
	if !p.NoDone {
		frames = append(frames, "data: [DONE]\n\n")
	}
	return frames
}

func (p *OpenAIProtocol) finishReason(sc *Script) string {
	if p.FinishReason != "" {
		return p.FinishReason
	}
	switch sc.Stop() {
	case llm.StopMaxTokens:
		return "length"
	case llm.StopToolUse:
		return "tool_calls"
	case llm.StopRefusal:
		if p.Refusal {
			return "stop"
		}
		return "content_filter"
	}
	return "stop"
}

// openaiTypes are the values OpenAI puts in an error's type (as opposed to
// its code).
var openaiTypes = map[string]bool{
	"invalid_request_error": true, "server_error": true, "tokens": true, "requests": true,
	"insufficient_quota": true, "api_error": true, "not_found_error": true,
}

// openaiError is the error object OpenAI would send for sc, by status.
func openaiError(sc *Script, status int) map[string]any {
	typ, code, msg := "invalid_request_error", any(nil), "Invalid request."
	var param any
	switch {
	case status == 401:
		code, msg = "invalid_api_key", "Incorrect API key provided: sk-test****. You can find your API key at https://platform.openai.com/account/api-keys."
	case status == 403:
		code, msg = "unsupported_country_region_territory", "Country, region, or territory not supported"
	case status == 404:
		code, msg = "model_not_found", "The model `gpt-test` does not exist or you do not have access to it."
	case status == 429:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for gpt-test on requests per min (RPM): Limit 3, Used 3, Requested 1."
	case status == 503 || status == 529:
		typ, msg = "server_error", "The engine is currently overloaded, please try again later"
	case status >= 500 || status == 0:
		typ, msg = "server_error", "The server had an error while processing your request. Sorry about that!"
	}
	switch {
	case sc.ErrorType == "insufficient_quota":
		typ, code, msg = "insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."
	case sc.ErrorType == "context_length_exceeded":
		code, param = "context_length_exceeded", "messages"
	case openaiTypes[sc.ErrorType]:
		// A type without a code, as the compatible servers send errors
		// (Ollama: a 404 of type api_error for a model it does not have).
		typ, code = sc.ErrorType, nil
	case sc.ErrorType != "":
		code = sc.ErrorType
	}
	if sc.ErrorMessage != "" {
		msg = sc.ErrorMessage
	}
	return map[string]any{"message": msg, "type": typ, "param": param, "code": code}
}

// ErrorBody renders {"error":{message,type,param,code}} with the type and
// code OpenAI uses for the status, an x-request-id header, and retry-after
// when the script sets RetryAfter.
func (p *OpenAIProtocol) ErrorBody(sc *Script, h http.Header) []byte {
	h.Set("x-request-id", "req_weft"+strconv.FormatInt(openaiSeq.Add(1), 10))
	if sc.RetryAfter > 0 {
		h.Set("retry-after", strconv.FormatFloat(sc.RetryAfter.Seconds(), 'f', -1, 64))
	}
	return []byte(MustJSON(map[string]any{"error": openaiError(sc, sc.Status)}))
}

// ErrorFrame renders data: {"error":{...}}, a server_error unless the
// script's ErrorType says otherwise.
func (p *OpenAIProtocol) ErrorFrame(sc *Script) string {
	return "data: " + MustJSON(map[string]any{"error": openaiError(sc, 0)}) + "\n\n"
}

// MalformedFrame renders a data frame that is not JSON.
func (p *OpenAIProtocol) MalformedFrame() string { return "data: {not json\n\n" }

var _ Protocol = (*OpenAIProtocol)(nil)
