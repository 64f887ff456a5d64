package event

import "encoding/json"

// PermissionRequestData is the payload of a permission_request event
// (seed 000): answered through the service that emitted it (session.Service.Answer, run.Service.AnswerPermission).
type PermissionRequestData struct {
	ID       string          `json:"id"`
	ToolName string          `json:"tool_name"`
	Input    json.RawMessage `json:"input"`
	Message  string          `json:"message"`
	ToolUse  string          `json:"tool_use_id"`
	Reason   string          `json:"reason,omitempty"`
	// Origin is set when a sub-agent makes the call.
	Origin *Origin `json:"origin,omitempty"`
}

// Origin names the sub-agent that made a call: its id, the parent's tool
// call that started it, and its type.
type Origin struct {
	SubagentID string `json:"subagent_id"`
	ToolUseID  string `json:"parent_tool_use_id,omitempty"`
	Type       string `json:"subagent_type,omitempty"`
}

// CheckpointData is the payload of a checkpoint event: a tool that needs
// confirmation before it runs (seed 000's CheckpointEvent). It is answered
// like a permission request, on the same endpoint.
type CheckpointData struct {
	ID         string          `json:"id"`
	ToolCallID string          `json:"tool_call_id"`
	ToolName   string          `json:"tool_name"`
	Input      json.RawMessage `json:"input"`
	Message    string          `json:"message"`
}
