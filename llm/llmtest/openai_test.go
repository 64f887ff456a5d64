package llmtest_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

func oaStream(t *testing.T, srv *llmtest.Server, usage bool) (*oa.ChatCompletionAccumulator, []oa.ChatCompletionChunk, error) {
	t.Helper()
	c := oa.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	params := oa.ChatCompletionNewParams{Model: "gpt-x", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}}
	if usage {
		params.StreamOptions.IncludeUsage = oa.Bool(true)
	}
	s := c.Chat.Completions.NewStreaming(t.Context(), params)
	acc := &oa.ChatCompletionAccumulator{}
	var chunks []oa.ChatCompletionChunk
	for s.Next() {
		ch := s.Current()
		if !acc.AddChunk(ch) {
			t.Fatalf("accumulator rejected %s", ch.RawJSON())
		}
		chunks = append(chunks, ch)
	}
	return acc, chunks, s.Err()
}

// TestOpenAIFakeWithSDK checks that openai-go reads the fake's streams as
// it reads OpenAI's.
func TestOpenAIFakeWithSDK(t *testing.T) {
	t.Parallel()
	sc := llmtest.Script{Blocks: []llmtest.Block{
		llmtest.TextBlock("Let me", " check."),
		llmtest.ToolBlock("call_1", "get_weather", `{"city":`, `"Paris"}`),
		llmtest.ToolBlock("call_2", "get_time", `{}`),
	}, Usage: llm.Usage{InputTokens: 10, CacheReadTokens: 5, OutputTokens: 7, ReasoningTokens: 2}}
	for _, tc := range []struct {
		name  string
		opts  []llmtest.OpenAIOption
		usage bool
	}{
		{"fragments with usage", nil, true},
		{"fragments without usage", nil, false},
		{"whole calls without done", []llmtest.OpenAIOption{llmtest.OpenAIWholeToolCalls(), llmtest.OpenAINoDone()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewOpenAI(t, tc.opts...).Push(sc)
			acc, chunks, err := oaStream(t, srv, tc.usage)
			if err != nil {
				t.Fatal(err)
			}
			m := acc.Choices[0].Message
			if m.Content != "Let me check." || len(m.ToolCalls) != 2 || m.ToolCalls[0].ID != "call_1" ||
				m.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` || m.ToolCalls[1].Function.Name != "get_time" ||
				acc.Choices[0].FinishReason != "tool_calls" || m.Role != "assistant" || acc.Model != "gpt-x" {
				t.Fatalf("accumulated %+v", acc.ChatCompletion)
			}
			usageChunks := 0
			for _, c := range chunks {
				if len(c.Choices) == 0 {
					usageChunks++
				}
			}
			wantUsage := oa.CompletionUsage{}
			if tc.usage {
				wantUsage = oa.CompletionUsage{PromptTokens: 15, CompletionTokens: 7, TotalTokens: 22}
				wantUsage.PromptTokensDetails.CachedTokens = 5
				wantUsage.CompletionTokensDetails.ReasoningTokens = 2
			}
			u := acc.Usage
			if usageChunks != map[bool]int{true: 1, false: 0}[tc.usage] || u.PromptTokens != wantUsage.PromptTokens ||
				u.CompletionTokens != wantUsage.CompletionTokens || u.TotalTokens != wantUsage.TotalTokens ||
				u.PromptTokensDetails.CachedTokens != wantUsage.PromptTokensDetails.CachedTokens ||
				u.CompletionTokensDetails.ReasoningTokens != wantUsage.CompletionTokensDetails.ReasoningTokens {
				t.Fatalf("usage %+v in %d chunks", u, usageChunks)
			}
		})
	}
}

func TestOpenAIFakeErrorsWithSDK(t *testing.T) {
	t.Parallel()
	cases := []struct {
		sc         llmtest.Script
		typ, code  string
		retryAfter string
	}{
		{llmtest.Script{Status: 400}, "invalid_request_error", "", ""},
		{llmtest.Script{Status: 400, ErrorType: "context_length_exceeded"}, "invalid_request_error", "context_length_exceeded", ""},
		{llmtest.Script{Status: 401}, "invalid_request_error", "invalid_api_key", ""},
		{llmtest.Script{Status: 404}, "invalid_request_error", "model_not_found", ""},
		{llmtest.Script{Status: 429, RetryAfter: 2 * time.Second}, "requests", "rate_limit_exceeded", "2"},
		{llmtest.Script{Status: 429, ErrorType: "insufficient_quota"}, "insufficient_quota", "insufficient_quota", ""},
		{llmtest.Script{Status: 500}, "server_error", "", ""},
		{llmtest.Script{Status: 503}, "server_error", "", ""},
	}
	for _, tc := range cases {
		t.Run(strings.Join([]string{http.StatusText(tc.sc.Status), tc.sc.ErrorType}, " "), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewOpenAI(t).Push(tc.sc)
			_, _, err := oaStream(t, srv, true)
			var e *oa.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v", err, err)
			}
			if e.StatusCode != tc.sc.Status || e.Type != tc.typ || e.Code != tc.code || e.Message == "" {
				t.Fatalf("%d %q %q %q", e.StatusCode, e.Type, e.Code, e.Message)
			}
			if e.Response.Header.Get("x-request-id") == "" || e.Response.Header.Get("retry-after") != tc.retryAfter {
				t.Fatalf("headers %v", e.Response.Header)
			}
		})
	}
}

func TestOpenAIFakeFaultsWithSDK(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t).Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, ErrorAfter: 2, ErrorType: "rate_limit_exceeded"},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, MalformedAt: 2},
	)
	_, _, err := oaStream(t, srv, true)
	var se *ssestream.StreamError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "rate_limit_exceeded") {
		t.Fatalf("error frame: %T %v", err, err)
	}
	if _, _, err := oaStream(t, srv, true); err == nil {
		t.Fatal("malformed frame accepted")
	}
}
