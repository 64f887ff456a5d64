package openai_test

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
)

func sdkClient(srv *llmtest.Server) oa.Client {
	return oa.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"],"additionalProperties":false}`)

func weatherTool() llm.ToolSpec {
	return llm.ToolSpec{Name: "get_weather", Description: "Get current weather for a city", InputSchema: weatherSchema}
}

func sdkWeatherTool() oa.ChatCompletionToolUnionParam {
	var params shared.FunctionParameters
	if err := json.Unmarshal(weatherSchema, &params); err != nil {
		panic(err)
	}
	return oa.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "get_weather", Description: oa.String("Get current weather for a city"), Parameters: params})
}

func sdkToolCall(id, name, args string) oa.ChatCompletionMessageToolCallUnionParam {
	return oa.ChatCompletionMessageToolCallUnionParam{OfFunction: &oa.ChatCompletionMessageFunctionToolCallParam{
		ID: id, Function: oa.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: args}}}
}

func sdkAssistant(content string, calls ...oa.ChatCompletionMessageToolCallUnionParam) *oa.ChatCompletionAssistantMessageParam {
	m := &oa.ChatCompletionAssistantMessageParam{ToolCalls: calls}
	if content != "" {
		m.Content.OfString = oa.String(content)
	}
	return m
}

var png = []byte("\x89PNG\r\n\x1a\nfake image bytes")

func dataURL(b []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b) }

func usageOn() oa.ChatCompletionStreamOptionsParam {
	return oa.ChatCompletionStreamOptionsParam{IncludeUsage: oa.Bool(true)}
}

