package anthropic_test

// Differential tests: anthropic-sdk-go v2 is the oracle. The same
// conversation must leave weft and the SDK as the same JSON body, and the
// same recorded stream must decode to the same message in both.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
)

func sdkClient(baseURL string) sdk.Client {
	return sdk.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(baseURL),
		option.WithAPIKey("sk-ant-test"),
		option.WithMaxRetries(0),
	)
}

func cacheParam(hint bool) sdk.CacheControlEphemeralParam {
	if hint {
		return sdk.NewCacheControlEphemeralParam()
	}
	return sdk.CacheControlEphemeralParam{}
}

// sdkMaxTokens mirrors the documented max_tokens rule of the provider.
func sdkMaxTokens(req *llm.Request) int64 {
	mt := req.MaxTokens
	if mt == 0 {
		mt = anthropic.DefaultMaxTokens
	}
	if b := req.Thinking.Budget(); b > 0 && mt <= b {
		mt = b + anthropic.DefaultMaxTokens
	}
	return int64(mt)
}

// toSDK spells req the way a person using anthropic-sdk-go would. The SDK's
// v2 params have no sampling fields (API version 2026-10-21 dropped them),
// so they go in with WithJSONSet, which is how the SDK sends extra fields.
func toSDK(t *testing.T, req *llm.Request) (sdk.MessageNewParams, []option.RequestOption) {
	t.Helper()
	p := sdk.MessageNewParams{Model: sdk.Model(req.Model), MaxTokens: sdkMaxTokens(req), StopSequences: req.StopSequences}
	var opts []option.RequestOption
	if req.Temperature != nil {
		opts = append(opts, option.WithJSONSet("temperature", *req.Temperature))
	}
	if req.TopP != nil {
		opts = append(opts, option.WithJSONSet("top_p", *req.TopP))
	}
	if req.TopK != nil {
		opts = append(opts, option.WithJSONSet("top_k", *req.TopK))
	}
	for _, b := range req.System {
		p.System = append(p.System, sdk.TextBlockParam{Text: b.Text, CacheControl: cacheParam(b.CacheHint)})
	}
	for _, m := range req.Messages {
		var blocks []sdk.ContentBlockParamUnion
		for _, b := range m.Content {
			if u, ok := sdkBlock(b); ok {
				blocks = append(blocks, u)
			}
		}
		if len(blocks) == 0 {
			continue
		}
		if m.Role == llm.RoleAssistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		}
	}
	for _, tl := range req.Tools {
		tp := &sdk.ToolParam{Name: tl.Name, CacheControl: cacheParam(tl.CacheHint)}
		if tl.Description != "" {
			tp.Description = sdk.String(tl.Description)
		}
		if len(tl.InputSchema) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(tl.InputSchema, &schema); err != nil {
				t.Fatal(err)
			}
			tp.InputSchema.Properties = schema["properties"]
			if req, ok := schema["required"].([]any); ok {
				for _, r := range req {
					tp.InputSchema.Required = append(tp.InputSchema.Required, r.(string))
				}
			}
			delete(schema, "properties")
			delete(schema, "required")
			delete(schema, "type")
			if len(schema) > 0 {
				tp.InputSchema.ExtraFields = schema
			}
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	tc := req.ToolChoice
	var dp = sdk.Bool(true)
	switch tc.Mode {
	case llm.ToolChoiceAuto:
		if tc.DisableParallel {
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: dp}}
		}
	case llm.ToolChoiceAny:
		a := &sdk.ToolChoiceAnyParam{}
		if tc.DisableParallel {
			a.DisableParallelToolUse = dp
		}
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: a}
	case llm.ToolChoiceNone:
		n := sdk.NewToolChoiceNoneParam()
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &n}
	case llm.ToolChoiceTool:
		tt := &sdk.ToolChoiceToolParam{Name: tc.Name}
		if tc.DisableParallel {
			tt.DisableParallelToolUse = dp
		}
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfTool: tt}
	}
	if b := req.Thinking.Budget(); b > 0 {
		p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(b)}}
	}
	return p, opts
}

func sdkImage(b llm.Block) *sdk.ImageBlockParam {
	img := &sdk.ImageBlockParam{CacheControl: cacheParam(b.CacheHint)}
	if b.URL != "" {
		img.Source.OfURL = &sdk.URLImageSourceParam{URL: b.URL}
	} else {
		img.Source.OfBase64 = &sdk.Base64ImageSourceParam{Data: base64.StdEncoding.EncodeToString(b.Data), MediaType: sdk.Base64ImageSourceMediaType(b.MediaType)}
	}
	return img
}

