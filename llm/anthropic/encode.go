package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"

	"github.com/weft-run/weft/llm"
)

// The request body, field for field as anthropic-sdk-go v2 marshals it, so
// that the differential tests can compare the two after normalisation.
type wireRequest struct {
	Model         string          `json:"model"`
	MaxTokens     int             `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	System        []wireText      `json:"system,omitempty"`
	Messages      []wireMessage   `json:"messages"`
	Tools         []wireTool      `json:"tools,omitempty"`
	ToolChoice    *wireToolChoice `json:"tool_choice,omitempty"`
	Thinking      *wireThinking   `json:"thinking,omitempty"`
	StopSequences []string        `json:"stop_sequences,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	TopK          *int            `json:"top_k,omitempty"`
}

type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

// MaxBreakpoints is how many cache_control markers the API accepts in one
// request.
const MaxBreakpoints = 4

// caching is how one request is marked for the prompt cache: whether the
// caller's CacheHints count, and where the automatic breakpoints go.
type caching struct {
	hints bool // honour Block.CacheHint and ToolSpec.CacheHint
	tool  int  // index in Tools of the automatic breakpoint, or -1
	sys   int  // index in System, or -1
	// msgs are the (message, block) positions of the rolling breakpoints
	// on the last two user turns, {-1, -1} when unused.
	msgs [2][2]int
}

// planCache decides the request's breakpoints. With caching on (the
// default) and no CacheHint set anywhere, the provider places them itself,
// on the last tool definition (which caches the tools), the last system
// block (tools and system), and the last block of each of the last two
// user messages. The newest of those caches the whole conversation for the
// next call; the one before sits exactly where the previous call's newest
// one was, so this call reads what the last one wrote even when more than
// the API's 20-block lookback was added in between (a turn of many
// parallel tool calls). That is four, the API's limit. A caller that sets
// CacheHint itself places its own breakpoints and gets no automatic ones.
// CacheOff (or Config.NoPromptCache) sends no cache_control at all.
func (p *Provider) planCache(req *llm.Request) caching {
	c := caching{tool: -1, sys: -1, msgs: [2][2]int{{-1, -1}, {-1, -1}}}
	if req.Cache == llm.CacheOff || p.cfg.NoPromptCache {
		return c
	}
	c.hints = true
	if hasCacheHints(req) {
		return c
	}
	if n := len(req.Tools); n > 0 {
		c.tool = n - 1
	}
	for i := len(req.System) - 1; i >= 0; i-- {
		if b := &req.System[i]; b.Type == llm.BlockText && b.Text != "" {
			c.sys = i
			break
		}
	}
	n := 0
	for i := len(req.Messages) - 1; i >= 0 && n < len(c.msgs); i-- {
		m := &req.Messages[i]
		if m.Role != llm.RoleUser {
			continue
		}
		for j := len(m.Content) - 1; j >= 0; j-- {
			if cacheable(&m.Content[j]) {
				c.msgs[n] = [2]int{i, j}
				n++
				break
			}
		}
	}
	return c
}

// cacheable reports whether the API takes cache_control on b: not on
// thinking, nor on an empty text block.
func cacheable(b *llm.Block) bool {
	switch b.Type {
	case llm.BlockText:
		return b.Text != ""
	case llm.BlockImage, llm.BlockToolUse, llm.BlockToolResult:
		return true
	}
	return false
}

func hasCacheHints(req *llm.Request) bool {
	for i := range req.Tools {
		if req.Tools[i].CacheHint {
			return true
		}
	}
	for i := range req.System {
		if req.System[i].CacheHint {
			return true
		}
	}
	for i := range req.Messages {
		for j := range req.Messages[i].Content {
			b := &req.Messages[i].Content[j]
			if b.CacheHint {
				return true
			}
			for k := range b.Content {
				if b.Content[k].CacheHint {
					return true
				}
			}
		}
	}
	return false
}

// at reports whether the block at (message i, block j) gets a breakpoint.
func (c *caching) at(i, j int) bool {
	return c.msgs[0] == [2]int{i, j} || c.msgs[1] == [2]int{i, j}
}

// mark is the cache_control of a block: the caller's hint (when hints
// count) or an automatic breakpoint.
func (c *caching) mark(hint, auto bool) *cacheControl {
	if auto || hint && c.hints {
		return ephemeral
	}
	return nil
}

type wireMessage struct {
	Role    llm.Role `json:"role"`
	Content []any    `json:"content"`
}