// requestCases are the same conversations in weft's terms and as a caller of
// openai-go would write them.
func requestCases() []struct {
	name string
	cfg  func(*openai.Config)
	req  *llm.Request
	sdk  oa.ChatCompletionNewParams
} {
	multi := []llm.Message{
		llm.UserText("Weather in Paris and Rome?"),
		{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.Text("Let me check."),
			llm.ToolUse("call_abc", "get_weather", json.RawMessage(`{"city":"Paris"}`)),
			llm.ToolUse("call_def", "get_weather", json.RawMessage(`{"city":"Rome","unit":"celsius"}`)),
		}},
		{Role: llm.RoleUser, Content: []llm.Block{
			llm.ToolResult("call_abc", false, llm.Text("18°C, cloudy")),
			llm.ToolResult("call_def", true, llm.Text("service down:"), llm.Text("retry later")),
		}},
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("Paris is 18°C; Rome is unknown.")}},
		llm.UserText("Thanks <3 & bye"),
	}
	sdkMulti := []oa.ChatCompletionMessageParamUnion{
		oa.UserMessage("Weather in Paris and Rome?"),
		{OfAssistant: sdkAssistant("Let me check.",
			sdkToolCall("call_abc", "get_weather", `{"city":"Paris"}`),
			sdkToolCall("call_def", "get_weather", `{"city":"Rome","unit":"celsius"}`))},
		oa.ToolMessage("18°C, cloudy", "call_abc"),
		oa.ToolMessage("service down:\n\nretry later", "call_def"),
		oa.AssistantMessage("Paris is 18°C; Rome is unknown."),
		oa.UserMessage("Thanks <3 & bye"),
	}

	reasoning := sdkAssistant("", sdkToolCall("call_r", "get_weather", `{"city":"Oslo"}`))
	reasoning.SetExtraFields(map[string]any{"reasoning_content": "The user wants Oslo."})
	reasoningOllama := sdkAssistant("Done.")
	reasoningOllama.SetExtraFields(map[string]any{"reasoning": "Short."})

	user := oa.UserMessage("Weather?")
	type rc = struct {
		name string
		cfg  func(*openai.Config)
		req  *llm.Request
		sdk  oa.ChatCompletionNewParams
	}
	return []rc{
		{name: "plain",
			req: &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{llm.UserText("Hello")}},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Hello")}, StreamOptions: usageOn()}},
		{name: "system",
			req: &llm.Request{Model: "gpt-4.1", System: []llm.Block{llm.Text("You are terse."), {Type: llm.BlockText, Text: "Answer in French.", CacheHint: true}},
				Messages: []llm.Message{llm.UserText("Hello")}},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{
				oa.SystemMessage("You are terse.\n\nAnswer in French."), oa.UserMessage("Hello")}}},
		{name: "tools auto",
			req: &llm.Request{Model: "gpt-4.1", Tools: []llm.ToolSpec{weatherTool()}, Messages: []llm.Message{llm.UserText("Weather?")}},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{user},
				Tools: []oa.ChatCompletionToolUnionParam{sdkWeatherTool()}}},
		{name: "tool choice required, no parallel calls",
			req: &llm.Request{Model: "gpt-4.1", Tools: []llm.ToolSpec{weatherTool(), {Name: "now"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceAny, DisableParallel: true},
				Messages: []llm.Message{llm.UserText("Weather?")}},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{user},
				Tools:             []oa.ChatCompletionToolUnionParam{sdkWeatherTool(), oa.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "now"})},
				ToolChoice:        oa.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oa.String("required")},
				ParallelToolCalls: oa.Bool(false)}},
		{name: "tool choice none",
			req: &llm.Request{Model: "gpt-4.1", Tools: []llm.ToolSpec{weatherTool()}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone},
				Messages: []llm.Message{llm.UserText("Weather?")}},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{user},
				Tools: []oa.ChatCompletionToolUnionParam{sdkWeatherTool()}, ToolChoice: oa.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oa.String("none")}}},
		{name: "tool choice named",
			req: &llm.Request{Model: "gpt-4.1", Tools: []llm.ToolSpec{weatherTool()}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"},
				Messages: []llm.Message{llm.UserText("Weather?")}},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{user},
				Tools:      []oa.ChatCompletionToolUnionParam{sdkWeatherTool()},
				ToolChoice: oa.ToolChoiceOptionFunctionToolChoice(oa.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})}},
		{name: "multi-turn tool use",
			req: &llm.Request{Model: "gpt-4.1", Tools: []llm.ToolSpec{weatherTool()}, Messages: multi},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: sdkMulti, Tools: []oa.ChatCompletionToolUnionParam{sdkWeatherTool()}}},
		{name: "inline image and image url",
			req: &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
				llm.Text("What are these?"), llm.Image("image/png", png), {Type: llm.BlockImage, URL: "https://example.com/cat.jpg"}}}}},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{
				oa.UserMessage([]oa.ChatCompletionContentPartUnionParam{
					oa.TextContentPart("What are these?"),
					oa.ImageContentPart(oa.ChatCompletionContentPartImageImageURLParam{URL: dataURL(png)}),
					oa.ImageContentPart(oa.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.jpg"}),
				})}}},
		{name: "image in a tool result",
			req: &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{
				llm.UserText("Plot it."),
				{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("call_p", "plot", json.RawMessage(`{}`))}},
				{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("call_p", false, llm.Text("chart:"), llm.Image("image/png", png)), llm.Text("Describe it.")}},
			}},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{
				oa.UserMessage("Plot it."),
				{OfAssistant: sdkAssistant("", sdkToolCall("call_p", "plot", `{}`))},
				oa.ToolMessage("chart:", "call_p"),
				oa.UserMessage([]oa.ChatCompletionContentPartUnionParam{
					oa.TextContentPart("Image output of tool call call_p:"),
					oa.ImageContentPart(oa.ChatCompletionContentPartImageImageURLParam{URL: dataURL(png)}),
					oa.TextContentPart("Describe it."),
				})}}},
		{name: "stop sequences and sampling",
			req: &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{llm.UserText("Count")}, StopSequences: []string{"</answer>", "END"},
				Temperature: llm.Float(0.2), TopP: llm.Float(0.9), TopK: llm.Int(40)},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Count")},
				Stop: oa.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"</answer>", "END"}}, Temperature: oa.Float(0.2), TopP: oa.Float(0.9)}},
		{name: "temperature zero",
			req: &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{llm.UserText("Count")}, Temperature: llm.Float(0)},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Count")},
				Temperature: oa.Float(0)}},
		{name: "reasoning effort and max completion tokens",
			req: &llm.Request{Model: "o4-mini", Messages: []llm.Message{llm.UserText("Prove it")}, Thinking: llm.ThinkingHigh, MaxTokens: 4096},
			sdk: oa.ChatCompletionNewParams{Model: "o4-mini", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Prove it")},
				ReasoningEffort: shared.ReasoningEffortHigh, MaxCompletionTokens: oa.Int(4096)}},
		{name: "thinking none sends no effort",
			req: &llm.Request{Model: "o4-mini", Messages: []llm.Message{llm.UserText("Hi")}, Thinking: llm.ThinkingNone},
			sdk: oa.ChatCompletionNewParams{Model: "o4-mini", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Hi")}}},
		{name: "max_tokens field, no stream usage",
			cfg: func(c *openai.Config) { c.MaxTokensField = "max_tokens"; c.NoStreamUsage = true },
			req: &llm.Request{Model: "llama3.2", Messages: []llm.Message{llm.UserText("Hi")}, MaxTokens: 256},
			sdk: oa.ChatCompletionNewParams{Model: "llama3.2", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Hi")}, MaxTokens: oa.Int(256)}},
		{name: "cache key as prompt_cache_key",
			req: &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{llm.UserText("Hi")}, CacheKey: "weft-0123456789abcdef"},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Hi")},
				PromptCacheKey: oa.String("weft-0123456789abcdef")}},
		{name: "no cache key with caching off",
			req: &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{llm.UserText("Hi")}, CacheKey: "weft-0123456789abcdef", Cache: llm.CacheOff},
			sdk: oa.ChatCompletionNewParams{Model: "gpt-4.1", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Hi")}}},
		{name: "reasoning sent back under its field",
			req: &llm.Request{Model: "deepseek-reasoner", Messages: []llm.Message{
				llm.UserText("Weather in Oslo?"),
				{Role: llm.RoleAssistant, Content: []llm.Block{
					llm.Thinking("The user wants Oslo.", map[string]string{openai.MetaReasoningField: "reasoning_content"}),
					llm.ToolUse("call_r", "get_weather", json.RawMessage(`{"city":"Oslo"}`))}},
				{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("call_r", false, llm.Text("-3°C"))}},
				{Role: llm.RoleAssistant, Content: []llm.Block{
					llm.Thinking("Ignored: another provider's.", map[string]string{"anthropic.signature": "sig"}),
					llm.Thinking("Short.", map[string]string{openai.MetaReasoningField: "reasoning"}),
					llm.Text("Done.")}},
				llm.UserText("Thanks"),
			}},
			sdk: oa.ChatCompletionNewParams{Model: "deepseek-reasoner", StreamOptions: usageOn(), Messages: []oa.ChatCompletionMessageParamUnion{
				oa.UserMessage("Weather in Oslo?"),
				{OfAssistant: reasoning},
				oa.ToolMessage("-3°C", "call_r"),
				{OfAssistant: reasoningOllama},
				oa.UserMessage("Thanks"),
			}}},
	}
}

