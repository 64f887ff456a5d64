package openai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
)

// benchScript is a representative tool-calling turn: reasoning, ~150 text
// deltas of a few words, then two tool calls whose arguments arrive in ten
// fragments each, usage and the stop.
func benchScript() llmtest.Script {
	var thinking, text []string
	for i := range 20 {
		thinking = append(thinking, fmt.Sprintf("step %d: weigh the options ", i))
	}
	for i := range 150 {
		text = append(text, fmt.Sprintf("and then %d more words ", i))
	}
	args := func(city string) []string {
		full := fmt.Sprintf(`{"city":"%s","unit":"celsius","days":3,"include":["wind","rain","uv"],"lang":"en-GB"}`, city)
		var out []string
		for i := 0; i < len(full); i += (len(full) + 9) / 10 {
			out = append(out, full[i:min(i+(len(full)+9)/10, len(full))])
		}
		return out
	}
	return llmtest.Script{
		Blocks: []llmtest.Block{
			llmtest.ThinkingBlock("", thinking...),
			llmtest.TextBlock(text...),
			llmtest.ToolBlock("call_bench_1", "get_weather", args("Paris")...),
			llmtest.ToolBlock("call_bench_2", "get_weather", args("Rome")...),
		},
		Usage: llm.Usage{InputTokens: 1200, CacheReadTokens: 3000, OutputTokens: 900, ReasoningTokens: 200},
	}
}

// benchServer serves one pre-rendered body to every request, so that the
// server's own cost is a single write (and the same for all three clients).
func benchServer(b *testing.B) (*httptest.Server, int) {
	sc := benchScript()
	body := []byte(strings.Join((&llmtest.OpenAIProtocol{}).Frames(&sc,
		&llmtest.Request{Body: []byte(`{"model":"gpt-4.1","stream_options":{"include_usage":true}}`)}), ""))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv, len(body)
}

func benchRequest() *llm.Request {
	return &llm.Request{Model: "gpt-4.1", System: llm.SystemText("You are a weather bot."),
		Messages: []llm.Message{llm.UserText("Weather in Paris and Rome for three days?")},
		Tools:    []llm.ToolSpec{weatherTool()}}
}

// BenchmarkStream compares weft's provider with a bare hand-written client
// and with openai-go, on the same loopback server and response. The
// in-process server's allocations are counted in all three alike.
func BenchmarkStream(b *testing.B) {
	srv, size := benchServer(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	const wantText = 150

	b.Run("weft", func(b *testing.B) {
		p := openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL + "/v1", APIKey: "sk-bench", HTTPClient: client}})
		req := benchRequest()
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			r := llm.Collect(p.Stream(context.Background(), req))
			if r.Outcome.Status != llm.StatusCompleted || len(r.Message.ToolUses()) != 2 || len(r.Message.Text()) < wantText {
				b.Fatalf("weft: %+v", r.Outcome)
			}
		}
	})

	b.Run("bare", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			text, calls, err := bareStream(client, srv.URL+"/v1/chat/completions", "sk-bench")
			if err != nil || len(calls) != 2 || len(text) < wantText {
				b.Fatalf("bare: %v", err)
			}
		}
	})

	b.Run("sdk", func(b *testing.B) {
		c := oa.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-bench"), option.WithMaxRetries(0), option.WithHTTPClient(client))
		params := oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(),
			Messages: []oa.ChatCompletionMessageParamUnion{oa.SystemMessage("You are a weather bot."), oa.UserMessage("Weather in Paris and Rome for three days?")},
			Tools:    []oa.ChatCompletionToolUnionParam{sdkWeatherTool()}}
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			s := c.Chat.Completions.NewStreaming(context.Background(), params)
			var acc oa.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if s.Err() != nil || len(acc.Choices) != 1 || len(acc.Choices[0].Message.ToolCalls) != 2 {
				b.Fatalf("sdk: %v", s.Err())
			}
			s.Close()
		}
	})
}

// bareStream is what a person would write in a hurry: no framing, no error
// classification, no idle timeout.
func bareStream(client *http.Client, url, key string) (string, []bareCall, error) {
	body, _ := json.Marshal(map[string]any{
		"model": "gpt-4.1", "stream": true, "stream_options": map[string]any{"include_usage": true},
		"messages": []map[string]any{{"role": "system", "content": "You are a weather bot."},
			{"role": "user", "content": "Weather in Paris and Rome for three days?"}},
		"tools": []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": weatherSchema}}},
	})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	var (
		text, reasoning strings.Builder
		calls           []bareCall
		chunk           bareChunk
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20) // long lines allowed, small start
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		data := line[6:]
		if bytes.Equal(data, []byte("[DONE]")) {
			break
		}
		chunk = bareChunk{}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return "", nil, err
		}
		for _, ch := range chunk.Choices {
			text.WriteString(ch.Delta.Content)
			reasoning.WriteString(ch.Delta.ReasoningContent)
			for _, tc := range ch.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, bareCall{})
				}
				if tc.ID != "" {
					calls[tc.Index].id, calls[tc.Index].name = tc.ID, tc.Function.Name
				}
				calls[tc.Index].args += tc.Function.Arguments
			}
		}
	}
	return text.String(), calls, sc.Err()
}

type bareCall struct{ id, name, args string }

type bareChunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}