type wireText struct {
	Type         string        `json:"type"`
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type wireImage struct {
	Type         string        `json:"type"`
	Source       any           `json:"source"` // base64Source or urlSource
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type base64Source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data"`
}

type urlSource struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type wireToolUse struct {
	Type         string          `json:"type"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type wireToolResult struct {
	Type         string        `json:"type"`
	ToolUseID    string        `json:"tool_use_id"`
	Content      []any         `json:"content,omitempty"`
	IsError      bool          `json:"is_error,omitempty"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type wireThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type wireRedacted struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type wireToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type wireThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

var emptyObject = json.RawMessage(`{}`)

// encode builds the request body. A failure (a tool input or schema that is
// not JSON) is a bad request: nothing was sent.
func (p *Provider) encode(req *llm.Request) ([]byte, error) {
	w := wireRequest{
		Model:         req.Model,
		MaxTokens:     req.MaxTokens,
		Stream:        true,
		StopSequences: req.StopSequences,
		Temperature:   req.Temperature,
		TopP:          req.TopP,
		TopK:          req.TopK,
		Messages:      make([]wireMessage, 0, len(req.Messages)),
	}
	if w.MaxTokens <= 0 {
		w.MaxTokens = p.maxTokens
	}
	if budget := req.Thinking.Budget(); budget > 0 {
		// The API wants 1024 <= budget_tokens < max_tokens. Every level's
		// budget is over 1024; when max_tokens does not leave room above the
		// budget, it is raised to budget + the default max tokens, so the
		// visible answer gets as much room as a call without thinking would.
		w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: budget}
		if w.MaxTokens <= budget {
			w.MaxTokens = budget + p.maxTokens
		}
	}
	cache := p.planCache(req)
	for i, b := range req.System {
		if b.Type == llm.BlockText {
			w.System = append(w.System, wireText{Type: "text", Text: b.Text, CacheControl: cache.mark(b.CacheHint, i == cache.sys)})
		}
	}
	for mi, m := range req.Messages {
		content := make([]any, 0, len(m.Content))
		for i := range m.Content {
			if v := encodeBlock(&m.Content[i], &cache, cache.at(mi, i)); v != nil {
				content = append(content, v)
			}
		}
		// A message left empty only by dropping another provider's thinking
		// would be a certain 400; sending nothing for it is the lesser change.
		if len(content) == 0 && len(m.Content) > 0 {
			continue
		}
		// Consecutive messages of one role are sent as they are: the caller
		// owns the conversation's shape.
		w.Messages = append(w.Messages, wireMessage{Role: m.Role, Content: content})
	}
	for i, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema, CacheControl: cache.mark(t.CacheHint, i == cache.tool)})
	}
	w.ToolChoice = toolChoice(req.ToolChoice)

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&w); err != nil {
		return nil, &llm.Error{Provider: name, Category: llm.CategoryBadRequest, Message: "encoding request: " + err.Error(), Err: err}
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func toolChoice(tc llm.ToolChoice) *wireToolChoice {
	switch tc.Mode {
	case llm.ToolChoiceAuto:
		// auto is the API's default; it is only spelled out to carry the
		// parallel-use switch.
		if !tc.DisableParallel {
			return nil
		}
		return &wireToolChoice{Type: "auto", DisableParallelToolUse: true}
	case llm.ToolChoiceNone:
		// none takes no parallel-use switch.
		return &wireToolChoice{Type: "none"}
	case llm.ToolChoiceTool:
		return &wireToolChoice{Type: "tool", Name: tc.Name, DisableParallelToolUse: tc.DisableParallel}
	}
	return &wireToolChoice{Type: string(tc.Mode), DisableParallelToolUse: tc.DisableParallel}
}

// encodeBlock returns the wire form of b, or nil for a block that must not
// be sent. bp marks an automatic cache breakpoint.
func encodeBlock(b *llm.Block, cache *caching, bp bool) any {
	switch b.Type {
	case llm.BlockText:
		return wireText{Type: "text", Text: b.Text, CacheControl: cache.mark(b.CacheHint, bp)}
	case llm.BlockImage:
		return encodeImage(b, cache.mark(b.CacheHint, bp))
	case llm.BlockToolUse:
		input := b.Input
		if len(input) == 0 {
			input = emptyObject
		}
		return wireToolUse{Type: "tool_use", ID: b.ToolUseID, Name: b.ToolName, Input: input, CacheControl: cache.mark(b.CacheHint, bp)}
	case llm.BlockToolResult:
		r := wireToolResult{Type: "tool_result", ToolUseID: b.ToolUseID, IsError: b.IsError, CacheControl: cache.mark(b.CacheHint, bp)}
		for i := range b.Content {
			c := &b.Content[i]
			switch c.Type {
			case llm.BlockText:
				r.Content = append(r.Content, wireText{Type: "text", Text: c.Text, CacheControl: cache.mark(c.CacheHint, false)})
			case llm.BlockImage:
				r.Content = append(r.Content, encodeImage(c, cache.mark(c.CacheHint, false)))
			}
		}
		return r
	case llm.BlockThinking:
		// Thinking is replayed only when this API produced it: a signed
		// block as thinking, a redacted one as redacted_thinking. Thinking
		// from other providers carries no Anthropic signature and the API
		// rejects unsigned thinking, so it is dropped. The API does not take
		// cache_control on thinking blocks, so CacheHint is ignored here.
		if data := b.MetaValue(MetaRedacted); data != "" {
			return wireRedacted{Type: "redacted_thinking", Data: data}
		}
		if sig := b.MetaValue(MetaSignature); sig != "" {
			return wireThinkingBlock{Type: "thinking", Thinking: b.Text, Signature: sig}
		}
	}
	return nil
}

func encodeImage(b *llm.Block, cc *cacheControl) wireImage {
	img := wireImage{Type: "image", CacheControl: cc}
	if b.URL != "" && len(b.Data) == 0 {
		img.Source = urlSource{Type: "url", URL: b.URL}
	} else {
		img.Source = base64Source{Type: "base64", MediaType: b.MediaType, Data: base64.StdEncoding.EncodeToString(b.Data)}
	}
	return img
}
