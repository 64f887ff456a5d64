package agent

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The events of sub-agents (seed 000), in the parent's stream.
const (
	// EventSubagentStart: a sub-agent's run began (SubagentStartData).
	EventSubagentStart EventType = "subagent_start"
	// EventSubagentEvent wraps one event of a sub-agent's run
	// (SubagentEventData): every event but the text and thinking deltas,
	// whose complete blocks follow as text and thinking.
	EventSubagentEvent EventType = "subagent_event"
	// EventSubagentEnd: a sub-agent's run ended, on every exit path
	// (SubagentEndData).
	EventSubagentEnd EventType = "subagent_end"
)

// subagent_end statuses.
const (
	SubagentRunning   = "running"
	SubagentCompleted = "completed"
	SubagentFailed    = "failed"
	SubagentCancelled = "cancelled"
)

// SubagentResultCap bounds subagent_end's result in bytes (seed 000: 2 KB,
// cut with "..."), so that an event stays small; the whole answer goes to
// the parent's model as the tool result.
const SubagentResultCap = 2048

// SubagentStartData is subagent_start's payload. ParentToolUseID and
// SubagentType go beyond seed 000: they tie the sub-agent to the parent's
// tool call (Claude Code's parent_tool_use_id) and name its type.
type SubagentStartData struct {
	SubagentID      string `json:"subagent_id"`
	Description     string `json:"description,omitempty"`
	Cwd             string `json:"cwd,omitempty"`
	Model           string `json:"model,omitempty"`
	StartTimeMS     int64  `json:"start_time_ms"`
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"`
	SubagentType    string `json:"subagent_type,omitempty"`
}

// SubagentEventData is subagent_event's payload: the sub-agent's event
// with its id. Its JSON is flat (seed 000): subagent_id, event_type,
// parent_tool_use_id (when set) and then the inner event's own fields,
// so that a client reads the sub-agent and the event in one parse.
type SubagentEventData struct {
	SubagentID      string
	ParentToolUseID string
	Event           Event
}

// MarshalJSON renders the flat merge.
func (d SubagentEventData) MarshalJSON() ([]byte, error) {
	inner, err := json.Marshal(d.Event.Data)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(`{"subagent_id":`)
	id, _ := json.Marshal(d.SubagentID)
	b.Write(id)
	b.WriteString(`,"event_type":`)
	typ, _ := json.Marshal(string(d.Event.Type))
	b.Write(typ)
	if d.ParentToolUseID != "" {
		b.WriteString(`,"parent_tool_use_id":`)
		p, _ := json.Marshal(d.ParentToolUseID)
		b.Write(p)
	}
	inner = bytes.TrimSpace(inner)
	switch {
	case len(inner) > 2 && inner[0] == '{':
		b.WriteByte(',')
		b.Write(inner[1:])
	case len(inner) > 0 && inner[0] == '{': // {}
		b.WriteByte('}')
	default: // a payload that is not an object (none of weft's)
		b.WriteString(`,"data":`)
		b.Write(inner)
		b.WriteByte('}')
	}
	return b.Bytes(), nil
}

// SubagentEndData is subagent_end's payload. Result is the run's final
// text cut to SubagentResultCap bytes; Error is set unless it completed.
type SubagentEndData struct {
	SubagentID      string `json:"subagent_id"`
	DurationMS      int64  `json:"duration_ms"`
	Status          string `json:"status"`
	Result          string `json:"result"`
	Error           string `json:"error,omitempty"`
	ParentToolUseID string `json:"parent_tool_use_id,omitempty"`
}

// capResult cuts s to SubagentResultCap bytes, "..." included, on a
// character boundary.
func capResult(s string) string {
	if len(s) <= SubagentResultCap {
		return s
	}
	n := SubagentResultCap - len("...")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
