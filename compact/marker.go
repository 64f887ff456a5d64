package compact

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/weft-run/weft/llm"
)

// Level names a kind of compaction.
type Level string

const (
	// LevelToolCap: a round of tool results was cut to its share of the
	// window as it entered the history.
	LevelToolCap Level = "tool_cap"
	// LevelMicro: old tool results were replaced by stubs.
	LevelMicro Level = "micro"
	// LevelSummary: the middle of the conversation was replaced by a
	// summary (or, when the summary could not be written, dropped; the
	// marker's Note says so).
	LevelSummary Level = "summary"
	// LevelTruncate: messages too large for the window were cut.
	LevelTruncate Level = "truncate"
	// LevelMaxMessages: the oldest messages were dropped to keep at most
	// the configured number.
	LevelMaxMessages Level = "max_messages"
)

// Trigger says why a compaction ran.
type Trigger string

const (
	TriggerAuto          Trigger = "auto"            // a threshold was passed
	TriggerPromptTooLong Trigger = "prompt_too_long" // the provider refused the prompt
	TriggerManual        Trigger = "manual"          // asked for (Session.Compact, /compact)
)

// Meta keys weft sets on the blocks it writes or changes (providers send
// no Meta key they do not own, so these never reach a model).
const (
	// MetaStub marks a tool result replaced by a stub ("1").
	MetaStub = "weft.stub"
	// MetaCut marks a tool result or text whose middle was cut ("1").
	MetaCut = "weft.cut"
	// MetaSummary marks the blocks a compaction added to the first
	// message: "summary", "user_messages" or "note".
	MetaSummary = "weft.summary"
	// MetaUserMessages holds, on the "user_messages" block, the
	// carried-over user messages as a JSON array of strings.
	MetaUserMessages = "weft.user_messages"
)

// Marker records one compaction: how the model's view of the conversation
// changed. Apply replays it; in a Transcript it sits where it happened.
type Marker struct {
	Level        Level   `json:"level"`
	Trigger      Trigger `json:"trigger"`
	TokensBefore int     `json:"tokens_before"`
	TokensAfter  int     `json:"tokens_after"`
	// Note says what happened beyond the level (a summary that could
	// not be written and what was done instead).
	Note string `json:"note,omitempty"`
	// Edits change blocks in place (applied first).
	Edits []Edit `json:"edits,omitempty"`
	// Segments, when set, are the new view: ranges of the view (after
	// the edits) and new messages, in order.
	Segments []Segment `json:"segments,omitempty"`
}

// Edit replaces one block's content: a tool result's (by ToolUseID) or a
// text block's (by Msg and Block index).
type Edit struct {
	ToolUseID string      `json:"tool_use_id,omitempty"`
	Content   []llm.Block `json:"content,omitempty"`
	Msg       int         `json:"msg,omitempty"`
	Block     int         `json:"block,omitempty"`
	// Text replaces a text block's text; an image block it names becomes
	// a text block.
	Text string `json:"text,omitempty"`
	// Input replaces a tool call's arguments.
	Input json.RawMessage `json:"input,omitempty"`
	// Kind is the Meta key the changed block is marked with: MetaStub or
	// MetaCut.
	Kind string `json:"kind"`
}

// Segment is part of a new view: the view's messages [From, To), or
// Message.
type Segment struct {
	From    int          `json:"from,omitempty"`
	To      int          `json:"to,omitempty"`
	Message *llm.Message `json:"message,omitempty"`
}

// Apply returns view as the marker leaves it. view is not changed.
func (m *Marker) Apply(view []llm.Message) []llm.Message {
	out := view
	if len(m.Edits) > 0 {
		out = applyEdits(view, m.Edits)
	}
	if m.Segments != nil {
		next := make([]llm.Message, 0, len(out))
		for _, s := range m.Segments {
			if s.Message != nil {
				next = appendMerged(next, *s.Message)
				continue
			}
			from, to := max(s.From, 0), min(s.To, len(out))
			for i := from; i < to; i++ {
				next = appendMerged(next, out[i])
			}
		}
		out = next
	}
	return out
}

