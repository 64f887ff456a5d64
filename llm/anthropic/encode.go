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

func cacheFor(hint bool) *cacheControl {
	if hint {
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
	for _, b := range req.System {
		if b.Type == llm.BlockText {
			w.System = append(w.System, wireText{Type: "text", Text: b.Text, CacheControl: cacheFor(b.CacheHint)})
		}
	}
	for _, m := range req.Messages {
		content := make([]any, 0, len(m.Content))
		for i := range m.Content {
			if v := encodeBlock(&m.Content[i]); v != nil {
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
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema, CacheControl: cacheFor(t.CacheHint)})
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
// be sent.
func encodeBlock(b *llm.Block) any {
	switch b.Type {
	case llm.BlockText:
		return wireText{Type: "text", Text: b.Text, CacheControl: cacheFor(b.CacheHint)}
	case llm.BlockImage:
		return encodeImage(b)
	case llm.BlockToolUse:
		input := b.Input
		if len(input) == 0 {
			input = emptyObject
		}
		return wireToolUse{Type: "tool_use", ID: b.ToolUseID, Name: b.ToolName, Input: input, CacheControl: cacheFor(b.CacheHint)}
	case llm.BlockToolResult:
		r := wireToolResult{Type: "tool_result", ToolUseID: b.ToolUseID, IsError: b.IsError, CacheControl: cacheFor(b.CacheHint)}
		for i := range b.Content {
			c := &b.Content[i]
			switch c.Type {
			case llm.BlockText:
				r.Content = append(r.Content, wireText{Type: "text", Text: c.Text, CacheControl: cacheFor(c.CacheHint)})
			case llm.BlockImage:
				r.Content = append(r.Content, encodeImage(c))
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

func encodeImage(b *llm.Block) wireImage {
	img := wireImage{Type: "image", CacheControl: cacheFor(b.CacheHint)}
	if b.URL != "" && len(b.Data) == 0 {
		img.Source = urlSource{Type: "url", URL: b.URL}
	} else {
		img.Source = base64Source{Type: "base64", MediaType: b.MediaType, Data: base64.StdEncoding.EncodeToString(b.Data)}
	}
	return img
}
