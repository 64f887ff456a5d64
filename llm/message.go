// Package llm is weft's model contract: typed conversation blocks, a request,
// and a strictly framed stream of events that every provider produces.
//
// The engine sees only these types. Wire protocols live in the provider
// packages (llm/anthropic, llm/openai, llm/gemini), which translate both ways
// and keep provider-specific data opaque in Block.Meta.
package llm

import "encoding/json"

// Role is who authored a message. Tool results travel in user messages, as
// the Anthropic protocol has them; providers that want a separate role
// (OpenAI's "tool") translate on the way out.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType says which fields of a Block are meaningful.
type BlockType string

const (
	BlockText       BlockType = "text"
	BlockThinking   BlockType = "thinking"
	BlockImage      BlockType = "image"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
)

// Block is one piece of message content. It is a flat struct rather than an
// interface so that streaming code can build and copy blocks without
// allocating, and so that it round-trips through JSON storage unchanged.
type Block struct {
	Type BlockType `json:"type"`

	// Text is the text of a text block, the reasoning of a thinking block.
	Text string `json:"text,omitempty"`

	// Image blocks: either inline data or a URL.
	MediaType string `json:"media_type,omitempty"`
	Data      []byte `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`

	// Tool use: the call id, the tool name and its JSON arguments.
	// Tool result: ToolUseID names the call it answers.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	ToolName  string          `json:"tool_name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`

	// Tool result content (text and image blocks) and whether it is an error.
	Content []Block `json:"content,omitempty"`
	IsError bool    `json:"is_error,omitempty"`

	// CacheHint asks providers that support prompt caching to cache the
	// prompt up to and including this block.
	CacheHint bool `json:"cache_hint,omitempty"`

	// Meta carries opaque provider data (thinking signatures, redacted
	// thinking, reasoning field names) that must be sent back verbatim.
	// Keys are namespaced by provider, e.g. "anthropic.signature"; a provider
	// ignores keys it does not own. The engine never interprets them.
	Meta map[string]string `json:"meta,omitempty"`
}

// Message is one conversation turn.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// Text returns a text block.
func Text(s string) Block { return Block{Type: BlockText, Text: s} }

// Thinking returns a thinking block with provider metadata.
func Thinking(s string, meta map[string]string) Block {
	return Block{Type: BlockThinking, Text: s, Meta: meta}
}

// Image returns an inline image block.
func Image(mediaType string, data []byte) Block {
	return Block{Type: BlockImage, MediaType: mediaType, Data: data}
}

// ToolUse returns a tool call block. input must be a JSON object.
func ToolUse(id, name string, input json.RawMessage) Block {
	return Block{Type: BlockToolUse, ToolUseID: id, ToolName: name, Input: input}
}

// ToolResult returns the result of the call with the given id.
func ToolResult(id string, isError bool, content ...Block) Block {
	return Block{Type: BlockToolResult, ToolUseID: id, IsError: isError, Content: content}
}

// UserText is a user message holding one text block.
func UserText(s string) Message { return Message{Role: RoleUser, Content: []Block{Text(s)}} }

// Text concatenates the message's text blocks.
func (m *Message) Text() string {
	var n int
	for i := range m.Content {
		if m.Content[i].Type == BlockText {
			n += len(m.Content[i].Text)
		}
	}
	buf := make([]byte, 0, n)
	for i := range m.Content {
		if m.Content[i].Type == BlockText {
			buf = append(buf, m.Content[i].Text...)
		}
	}
	return string(buf)
}

// ToolUses returns the message's tool_use blocks in order.
func (m *Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// MetaValue returns b.Meta[key], or "" when absent.
func (b *Block) MetaValue(key string) string {
	if b.Meta == nil {
		return ""
	}
	return b.Meta[key]
}

// SetMeta sets b.Meta[key], allocating the map on first use.
func (b *Block) SetMeta(key, value string) {
	if b.Meta == nil {
		b.Meta = make(map[string]string, 1)
	}
	b.Meta[key] = value
}
