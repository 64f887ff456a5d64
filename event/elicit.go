package event

import "encoding/json"

// ElicitationRequest: an MCP server asks the person for input during a
// session's tool call; answered at POST
// /v1/sessions/{id}/elicitations/{eid} (session.Service.AnswerElicitation).
const ElicitationRequest = "elicitation_request"

// ElicitationRequestData is the payload of an elicitation_request event.
type ElicitationRequestData struct {
	ID      string `json:"id"`
	Server  string `json:"server"`
	Message string `json:"message"`
	// Mode is "form" (fill in RequestedSchema's fields) or "url" (visit
	// URL, then accept or decline).
	Mode            string          `json:"mode"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
	URL             string          `json:"url,omitempty"`
	// ToolCallID and ToolName name the tool call that caused the request,
	// when it is known.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
}
