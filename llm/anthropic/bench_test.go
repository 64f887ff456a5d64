package anthropic_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
)

// benchScript is a representative tool-calling turn: a thinking block,
// ~150 text deltas of a few words, then two tool calls whose arguments
// arrive in ~10 fragments each.
func benchScript() llmtest.Script {
	thinking := make([]string, 20)
	for i := range thinking {
		thinking[i] = "considering step " + strconv.Itoa(i) + " of the plan, "
	}
	text := make([]string, 150)
	for i := range text {
		text[i] = []string{"The file ", "has three ", "functions that ", "need a ", "closer look. "}[i%5]
	}
	frag := func(path string) []string {
		args := `{"path": "` + path + `", "offset": 120, "limit": 400, "pattern": "func .*Stream\\(", "context": 3}`
		var out []string
		for i := 0; i < len(args); i += len(args)/10 + 1 {
			out = append(out, args[i:min(i+len(args)/10+1, len(args))])
		}
		return out
	}
	return llmtest.Script{
		Blocks: []llmtest.Block{
			llmtest.ThinkingBlock("EqQBCgIYAhIMbenchsignature0123456789", thinking...),
			llmtest.TextBlock(text...),
			llmtest.ToolBlock("toolu_01A09q90qw90lq917835lq9", "read_file", frag("llm/anthropic/decode.go")...),
			llmtest.ToolBlock("toolu_01B19q90qw90lq917835lq9", "grep", frag("llm/openai/decode.go")...),
		},
		Usage: llm.Usage{InputTokens: 2472, OutputTokens: 689, CacheReadTokens: 18300, CacheWriteTokens: 120},
	}
}

// benchServer serves the pre-rendered stream from a tiny handler, so that
// the server's own allocations are small and the same for all clients.
func benchServer(b *testing.B) string {
	sc := benchScript()
	body := []byte(strings.Join(llmtest.AnthropicProtocol{}.Frames(&sc, nil), ""))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sink [4096]byte
		for {
			if _, err := r.Body.Read(sink[:]); err != nil {
				break
			}
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("request-id", "req_bench")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

func benchRequest() *llm.Request {
	return &llm.Request{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
		System:    llm.SystemText("You are a coding agent."),
		Messages:  []llm.Message{llm.UserText("Find where streams are decoded.")},
		Tools: []llm.ToolSpec{
			{Name: "read_file", Description: "Read a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "grep", Description: "Search files", InputSchema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}`)},
		},
	}
}

// The bare client: what a person writes in 60 lines with net/http, bufio
// and encoding/json, with no framing guarantees.
type bareEvent struct {
	Type         string `json:"type"`
	ContentBlock struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Message struct {
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	} `json:"message"`
	Usage struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

type bareTool struct {
	ID, Name string
	Args     strings.Builder
}

type bareResult struct {
	Text, Thinking, Signature strings.Builder
	Tools                     []*bareTool
	Stop                      string
	In, Out                   int
}

func bareStream(client *http.Client, url string, req *llm.Request) (*bareResult, error) {
	body, err := json.Marshal(map[string]any{"model": req.Model, "max_tokens": req.MaxTokens, "stream": true,
		"system": req.System[0].Text, "messages": []map[string]any{{"role": "user", "content": req.Messages[0].Content[0].Text}},
		"tools": req.Tools})
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequest(http.MethodPost, url+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("X-Api-Key", "sk-ant-bench")
	hr.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := &bareResult{}
	done := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		var ev bareEvent
		if err := json.Unmarshal(line[6:], &ev); err != nil {
			return nil, err
		}
		switch ev.Type {
		case "message_start":
			r.In = ev.Message.Usage.InputTokens
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				r.Tools = append(r.Tools, &bareTool{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				r.Text.WriteString(ev.Delta.Text)
			case "thinking_delta":
				r.Thinking.WriteString(ev.Delta.Thinking)
			case "signature_delta":
				r.Signature.WriteString(ev.Delta.Signature)
			case "input_json_delta":
				r.Tools[len(r.Tools)-1].Args.WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			r.Stop, r.Out = ev.Delta.StopReason, ev.Usage.OutputTokens
		case "message_stop":
			done = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !done {
		return nil, fmt.Errorf("stream ended without message_stop")
	}
	return r, nil
}

func BenchmarkStream(b *testing.B) {
	url := benchServer(b)
	req := benchRequest()
	want := benchScript().Blocks[1].Joined()

	b.Run("weft", func(b *testing.B) {
		p := anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: url, APIKey: "sk-ant-bench"}})
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			r := llm.Collect(p.Stream(ctx, req))
			if r.Outcome.Status != llm.StatusCompleted || len(r.Message.Content) != 4 {
				b.Fatalf("outcome %+v", r.Outcome)
			}
		}
		r := llm.Collect(p.Stream(ctx, req))
		if r.Message.Text() != want || len(r.Message.ToolUses()) != 2 {
			b.Fatalf("weft decoded %q", r.Message.Text())
		}
	})

	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := bareStream(http.DefaultClient, url, req)
			if err != nil || len(r.Tools) != 2 {
				b.Fatal(err)
			}
		}
		r, _ := bareStream(http.DefaultClient, url, req)
		if r.Text.String() != want {
			b.Fatalf("bare decoded %q", r.Text.String())
		}
	})

	b.Run("sdk", func(b *testing.B) {
		client := sdkClient(url)
		params := sdk.MessageNewParams{
			Model: sdk.Model(req.Model), MaxTokens: int64(req.MaxTokens),
			System:   []sdk.TextBlockParam{{Text: req.System[0].Text}},
			Messages: []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(req.Messages[0].Content[0].Text))},
		}
		for _, t := range req.Tools {
			tp := &sdk.ToolParam{Name: t.Name, Description: sdk.String(t.Description)}
			tp.InputSchema.Properties = map[string]any{"path": map[string]any{"type": "string"}}
			params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: tp})
		}
		ctx := context.Background()
		run := func() sdk.Message {
			stream := client.Messages.NewStreaming(ctx, params)
			defer stream.Close()
			var msg sdk.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					b.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				b.Fatal(err)
			}
			return msg
		}
		b.ReportAllocs()
		for b.Loop() {
			if msg := run(); len(msg.Content) != 4 {
				b.Fatalf("%d blocks", len(msg.Content))
			}
		}
		if msg := run(); msg.Content[1].Text != want {
			b.Fatalf("sdk decoded %q", msg.Content[1].Text)
		}
	})
}