func sdkBlock(b llm.Block) (sdk.ContentBlockParamUnion, bool) {
	switch b.Type {
	case llm.BlockText:
		return sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: b.Text, CacheControl: cacheParam(b.CacheHint)}}, true
	case llm.BlockImage:
		return sdk.ContentBlockParamUnion{OfImage: sdkImage(b)}, true
	case llm.BlockToolUse:
		// The API requires an input object: a call without arguments has {}.
		input := json.RawMessage(b.Input)
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		return sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{ID: b.ToolUseID, Name: b.ToolName,
			Input: input, CacheControl: cacheParam(b.CacheHint)}}, true
	case llm.BlockToolResult:
		r := &sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID, CacheControl: cacheParam(b.CacheHint)}
		if b.IsError {
			r.IsError = sdk.Bool(true)
		}
		for _, c := range b.Content {
			switch c.Type {
			case llm.BlockText:
				r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: c.Text, CacheControl: cacheParam(c.CacheHint)}})
			case llm.BlockImage:
				r.Content = append(r.Content, sdk.ToolResultBlockParamContentUnion{OfImage: sdkImage(c)})
			}
		}
		return sdk.ContentBlockParamUnion{OfToolResult: r}, true
	case llm.BlockThinking:
		if d := b.MetaValue(anthropic.MetaRedacted); d != "" {
			return sdk.ContentBlockParamUnion{OfRedactedThinking: &sdk.RedactedThinkingBlockParam{Data: d}}, true
		}
		if s := b.MetaValue(anthropic.MetaSignature); s != "" {
			return sdk.ContentBlockParamUnion{OfThinking: &sdk.ThinkingBlockParam{Thinking: b.Text, Signature: s}}, true
		}
	}
	return sdk.ContentBlockParamUnion{}, false
}

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"<city> & country"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"],"additionalProperties":false}`)

