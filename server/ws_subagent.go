package server

import (
	"encoding/json"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/session"
)

// foldSubagent translates the subagent_* events of the log into the
// WebSocket's tool_execution updates, each with the sub-agent's id and
// the parent's Agent call (see the mapping in ws.go): a client that knows
// only tool_execution shows sub-agents as progress of the Agent call. It
// reports whether ev was one of them.
func (t *wsTranslator) foldSubagent(ev session.Event) bool {
	seq := ev.Seq
	switch agent.EventType(ev.Type) {
	case agent.EventSubagentStart:
		var d agent.SubagentStartData
		if json.Unmarshal(ev.Data, &d) != nil {
			return true
		}
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: "tool_execution", Message: "Agent", Content: d.Description,
			ToolUseID: d.ParentToolUseID, ParentTool: d.ParentToolUseID, SubagentID: d.SubagentID, Phase: "subagent_start"})
	case agent.EventSubagentEnd:
		var d agent.SubagentEndData
		if json.Unmarshal(ev.Data, &d) != nil {
			return true
		}
		content := d.Result
		if d.Status != agent.SubagentCompleted {
			content = d.Error
		}
		t.emit(wsEvent{Seq: seq, Source: srcAI, Type: "tool_execution", Message: "Agent", Content: summary(content),
			ToolUseID: d.ParentToolUseID, ParentTool: d.ParentToolUseID, SubagentID: d.SubagentID, Phase: "subagent_end",
			IsError: d.Status != agent.SubagentCompleted})
	case agent.EventSubagentEvent:
		// The flat merge: the sub-agent, the inner event's type and its
		// fields side by side.
		var d struct {
			SubagentID string          `json:"subagent_id"`
			EventType  string          `json:"event_type"`
			Parent     string          `json:"parent_tool_use_id"`
			ID         string          `json:"id"`
			ToolName   string          `json:"tool_name"`
			Input      json.RawMessage `json:"input"`
			Detail     string          `json:"detail"`
			Output     string          `json:"output"`
			IsError    bool            `json:"is_error"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return true
		}
		e := wsEvent{Seq: seq, Source: srcAI, Type: "tool_execution", Message: d.ToolName, ToolUseID: d.ID,
			ParentTool: d.Parent, SubagentID: d.SubagentID}
		switch agent.EventType(d.EventType) {
		case agent.EventToolUse:
			e.Content, e.Phase = summary(string(d.Input)), "start"
		case agent.EventToolProgress:
			e.Content, e.Phase = summary(d.Detail), "progress"
		case agent.EventToolResult:
			e.Content, e.Phase, e.IsError = summary(d.Output), "result", d.IsError
		default:
			return true // text, turns: the sub-agent's answer comes with subagent_end
		}
		t.emit(e)
	default:
		return false
	}
	return true
}