// normalJSON decodes b and drops null members: an absent field and a null
// one mean the same to every server.
func normalJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	return dropNulls(v)
}

func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(e)
		}
	case []any:
		for i := range x {
			x[i] = dropNulls(x[i])
		}
	}
	return v
}

func TestDifferentialRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range requestCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewOpenAI(t).Push(llmtest.Text("ok"), llmtest.Text("ok"))
			stream(t, newProvider(srv, tc.cfg), t.Context(), tc.req)

			client := sdkClient(srv)
			s := client.Chat.Completions.NewStreaming(t.Context(), tc.sdk)
			for s.Next() {
			}
			if err := s.Err(); err != nil {
				t.Fatalf("openai-go: %v", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			if reqs[0].Path != reqs[1].Path {
				t.Errorf("paths %q and %q", reqs[0].Path, reqs[1].Path)
			}
			weft, sdk := normalJSON(t, reqs[0].Body), normalJSON(t, reqs[1].Body)
			if !reflect.DeepEqual(weft, sdk) {
				w, _ := json.MarshalIndent(weft, "", "  ")
				o, _ := json.MarshalIndent(sdk, "", "  ")
				t.Fatalf("bodies differ\nweft:\n%s\nopenai-go:\n%s", w, o)
			}
		})
	}
}

// sdkResult is what a caller of openai-go gets from a stream.
type sdkResult struct {
	text, reasoning, field string
	tools                  []wantTool
	usage                  llm.Usage
	stop                   llm.StopReason
}

// sdkStop is the finish_reason mapping written from OpenAI's documentation,
// independently of the provider's.
func sdkStop(finish string, refused, tools bool) llm.StopReason {
	switch finish {
	case "length":
		return llm.StopMaxTokens
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "content_filter":
		return llm.StopRefusal
	}
	if refused {
		return llm.StopRefusal
	}
	if tools {
		return llm.StopToolUse
	}
	return llm.StopEndTurn
}