func conversations() []struct {
	name string
	req  llm.Request
} {
	tools := []llm.ToolSpec{
		{Name: "get_weather", Description: "Get the weather", InputSchema: weatherSchema},
		{Name: "now", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`), CacheHint: true},
	}
	user := []llm.Message{llm.UserText("Weather in Paris?")}
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3}
	toolTurn := []llm.Message{
		{Role: llm.RoleUser, Content: []llm.Block{llm.Text("What is in this picture, and the weather?"), llm.Image("image/png", png),
			{Type: llm.BlockImage, URL: "https://example.com/cat.jpg"}}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("Let me check."),
			llm.ToolUse("toolu_01", "get_weather", json.RawMessage(`{"city": "Paris", "unit": "celsius"}`)),
			llm.ToolUse("toolu_02", "now", nil)}},
		{Role: llm.RoleUser, Content: []llm.Block{
			llm.ToolResult("toolu_01", false, llm.Text("18°C, cloudy"), llm.Image("image/jpeg", []byte("jpeg-bytes"))),
			llm.ToolResult("toolu_02", true, llm.Text("clock unavailable")),
			{Type: llm.BlockToolResult, ToolUseID: "toolu_03", CacheHint: true},
		}},
	}
	plainTools := []llm.ToolSpec{tools[0], {Name: "now", InputSchema: tools[1].InputSchema}}
	plainToolTurn := append([]llm.Message(nil), toolTurn[:2]...)
	plainToolTurn = append(plainToolTurn,
		llm.Message{Role: llm.RoleUser, Content: []llm.Block{
			llm.ToolResult("toolu_01", false, llm.Text("18°C, cloudy")),
			llm.ToolResult("toolu_02", true, llm.Text("clock unavailable"))}},
		llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("It is 18°C.")}},
		llm.UserText("And tomorrow?"))
	thinkingTurn := []llm.Message{
		llm.UserText("Weather in Paris?"),
		{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.Thinking("The user wants Paris weather.", map[string]string{anthropic.MetaSignature: "EqQBCgIYAhIM", "openai.id": "ignored"}),
			llm.ToolUse("toolu_01", "get_weather", json.RawMessage(`{"city":"Paris"}`))}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("toolu_01", false, llm.Text("18°C"))}},
	}
	redacted := []llm.Message{
		llm.UserText("Hi"),
		{Role: llm.RoleAssistant, Content: []llm.Block{
			{Type: llm.BlockThinking, Meta: map[string]string{anthropic.MetaRedacted: "EmwKAhgBEgy3va3pzix/LafPsn4a"}},
			llm.Text("Hello.")}},
		llm.UserText("Again"),
	}
	foreign := []llm.Message{
		llm.UserText("Hi"),
		{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.Thinking("reasoning from another provider", map[string]string{"gemini.signature": "c2ln"}),
			llm.Text("Hello.")}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.Thinking("only thinking", nil)}},
		llm.UserText("Again"),
	}
	return []struct {
		name string
		req  llm.Request
	}{
		{"plain text", llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("Hello <b>&</b> \"quotes\" ✓")}}},
		{"system with cache hint", llm.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024,
			System:   []llm.Block{{Type: llm.BlockText, Text: "You are terse.", CacheHint: true}, llm.Text("Answer in French.")},
			Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "Bonjour", CacheHint: true}}}}}},
		{"tools auto", llm.Request{Model: "m", Tools: tools, Messages: user}},
		{"tools auto no parallel", llm.Request{Model: "m", Tools: tools, ToolChoice: llm.ToolChoice{DisableParallel: true}, Messages: user}},
		{"tools any", llm.Request{Model: "m", Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceAny}, Messages: user}},
		{"tools any no parallel", llm.Request{Model: "m", Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceAny, DisableParallel: true}, Messages: user}},
		{"tools none", llm.Request{Model: "m", Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}, Messages: user}},
		{"tools named", llm.Request{Model: "m", Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"}, Messages: user}},
		{"tools named no parallel", llm.Request{Model: "m", Tools: tools, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "now", DisableParallel: true}, Messages: user}},
		{"multi-turn tool use", llm.Request{Model: "m", Tools: tools, Messages: toolTurn}},
		{"thinking replay", llm.Request{Model: "m", MaxTokens: 32000, Thinking: llm.ThinkingMedium, Tools: tools, Messages: thinkingTurn}},
		{"thinking raises max_tokens", llm.Request{Model: "m", MaxTokens: 4096, Thinking: llm.ThinkingHigh, Messages: user}},
		{"redacted thinking", llm.Request{Model: "m", Thinking: llm.ThinkingLow, Messages: redacted}},
		{"foreign thinking dropped", llm.Request{Model: "m", Messages: foreign}},
		{"consecutive same role", llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("a"), llm.UserText("b")}}},
		{"stop sequences", llm.Request{Model: "m", StopSequences: []string{"</answer>", "\n\nHuman:"}, Messages: user}},
		{"sampling", llm.Request{Model: "m", Temperature: llm.Float(0.3), TopP: llm.Float(0.9), TopK: llm.Int(40), Messages: user}},
		{"automatic breakpoints on tools, system and two user turns", llm.Request{Model: "m", Tools: plainTools,
			System: llm.SystemText("You are terse."), Messages: plainToolTurn}},
		{"automatic breakpoint skips an empty text block", llm.Request{Model: "m", Tools: plainTools,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.Text("Hi"), llm.Text("")}}}}},
		{"cache off drops the hints too", llm.Request{Model: "m", Tools: tools, Cache: llm.CacheOff, Messages: toolTurn,
			System: []llm.Block{{Type: llm.BlockText, Text: "You are terse.", CacheHint: true}}}},
	}
}

// oracleBreakpoints restates, independently of the provider's code, where
// prompt-cache breakpoints go, as CacheHints on a copy of req for toSDK:
// none with caching off (hints dropped too); the caller's own where it set
// any; otherwise the last tool, the last system text, and the last
// cacheable block of each of the last two user messages.
func oracleBreakpoints(req llm.Request) llm.Request {
	req.Tools = append([]llm.ToolSpec(nil), req.Tools...)
	req.System = append([]llm.Block(nil), req.System...)
	msgs := make([]llm.Message, len(req.Messages))
	for i, m := range req.Messages {
		m.Content = append([]llm.Block(nil), m.Content...)
		for j := range m.Content {
			m.Content[j].Content = append([]llm.Block(nil), m.Content[j].Content...)
		}
		msgs[i] = m
	}
	req.Messages = msgs
	hinted := false
	for _, tl := range req.Tools {
		hinted = hinted || tl.CacheHint
	}
	for _, b := range req.System {
		hinted = hinted || b.CacheHint
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			hinted = hinted || b.CacheHint
			for _, c := range b.Content {
				hinted = hinted || c.CacheHint
			}
		}
	}
	if req.Cache == llm.CacheOff {
		for i := range req.Tools {
			req.Tools[i].CacheHint = false
		}
		for i := range req.System {
			req.System[i].CacheHint = false
		}
		for _, m := range req.Messages {
			for j := range m.Content {
				m.Content[j].CacheHint = false
				for k := range m.Content[j].Content {
					m.Content[j].Content[k].CacheHint = false
				}
			}
		}
		return req
	}
	if hinted {
		return req
	}
	if n := len(req.Tools); n > 0 {
		req.Tools[n-1].CacheHint = true
	}
	for i := len(req.System) - 1; i >= 0; i-- {
		if req.System[i].Type == llm.BlockText && req.System[i].Text != "" {
			req.System[i].CacheHint = true
			break
		}
	}
	users := 0
	for i := len(req.Messages) - 1; i >= 0 && users < 2; i-- {
		if req.Messages[i].Role != llm.RoleUser {
			continue
		}
		c := req.Messages[i].Content
		for j := len(c) - 1; j >= 0; j-- {
			if c[j].Type == llm.BlockText && c[j].Text != "" || c[j].Type == llm.BlockImage || c[j].Type == llm.BlockToolResult {
				c[j].CacheHint = true
				users++
				break
			}
		}
	}
	return req
}

func normalise(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("invalid JSON body %q: %v", b, err)
	}
	return v
}

func TestRequestMatchesSDK(t *testing.T) {
	t.Parallel()
	for _, tc := range conversations() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, p := fakeProvider(t, nil)
			srv.Push(llmtest.Text("ok"), llmtest.Text("ok"))

			fr := run(t, context.Background(), p, &tc.req)
			if fr.Result.Outcome.Status != llm.StatusCompleted {
				t.Fatalf("weft: %+v", fr.Result.Outcome)
			}
			weft := srv.LastRequest()

			oracle := oracleBreakpoints(tc.req)
			params, opts := toSDK(t, &oracle)
			client := sdkClient(srv.URL)
			stream := client.Messages.NewStreaming(context.Background(), params, opts...)
			for stream.Next() {
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("sdk: %v", err)
			}
			stream.Close()
			ref := srv.LastRequest()

			if weft.Path != ref.Path {
				t.Errorf("path = %q, SDK %q", weft.Path, ref.Path)
			}
			if diff := cmp.Diff(normalise(t, ref.Body), normalise(t, weft.Body)); diff != "" {
				t.Errorf("request body differs from the SDK's (-sdk +weft):\n%s\nweft: %s\nsdk:  %s", diff, weft.Body, ref.Body)
			}
		})
	}
}

// decodeScripts are recorded streams both decoders must agree on.
func decodeScripts() []struct {
	name string
	sc   llmtest.Script
} {
	words := make([]string, 40)
	for i := range words {
		words[i] = "tok" + strings.Repeat("e", i%5) + " "
	}
	return []struct {
		name string
		sc   llmtest.Script
	}{
		{"text", llmtest.Text(words...)},
		{"tool call", llmtest.Script{Blocks: []llmtest.Block{
			llmtest.TextBlock("Let me check."),
			llmtest.ToolBlock("toolu_01", "get_weather", `{"city": "Pa`, `ris", "unit": "cel`, `sius"}`),
		}, Usage: llm.Usage{InputTokens: 472, OutputTokens: 89}}},
		{"parallel tool calls", llmtest.Script{Blocks: []llmtest.Block{
			llmtest.ToolBlock("toolu_a", "read", `{"path":"a.go","lines":[1,`, `2,3]}`),
			llmtest.ToolBlock("toolu_b", "now"),
		}}},
		{"thinking", llmtest.Script{Blocks: []llmtest.Block{
			llmtest.ThinkingBlock("EqQBCgIYAhIMfakesignature", "The user wants", " Paris weather."),
			llmtest.TextBlock("Sunny ", "and warm."),
			llmtest.ToolBlock("toolu_w", "get_weather", `{"city":"Paris"}`),
		}, Usage: llm.Usage{InputTokens: 10, OutputTokens: 200, CacheReadTokens: 1830, CacheWriteTokens: 55}}},
		{"redacted thinking", llmtest.Script{Blocks: []llmtest.Block{
			llmtest.RedactedThinkingBlock("EmwKAhgBEgy3va3pzix/LafPsn4a"),
			llmtest.TextBlock("Done."),
		}}},
		{"stop sequence", llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("42")}, StopReason: llm.StopSequence, StopSequence: "</answer>"}},
		{"max tokens", llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("cut")}, StopReason: llm.StopMaxTokens, Usage: llm.Usage{OutputTokens: 1}}},
		{"refusal", llmtest.Script{StopReason: llm.StopRefusal}},
		{"pause turn", llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("…")}, StopReason: llm.StopPauseTurn}},
	}
}

// outcome is what both decoders are compared on.
type outcome struct {
	Blocks       []outBlock
	Usage        llm.Usage
	StopReason   string
	StopSequence string
}

type outBlock struct {
	Type, Text, Signature, Redacted, ID, Name string
	Input                                     any
}

func TestDecodeMatchesSDK(t *testing.T) {
	t.Parallel()
	for _, tc := range decodeScripts() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, p := fakeProvider(t, nil)
			srv.Push(tc.sc, tc.sc)

			fr := run(t, context.Background(), p, userReq())
			if fr.Result.Outcome.Status != llm.StatusCompleted {
				t.Fatalf("weft: %+v", fr.Result.Outcome)
			}
			var got outcome
			for _, b := range fr.Message.Content {
				ob := outBlock{Type: string(b.Type), Text: b.Text, Signature: b.MetaValue(anthropic.MetaSignature),
					Redacted: b.MetaValue(anthropic.MetaRedacted), ID: b.ToolUseID, Name: b.ToolName}
				if ob.Redacted != "" {
					ob.Type = "redacted_thinking"
				}
				if b.Type == llm.BlockToolUse {
					ob.Input = normalise(t, b.Input)
				}
				got.Blocks = append(got.Blocks, ob)
			}
			got.Usage = fr.Result.Usage
			got.StopReason = string(fr.Result.Outcome.StopReason)
			got.StopSequence = fr.Result.Outcome.StopSequence

			params, _ := toSDK(t, userReq())
			client := sdkClient(srv.URL)
			stream := client.Messages.NewStreaming(context.Background(), params)
			var msg sdk.Message
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatalf("sdk accumulate: %v", err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("sdk: %v", err)
			}
			stream.Close()
			var want outcome
			for _, b := range msg.Content {
				ob := outBlock{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name}
				switch b.Type {
				case "thinking":
					ob.Text, ob.Signature = b.Thinking, b.Signature
				case "redacted_thinking":
					ob.Redacted = b.Data
				case "tool_use":
					ob.Input = normalise(t, b.Input)
				}
				want.Blocks = append(want.Blocks, ob)
			}
			want.Usage = llm.Usage{InputTokens: int(msg.Usage.InputTokens), OutputTokens: int(msg.Usage.OutputTokens),
				CacheReadTokens: int(msg.Usage.CacheReadInputTokens), CacheWriteTokens: int(msg.Usage.CacheCreationInputTokens)}
			want.StopReason = string(msg.StopReason)
			want.StopSequence = msg.StopSequence

			if len(want.Blocks) != len(tc.sc.Blocks) {
				t.Fatalf("the SDK decoded %d blocks of %d scripted", len(want.Blocks), len(tc.sc.Blocks))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decoded message differs from the SDK's (-sdk +weft):\n%s", diff)
			}
		})
	}
}

// TestErrorsMatchSDK checks that weft reads the fake's errors, before and
// inside the stream, as the SDK does.
func TestErrorsMatchSDK(t *testing.T) {
	t.Parallel()
	scripts := []llmtest.Script{
		{Status: 400, ErrorMessage: "prompt is too long: 208310 tokens > 200000 maximum"},
		{Status: 401}, {Status: 403}, {Status: 404}, {Status: 413}, {Status: 429, RetryAfter: 3e9},
		{Status: 500}, {Status: 503}, {Status: 529},
		{Blocks: []llmtest.Block{llmtest.TextBlock("a")}, ErrorAfter: 3},
		{ErrorAfter: 1, ErrorType: "api_error", ErrorMessage: "Internal server error"},
	}
	for _, sc := range scripts {
		t.Run(strconv.Itoa(sc.Status)+sc.ErrorType, func(t *testing.T) {
			t.Parallel()
			srv, p := fakeProvider(t, nil)
			srv.Push(sc, sc)
			fr := run(t, context.Background(), p, userReq())
			if fr.Err == nil {
				t.Fatalf("weft: no error: %+v", fr.Result.Outcome)
			}
			params, _ := toSDK(t, userReq())
			client := sdkClient(srv.URL)
			stream := client.Messages.NewStreaming(context.Background(), params)
			for stream.Next() {
			}
			var ref *sdk.Error
			if !errors.As(stream.Err(), &ref) {
				t.Fatalf("sdk: %T %v, want *anthropic.Error", stream.Err(), stream.Err())
			}
			stream.Close()
			if fr.Err.StatusCode != ref.StatusCode || fr.Err.Type != string(ref.Type()) || fr.Err.Message != ref.Message {
				t.Errorf("weft %d %q %q, SDK %d %q %q", fr.Err.StatusCode, fr.Err.Type, fr.Err.Message, ref.StatusCode, ref.Type(), ref.Message)
			}
			if (fr.Err.RequestID == "") != (ref.RequestID == "") {
				t.Errorf("request id: weft %q, SDK %q", fr.Err.RequestID, ref.RequestID)
			}
		})
	}
}