func applyEdits(view []llm.Message, edits []Edit) []llm.Message {
	out := make([]llm.Message, len(view))
	copy(out, view)
	copied := make(map[int]bool)
	own := func(i int) {
		if !copied[i] {
			out[i].Content = append([]llm.Block(nil), out[i].Content...)
			copied[i] = true
		}
	}
	var results map[string][2]int // tool result id -> message, block
	for _, e := range edits {
		if e.ToolUseID != "" {
			if results == nil {
				results = resultIndex(out)
			}
			at, ok := results[e.ToolUseID]
			if !ok {
				continue
			}
			own(at[0])
			b := &out[at[0]].Content[at[1]]
			b.Content = e.Content
			b.Meta = withMeta(b.Meta, e.Kind)
			continue
		}
		if e.Msg < 0 || e.Msg >= len(out) || e.Block < 0 || e.Block >= len(out[e.Msg].Content) {
			continue
		}
		own(e.Msg)
		b := &out[e.Msg].Content[e.Block]
		switch {
		case b.Type == llm.BlockToolUse && e.Input != nil:
			b.Input = e.Input
			b.Meta = withMeta(b.Meta, e.Kind)
		case b.Type == llm.BlockText, b.Type == llm.BlockImage:
			*b = llm.Block{Type: llm.BlockText, Text: e.Text, Meta: withMeta(b.Meta, e.Kind)}
		}
	}
	return out
}

func withMeta(meta map[string]string, kind string) map[string]string {
	out := maps.Clone(meta)
	if out == nil {
		out = make(map[string]string, 1)
	}
	if kind != "" {
		out[kind] = "1"
	}
	return out
}

// resultIndex maps each tool result's id to where it is.
func resultIndex(view []llm.Message) map[string][2]int {
	idx := make(map[string][2]int)
	for i := range view {
		for j, b := range view[i].Content {
			if b.Type == llm.BlockToolResult {
				idx[b.ToolUseID] = [2]int{i, j}
			}
		}
	}
	return idx
}

// appendMerged appends m, merging it into the last message when both have
// the same role (as the agent's history does: providers reject two turns
// of one role in a row).
func appendMerged(msgs []llm.Message, m llm.Message) []llm.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		last := msgs[n-1]
		content := make([]llm.Block, 0, len(last.Content)+len(m.Content))
		content = append(content, last.Content...)
		content = append(content, m.Content...)
		msgs[n-1] = llm.Message{Role: m.Role, Content: content}
		return msgs
	}
	return append(msgs, m)
}

// RoleMarker is the role of a marker message in a transcript, and
// BlockMarker the type of its one block: Text describes the compaction
// for people, Input holds the Marker. No provider is ever sent one.
const (
	RoleMarker  llm.Role      = "compaction"
	BlockMarker llm.BlockType = "compaction"
)

// Message is the marker as a transcript message.
func (m Marker) Message() llm.Message {
	data, err := json.Marshal(m)
	if err != nil {
		// Only blocks and strings: it cannot fail; keep the marker
		// recognisable should it ever.
		data = []byte(`{}`)
	}
	return llm.Message{Role: RoleMarker, Content: []llm.Block{{Type: BlockMarker, Text: m.Describe(), Input: data}}}
}

// Describe is a one-line account of the compaction.
func (m Marker) Describe() string {
	s := fmt.Sprintf("context compacted (%s, %s): %d -> %d tokens", m.Level, m.Trigger, m.TokensBefore, m.TokensAfter)
	if m.Note != "" {
		s += "; " + m.Note
	}
	return s
}

// IsMarker reports whether msg is a transcript's marker message.
func IsMarker(msg *llm.Message) bool { return msg.Role == RoleMarker }

// ParseMarker returns the marker msg holds.
func ParseMarker(msg *llm.Message) (Marker, bool) {
	if !IsMarker(msg) || len(msg.Content) != 1 || msg.Content[0].Type != BlockMarker {
		return Marker{}, false
	}
	var m Marker
	if err := json.Unmarshal(msg.Content[0].Input, &m); err != nil {
		return Marker{}, false
	}
	return m, true
}
