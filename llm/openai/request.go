package openai

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/weft-run/weft/llm"
)

type chatRequest struct {
	Model               string            `json:"model"`
	Stream              bool              `json:"stream"`
	StreamOptions       *streamOptions    `json:"stream_options,omitempty"`
	Messages            []chatMessage     `json:"messages"`
	Tools               []chatTool        `json:"tools,omitempty"`
	ToolChoice          any               `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls,omitempty"`
	MaxCompletionTokens int               `json:"max_completion_tokens,omitempty"`
	MaxTokens           int               `json:"max_tokens,omitempty"`
	Temperature         *float64          `json:"temperature,omitempty"`
	TopP                *float64          `json:"top_p,omitempty"`
	Stop                []string          `json:"stop,omitempty"`
	ReasoningEffort     llm.ThinkingLevel `json:"reasoning_effort,omitempty"`
	PromptCacheKey      string            `json:"prompt_cache_key,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is any of the roles. Content is a string, a []contentPart, or
// nil (null: an assistant message that only calls tools).
type chatMessage struct {
	Role             string         `json:"role"`
	Content          any            `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	Reasoning        string         `json:"reasoning,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type namedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// encodeRequest renders req as the JSON body of a streaming chat completion.
func encodeRequest(req *llm.Request, cfg *Config) ([]byte, error) {
	cr := chatRequest{
		Model:       req.Model,
		Stream:      true,
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Stop:        req.StopSequences,
	}
	if !cfg.NoStreamUsage {
		cr.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if req.MaxTokens > 0 {
		if cfg.MaxTokensField == "max_tokens" {
			cr.MaxTokens = req.MaxTokens
		} else {
			cr.MaxCompletionTokens = req.MaxTokens
		}
	}
	if cfg.ReasoningEffort && req.Thinking != "" && req.Thinking != llm.ThinkingNone {
		cr.ReasoningEffort = req.Thinking
	}
	if cfg.PromptCacheKey && !cfg.NoPromptCache && req.Cache != llm.CacheOff {
		cr.PromptCacheKey = req.CacheKey
	}
	if len(req.Tools) > 0 {
		cr.Tools = make([]chatTool, len(req.Tools))
		for i, t := range req.Tools {
			cr.Tools[i] = chatTool{Type: "function", Function: toolFunction{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}}
		}
		switch req.ToolChoice.Mode {
		case llm.ToolChoiceAny:
			cr.ToolChoice = "required"
		case llm.ToolChoiceNone:
			cr.ToolChoice = "none"
		case llm.ToolChoiceTool:
			var c namedToolChoice
			c.Type = "function"
			c.Function.Name = req.ToolChoice.Name
			cr.ToolChoice = c
		}
		if req.ToolChoice.DisableParallel {
			f := false
			cr.ParallelToolCalls = &f
		}
	}
	cr.Messages = encodeMessages(req)
	b, err := json.Marshal(&cr)
	if err != nil {
		return nil, &llm.Error{Category: llm.CategoryBadRequest, Message: "encoding the request: " + err.Error(), Err: err}
	}
	return b, nil
}

func encodeMessages(req *llm.Request) []chatMessage {
	msgs := make([]chatMessage, 0, len(req.Messages)+1)
	if sys := joinText(req.System, "\n\n"); sys != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: sys})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role == llm.RoleAssistant {
			msgs = append(msgs, assistantMessage(m))
			continue
		}
		msgs = appendUserMessages(msgs, m)
	}
	return msgs
}

func assistantMessage(m *llm.Message) chatMessage {
	out := chatMessage{Role: "assistant"}
	var text, reasoning strings.Builder
	field := ""
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case llm.BlockText:
			if text.Len() > 0 && b.Text != "" {
				text.WriteString("\n\n")
			}
			text.WriteString(b.Text)
		case llm.BlockThinking:
			// Only reasoning that a compatible server sent goes back, and
			// under the field it came in; other providers' thinking means
			// nothing here.
			f := b.MetaValue(MetaReasoningField)
			if f != "reasoning_content" && f != "reasoning" {
				continue
			}
			field = f
			reasoning.WriteString(b.Text)
		case llm.BlockToolUse:
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, chatToolCall{ID: b.ToolUseID, Type: "function",
				Function: chatFunction{Name: b.ToolName, Arguments: args}})
		}
	}
	switch {
	case text.Len() > 0:
		out.Content = text.String()
	case len(out.ToolCalls) == 0:
		// Content may only be null beside tool calls.
		out.Content = ""
	}
	switch field {
	case "reasoning_content":
		out.ReasoningContent = reasoning.String()
	case "reasoning":
		out.Reasoning = reasoning.String()
	}
	return out
}

// appendUserMessages renders a user message: its tool results first, as
// tool messages, then whatever else it holds as one user message.
func appendUserMessages(msgs []chatMessage, m *llm.Message) []chatMessage {
	var parts []contentPart
	nText := 0
	for i := range m.Content {
		b := &m.Content[i]
		switch b.Type {
		case llm.BlockText:
			parts = append(parts, contentPart{Type: "text", Text: b.Text})
			nText++
		case llm.BlockImage:
			parts = append(parts, imagePart(b))
		case llm.BlockToolResult:
			text := joinText(b.Content, "\n\n")
			var images []contentPart
			for j := range b.Content {
				if b.Content[j].Type == llm.BlockImage {
					images = append(images, imagePart(&b.Content[j]))
				}
			}
			if len(images) > 0 {
				if text == "" {
					text = "(the result is the image in the next message)"
				}
				parts = append(parts, contentPart{Type: "text", Text: "Image output of tool call " + b.ToolUseID + ":"})
				parts = append(parts, images...)
			}
			msgs = append(msgs, chatMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: text})
		}
	}
	switch {
	case len(parts) == 0:
	case len(parts) == 1 && nText == 1:
		msgs = append(msgs, chatMessage{Role: "user", Content: parts[0].Text})
	default:
		msgs = append(msgs, chatMessage{Role: "user", Content: parts})
	}
	return msgs
}

func imagePart(b *llm.Block) contentPart {
	url := b.URL
	if len(b.Data) > 0 {
		url = "data:" + b.MediaType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)
	}
	return contentPart{Type: "image_url", ImageURL: &imageURL{URL: url}}
}

// joinText joins the text blocks of bs with sep.
func joinText(bs []llm.Block, sep string) string {
	var sb strings.Builder
	for i := range bs {
		if bs[i].Type != llm.BlockText || bs[i].Text == "" {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(bs[i].Text)
	}
	return sb.String()
}
