package gemini_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/llmtest"
)

// The differential tests use go-genai, Google's official Go SDK, as the
// oracle: for the same conversation weft must send the same JSON body, and
// for the same stream it must decode the same content.

func genaiClient(t *testing.T, srv *llmtest.Server) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      "test-key",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL + "/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func normJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	return v
}

func sigBytes(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

const (
	sigA = "CiIB0e2Kb3a4gkvo"
	sigB = "EjQKMgEAAQIDBAUG"
	sigC = "c2lnbmF0dXJlLUM="
)

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}`)

var weatherTool = llm.ToolSpec{Name: "get_weather", Description: "Get current weather for a city", InputSchema: weatherSchema}

func genaiWeatherTool() []*genai.Tool {
	return []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather", Description: "Get current weather for a city", ParametersJsonSchema: weatherSchema,
	}}}}
}

func userTurn(parts ...*genai.Part) *genai.Content { return &genai.Content{Role: "user", Parts: parts} }
func modelTurn(parts ...*genai.Part) *genai.Content {
	return &genai.Content{Role: "model", Parts: parts}
}

type requestCase struct {
	name     string
	req      llm.Request
	contents []*genai.Content
	cfg      *genai.GenerateContentConfig
}

func requestCases() []requestCase {
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}
	return []requestCase{
		{
			name:     "plain",
			req:      llm.Request{Messages: []llm.Message{llm.UserText("Hello")}},
			contents: []*genai.Content{userTurn(genai.NewPartFromText("Hello"))},
		},
		{
			name: "system",
			req: llm.Request{System: []llm.Block{llm.Text("You are terse."), llm.Text("Answer in French.")},
				Messages: []llm.Message{llm.UserText("Hi")}},
			contents: []*genai.Content{userTurn(genai.NewPartFromText("Hi"))},
			cfg: &genai.GenerateContentConfig{SystemInstruction: &genai.Content{Parts: []*genai.Part{
				genai.NewPartFromText("You are terse."), genai.NewPartFromText("Answer in French.")}}},
		},
		{
			name:     "tools, auto",
			req:      llm.Request{Messages: []llm.Message{llm.UserText("Weather?")}, Tools: []llm.ToolSpec{weatherTool, {Name: "now"}}},
			contents: []*genai.Content{userTurn(genai.NewPartFromText("Weather?"))},
			cfg: &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{
				genaiWeatherTool()[0].FunctionDeclarations[0], {Name: "now"}}}}},
		},
		{
			name: "tools, any",
			req: llm.Request{Messages: []llm.Message{llm.UserText("Weather?")}, Tools: []llm.ToolSpec{weatherTool},
				ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceAny}},
			contents: []*genai.Content{userTurn(genai.NewPartFromText("Weather?"))},
			cfg: &genai.GenerateContentConfig{Tools: genaiWeatherTool(),
				ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}}},
		},
		{
			name: "tools, none",
			req: llm.Request{Messages: []llm.Message{llm.UserText("Weather?")}, Tools: []llm.ToolSpec{weatherTool},
				ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}},
			contents: []*genai.Content{userTurn(genai.NewPartFromText("Weather?"))},
			cfg: &genai.GenerateContentConfig{Tools: genaiWeatherTool(),
				ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}}},
		},
		{
			// DisableParallel has no Gemini counterpart and is dropped.
			name: "tools, named tool",
			req: llm.Request{Messages: []llm.Message{llm.UserText("Weather?")}, Tools: []llm.ToolSpec{weatherTool},
				ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather", DisableParallel: true}},
			contents: []*genai.Content{userTurn(genai.NewPartFromText("Weather?"))},
			cfg: &genai.GenerateContentConfig{Tools: genaiWeatherTool(),
				ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
					Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{"get_weather"}}}},
		},
		{
			name: "multi-turn function calling with signatures",
			req: llm.Request{Tools: []llm.ToolSpec{weatherTool}, Messages: []llm.Message{
				llm.UserText("Weather in Paris and Rome?"),
				{Role: llm.RoleAssistant, Content: []llm.Block{
					llm.Thinking("**Planning**", map[string]string{gemini.MetaThoughtSignature: sigA}),
					llm.Text("Checking both."),
					{Type: llm.BlockToolUse, ToolUseID: "gemini_call_r1_1_get_weather", ToolName: "get_weather",
						Input: json.RawMessage(`{"city": "Paris"}`),
						Meta:  map[string]string{gemini.MetaSyntheticID: "1", gemini.MetaThoughtSignature: sigB}},
					llm.ToolUse("fc_rome", "get_weather", json.RawMessage(`{"city":"Rome"}`)),
				}},
				{Role: llm.RoleUser, Content: []llm.Block{
					llm.ToolResult("gemini_call_r1_1_get_weather", false, llm.Text("18°C"), llm.Text("cloudy")),
					llm.ToolResult("fc_rome", true, llm.Text("weather service timed out")),
				}},
				{Role: llm.RoleAssistant, Content: []llm.Block{
					{Type: llm.BlockText, Text: "Paris: 18°C.", Meta: map[string]string{gemini.MetaThoughtSignature: sigC}},
				}},
				llm.UserText("Thanks"),
			}},
			contents: []*genai.Content{
				userTurn(genai.NewPartFromText("Weather in Paris and Rome?")),
				modelTurn(
					&genai.Part{Text: "**Planning**", Thought: true, ThoughtSignature: sigBytes(sigA)},
					genai.NewPartFromText("Checking both."),
					&genai.Part{FunctionCall: &genai.FunctionCall{Name: "get_weather", Args: map[string]any{"city": "Paris"}}, ThoughtSignature: sigBytes(sigB)},
					&genai.Part{FunctionCall: &genai.FunctionCall{ID: "fc_rome", Name: "get_weather", Args: map[string]any{"city": "Rome"}}},
				),
				userTurn(
					&genai.Part{FunctionResponse: &genai.FunctionResponse{Name: "get_weather", Response: map[string]any{"output": "18°C\ncloudy"}}},
					&genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "fc_rome", Name: "get_weather", Response: map[string]any{"error": "weather service timed out"}}},
				),
				modelTurn(&genai.Part{Text: "Paris: 18°C.", ThoughtSignature: sigBytes(sigC)}),
				userTurn(genai.NewPartFromText("Thanks")),
			},
			cfg: &genai.GenerateContentConfig{Tools: genaiWeatherTool()},
		},
		{
			// Thinking without a Gemini signature (another provider's, or an
			// unsigned summary) and empty text blocks are not sent; a call
			// with empty arguments goes without args, as go-genai sends it.
			name: "dropped blocks and empty arguments",
			req: llm.Request{Messages: []llm.Message{
				llm.UserText("Time?"),
				{Role: llm.RoleAssistant, Content: []llm.Block{
					llm.Thinking("anthropic reasoning", map[string]string{"anthropic.signature": "EqQBCkYIBxgCKkA"}),
					llm.Thinking("unsigned summary", nil),
					llm.Text(""),
					{Type: llm.BlockToolUse, ToolUseID: "gemini_call_2_now", ToolName: "now", Input: json.RawMessage(`{ }`),
						Meta: map[string]string{gemini.MetaSyntheticID: "1"}},
				}},
				{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("gemini_call_2_now", false)}},
			}},
			contents: []*genai.Content{
				userTurn(genai.NewPartFromText("Time?")),
				modelTurn(&genai.Part{FunctionCall: &genai.FunctionCall{Name: "now", Args: map[string]any{}}}),
				userTurn(&genai.Part{FunctionResponse: &genai.FunctionResponse{Name: "now", Response: map[string]any{"output": ""}}}),
			},
		},
		{
			name: "images",
			req: llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
				llm.Text("What is in these?"),
				llm.Image("image/png", png),
				{Type: llm.BlockImage, MediaType: "image/jpeg", URL: "https://example.com/cat.jpg"},
				{Type: llm.BlockImage, URL: "data:image/webp;base64," + base64.StdEncoding.EncodeToString(png)},
			}}}},
			contents: []*genai.Content{userTurn(
				genai.NewPartFromText("What is in these?"),
				genai.NewPartFromBytes(png, "image/png"),
				genai.NewPartFromURI("https://example.com/cat.jpg", "image/jpeg"),
				genai.NewPartFromBytes(png, "image/webp"),
			)},
		},
		{
			// An image in a tool result follows its functionResponse.
			name: "image in a tool result",
			req: llm.Request{Messages: []llm.Message{
				llm.UserText("Screenshot please"),
				{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("shot_1", "screenshot", json.RawMessage(`{}`))}},
				{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("shot_1", false, llm.Text("taken"), llm.Image("image/png", png))}},
			}},
			contents: []*genai.Content{
				userTurn(genai.NewPartFromText("Screenshot please")),
				modelTurn(&genai.Part{FunctionCall: &genai.FunctionCall{ID: "shot_1", Name: "screenshot"}}),
				userTurn(
					&genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "shot_1", Name: "screenshot", Response: map[string]any{"output": "taken"}}},
					genai.NewPartFromBytes(png, "image/png"),
				),
			},
		},
		{
			name: "stop sequences and sampling",
			req: llm.Request{Messages: []llm.Message{llm.UserText("Count")}, MaxTokens: 512,
				Temperature: llm.Float(0.3), TopP: llm.Float(0.95), TopK: llm.Int(40), StopSequences: []string{"</answer>", "\n\n"}},
			contents: []*genai.Content{userTurn(genai.NewPartFromText("Count"))},
			cfg: &genai.GenerateContentConfig{MaxOutputTokens: 512, Temperature: genai.Ptr[float32](0.3), TopP: genai.Ptr[float32](0.95),
				TopK: genai.Ptr[float32](40), StopSequences: []string{"</answer>", "\n\n"}},
		},
	}
}

func thinkingCases() []requestCase {
	var out []requestCase
	for _, lvl := range []llm.ThinkingLevel{llm.ThinkingNone, llm.ThinkingLow, llm.ThinkingMedium, llm.ThinkingHigh, llm.ThinkingXHigh} {
		c := requestCase{
			name:     "thinking " + string(lvl),
			req:      llm.Request{Messages: []llm.Message{llm.UserText("Think")}, Thinking: lvl, MaxTokens: 40000},
			contents: []*genai.Content{userTurn(genai.NewPartFromText("Think"))},
			cfg:      &genai.GenerateContentConfig{MaxOutputTokens: 40000},
		}
		if b := lvl.Budget(); b > 0 {
			c.cfg.ThinkingConfig = &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: genai.Ptr(int32(b))}
		}
		out = append(out, c)
	}
	return out
}

func TestDifferentialRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range append(requestCases(), thinkingCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewGemini(t).Push(llmtest.Text("ok"), llmtest.Text("ok"))
			req := tc.req
			req.Model = model
			if r := llm.Collect(newProvider(srv, nil).Stream(context.Background(), &req)); r.Outcome.Status != llm.StatusCompleted {
				t.Fatalf("weft: %+v", r.Outcome)
			}
			for _, err := range genaiClient(t, srv).Models.GenerateContentStream(context.Background(), model, tc.contents, tc.cfg) {
				if err != nil {
					t.Fatalf("genai: %v", err)
				}
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			w, g := reqs[0], reqs[1]
			if w.Path != g.Path {
				t.Fatalf("path: weft %s, genai %s", w.Path, g.Path)
			}
			if w.Header.Get("X-Goog-Api-Key") != g.Header.Get("X-Goog-Api-Key") {
				t.Fatalf("key header: weft %q, genai %q", w.Header.Get("X-Goog-Api-Key"), g.Header.Get("X-Goog-Api-Key"))
			}
			// The one normalisation: go-genai sends "generationConfig":{} for
			// any non-nil config, even one without generation fields. An
			// empty object means the defaults, as its absence does.
			gj := normJSON(t, g.Body)
			if gc, ok := gj.(map[string]any)["generationConfig"].(map[string]any); ok && len(gc) == 0 {
				delete(gj.(map[string]any), "generationConfig")
			}
			if wj := normJSON(t, w.Body); !reflect.DeepEqual(wj, gj) {
				t.Fatalf("bodies differ\nweft:  %s\ngenai: %s", w.Body, g.Body)
			}
		})
	}
}

// decoded is what both clients must agree on for one stream.
type decoded struct {
	Text, Thought string
	Calls         []string // "name args"
	Signatures    []string // base64, in stream order
	Usage         llm.Usage
	Stop          llm.StopReason
}

func weftDecoded(r llm.Result) decoded {
	var d decoded
	for _, b := range r.Message.Content {
		switch b.Type {
		case llm.BlockText:
			d.Text += b.Text
		case llm.BlockThinking:
			d.Thought += b.Text
		case llm.BlockToolUse:
			d.Calls = append(d.Calls, b.ToolName+" "+string(b.Input))
		}
		if s := b.MetaValue(gemini.MetaThoughtSignature); s != "" {
			d.Signatures = append(d.Signatures, s)
		}
	}
	d.Usage, d.Stop = r.Usage, r.Outcome.StopReason
	return d
}

// genaiDecoded concatenates go-genai's chunks; go-genai has no accumulator.
func genaiDecoded(t *testing.T, seq func(func(*genai.GenerateContentResponse, error) bool)) decoded {
	t.Helper()
	var d decoded
	var last *genai.GenerateContentResponseUsageMetadata
	var finish genai.FinishReason
	for resp, err := range seq {
		if err != nil {
			t.Fatalf("genai: %v", err)
		}
		if resp.UsageMetadata != nil {
			last = resp.UsageMetadata
		}
		for _, c := range resp.Candidates {
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
			if c.Content == nil {
				continue
			}
			for _, p := range c.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					args, _ := json.Marshal(p.FunctionCall.Args)
					if p.FunctionCall.Args == nil {
						args = []byte("{}")
					}
					d.Calls = append(d.Calls, p.FunctionCall.Name+" "+string(args))
				case p.Thought:
					d.Thought += p.Text
				default:
					d.Text += p.Text
				}
				if len(p.ThoughtSignature) > 0 {
					d.Signatures = append(d.Signatures, base64.StdEncoding.EncodeToString(p.ThoughtSignature))
				}
			}
		}
	}
	if last != nil {
		d.Usage = llm.Usage{
			InputTokens:     int(last.PromptTokenCount - last.CachedContentTokenCount),
			CacheReadTokens: int(last.CachedContentTokenCount),
			OutputTokens:    int(last.CandidatesTokenCount + last.ThoughtsTokenCount),
			ReasoningTokens: int(last.ThoughtsTokenCount),
		}
	}
	switch finish {
	case genai.FinishReasonStop:
		d.Stop = llm.StopEndTurn
		if len(d.Calls) > 0 {
			d.Stop = llm.StopToolUse
		}
	case genai.FinishReasonMaxTokens:
		d.Stop = llm.StopMaxTokens
	case genai.FinishReasonSafety, genai.FinishReasonRecitation:
		d.Stop = llm.StopRefusal
	default:
		t.Fatalf("unmapped finish reason %q", finish)
	}
	return d
}

func decodeScripts() map[string]llmtest.Script {
	long := make([]string, 40)
	for i := range long {
		long[i] = fmt.Sprintf("word%d ", i)
	}
	return map[string]llmtest.Script{
		"text":  {Blocks: []llmtest.Block{llmtest.TextBlock("Hello! How can I", " help you today?")}, Usage: llm.Usage{InputTokens: 2, OutputTokens: 9}},
		"long":  {Blocks: []llmtest.Block{llmtest.TextBlock(long...)}, Usage: llm.Usage{InputTokens: 20, OutputTokens: 80}},
		"empty": {StopReason: llm.StopMaxTokens, Usage: llm.Usage{InputTokens: 5}},
		"thoughts, signed text, call": {Blocks: []llmtest.Block{
			llmtest.ThinkingBlock("", "**Planning the lookup**\n\n", "I should call get_weather.\n\n"),
			{Type: llm.BlockText, Chunks: []string{"Checking the weather for Paris.\n"}, Signature: sigA},
			llmtest.ToolBlock("", "get_weather", `{"city":`, ` "Paris", "units": ["c", 1, true, null]}`),
		}, Usage: llm.Usage{InputTokens: 391, OutputTokens: 103, ReasoningTokens: 72}},
		"parallel calls": {Blocks: []llmtest.Block{
			{Type: llm.BlockToolUse, Name: "read", Chunks: []string{`{"path":"a.go","n":{"deep":[1.5,2]}}`}, Signature: sigB},
			llmtest.ToolBlock("id_2", "read", `{"path":"b.go"}`),
		}, Usage: llm.Usage{InputTokens: 100, CacheReadTokens: 4000, OutputTokens: 40}},
		"signed thinking, trailing signature": {Blocks: []llmtest.Block{
			llmtest.ThinkingBlock(sigC, "hmm", " ok"),
			llmtest.TextBlock("Done", "."),
			{Type: llm.BlockText, Signature: sigA},
		}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 30, ReasoningTokens: 20}},
		"max tokens": {Blocks: []llmtest.Block{llmtest.TextBlock("cut sho")}, StopReason: llm.StopMaxTokens},
		"safety":     {Blocks: []llmtest.Block{llmtest.TextBlock("I can")}, StopReason: llm.StopRefusal},
		"recitation": {Blocks: []llmtest.Block{llmtest.TextBlock("Once upon")}, StopReason: "RECITATION"},
	}
}

func TestDifferentialDecode(t *testing.T) {
	t.Parallel()
	for name, sc := range decodeScripts() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewGemini(t).Push(sc, sc)
			evs := drain(context.Background(), newProvider(srv, nil), ask("q"))
			if err := framingError(evs); err != nil {
				t.Fatal(err)
			}
			r := result(evs)
			if r.Outcome.Status != llm.StatusCompleted {
				t.Fatalf("weft: %+v", r.Outcome)
			}
			// Both clients see the same bytes: the fake is deterministic for
			// a request, and both send the same body.
			g := genaiDecoded(t, genaiClient(t, srv).Models.GenerateContentStream(context.Background(), model,
				[]*genai.Content{userTurn(genai.NewPartFromText("q"))}, nil))
			w := weftDecoded(r)
			// go-genai decodes args into map[string]any; compare as JSON.
			for i := range w.Calls {
				w.Calls[i] = canonCall(t, w.Calls[i])
			}
			for i := range g.Calls {
				g.Calls[i] = canonCall(t, g.Calls[i])
			}
			if !reflect.DeepEqual(w, g) {
				t.Fatalf("decoded differently\nweft:  %+v\ngenai: %+v", w, g)
			}
		})
	}
}

func canonCall(t *testing.T, s string) string {
	t.Helper()
	name, args, _ := strings.Cut(s, " ")
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Fatalf("call %s args %s: %v", name, args, err)
	}
	b, _ := json.Marshal(v)
	return name + " " + string(b)
}

// TestDifferentialErrors: both clients see the in-stream error line as an
// error, and agree on its status.
func TestDifferentialErrors(t *testing.T) {
	t.Parallel()
	for _, sc := range []llmtest.Script{
		{Status: 429, RetryAfter: 37e9},
		{Status: 400, ErrorType: "API_KEY_INVALID"},
		{Status: 503},
		{Blocks: []llmtest.Block{llmtest.TextBlock("a", "b")}, ErrorAfter: 1, ErrorType: "UNAVAILABLE"},
	} {
		srv := llmtest.NewGemini(t).Push(sc, sc)
		r := llm.Collect(newProvider(srv, nil).Stream(context.Background(), ask("q")))
		e := llmErr(t, r.Outcome)
		var apiErr genai.APIError
		for _, err := range genaiClient(t, srv).Models.GenerateContentStream(context.Background(), model,
			[]*genai.Content{userTurn(genai.NewPartFromText("q"))}, nil) {
			if err != nil {
				var ok bool
				if apiErr, ok = err.(genai.APIError); !ok {
					t.Fatalf("genai error %T %v", err, err)
				}
			}
		}
		if apiErr.Status != e.Type || apiErr.Message != e.Message {
			t.Fatalf("genai %+v, weft %+v", apiErr, e)
		}
	}
}