func collectSDK(t *testing.T, srv *llmtest.Server) sdkResult {
	t.Helper()
	client := sdkClient(srv)
	s := client.Chat.Completions.NewStreaming(t.Context(), oa.ChatCompletionNewParams{
		Model: "gpt-4.1", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Weather in Paris?")}, StreamOptions: usageOn()})
	var acc oa.ChatCompletionAccumulator
	var r sdkResult
	for s.Next() {
		c := s.Current()
		if !acc.AddChunk(c) {
			t.Fatalf("accumulator rejected chunk %s", c.RawJSON())
		}
		for _, ch := range c.Choices {
			for _, f := range []string{"reasoning_content", "reasoning"} {
				if ef, ok := ch.Delta.JSON.ExtraFields[f]; ok && ef.Raw() != "null" {
					var txt string
					if err := json.Unmarshal([]byte(ef.Raw()), &txt); err != nil {
						t.Fatalf("reasoning %s: %v", ef.Raw(), err)
					}
					r.reasoning += txt
					r.field = f
				}
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("openai-go: %v", err)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("%d choices", len(acc.Choices))
	}
	msg := acc.Choices[0].Message
	r.text = msg.Content + msg.Refusal
	for _, tc := range msg.ToolCalls {
		r.tools = append(r.tools, wantTool{tc.ID, tc.Function.Name, tc.Function.Arguments})
	}
	u := acc.Usage
	cached := int(u.PromptTokensDetails.CachedTokens)
	r.usage = llm.Usage{InputTokens: int(u.PromptTokens) - cached, CacheReadTokens: cached, OutputTokens: int(u.CompletionTokens),
		ReasoningTokens: int(u.CompletionTokensDetails.ReasoningTokens)}
	r.stop = sdkStop(acc.Choices[0].FinishReason, msg.Refusal != "", len(msg.ToolCalls) > 0)
	return r
}

// decodeScripts are the streams both clients decode.
func decodeScripts() []struct {
	name   string
	opts   []llmtest.OpenAIOption
	script llmtest.Script
} {
	u := llm.Usage{InputTokens: 1200, CacheReadTokens: 800, OutputTokens: 340, ReasoningTokens: 120}
	type dc = struct {
		name   string
		opts   []llmtest.OpenAIOption
		script llmtest.Script
	}
	return []dc{
		{"text", nil, llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("It is", " 18°C", ", \"cloudy\" \u2601.")}, Usage: u}},
		{"fragmented tool call", nil, llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_abc", "get_weather", weatherArgs...)}, Usage: u}},
		{"text and parallel tool calls", nil, llmtest.Script{Blocks: []llmtest.Block{
			llmtest.TextBlock("Checking."),
			llmtest.ToolBlock("call_1", "get_weather", `{"city"`, `:"Paris"}`),
			llmtest.ToolBlock("call_2", "get_weather", `{"city":"Rome",`, `"unit":"celsius"}`)}, Usage: u}},
		{"ollama", []llmtest.OpenAIOption{llmtest.OpenAIWholeToolCalls(), llmtest.OpenAIReasoningField("reasoning"), llmtest.OpenAINoDone()},
			llmtest.Script{Blocks: []llmtest.Block{llmtest.ThinkingBlock("", "Both", " cities."),
				llmtest.ToolBlock("call_o1", "get_weather", `{"city":"Paris"}`), llmtest.ToolBlock("call_o2", "get_weather", `{"city":"Rome"}`)}, Usage: u}},
		{"deepseek reasoning", nil, llmtest.Script{Blocks: []llmtest.Block{llmtest.ThinkingBlock("", "Let me", " think."), llmtest.TextBlock("Sunny", ".")}, Usage: u}},
		{"length", nil, llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("It")}, StopReason: llm.StopMaxTokens, Usage: u}},
		{"content filter", nil, llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("I")}, StopReason: llm.StopRefusal, Usage: u}},
		{"refusal", []llmtest.OpenAIOption{llmtest.OpenAIRefusal()}, llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("I can't", " do that.")}, StopReason: llm.StopRefusal}},
		{"function_call", []llmtest.OpenAIOption{llmtest.OpenAIFinishReason("function_call")}, llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_f", "f", `{"x":[1,2]}`)}}},
		{"stop after tool calls", []llmtest.OpenAIOption{llmtest.OpenAIFinishReason("stop")}, llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_g", "g", `{}`)}}},
	}
}

func TestDifferentialDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range decodeScripts() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewOpenAI(t, tc.opts...).Push(tc.script, tc.script)
			res := stream(t, newProvider(srv, nil), t.Context(), basicRequest())
			if res.Outcome.Status != llm.StatusCompleted {
				t.Fatalf("weft: %+v", res.Outcome)
			}
			want := collectSDK(t, srv)
			th, field := thinkingOf(res.Message)
			got := sdkResult{text: res.Message.Text(), reasoning: th, field: field, tools: toolsOf(res.Message), usage: res.Usage, stop: res.Outcome.StopReason}
			if got.text != want.text || got.reasoning != want.reasoning || got.field != want.field ||
				!equalTools(got.tools, want.tools) || got.usage != want.usage || got.stop != want.stop {
				t.Fatalf("weft and openai-go disagree\nweft:      %+v\nopenai-go: %+v", got, want)
			}
		})
	}
}
