// Package event is the event log's record and the names of every event
// type weft stores, in one place: the session services', the run
// service's, and the agent's stream (whose names are agent.EventType
// constants; the ones the services and front doors key on are repeated
// here as plain strings so that neither needs the agent to name them).
package event

import (
	"encoding/json"
	"time"
)

// Event is one appended event of a session (or of a run: SessionID then
// carries the run id). Seq is per session, strictly increasing from 1
// with no gaps.
type Event struct {
	SessionID string          `json:"session_id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
}

// Turn framing. A session's event log frames its turns with four event
// types, which the store understands so that the work a crash cut off can
// be found without reading event logs:
//   - user_message: a message accepted (its seq is the message's);
//   - message_consumed, data {"message_seq": N}: message N's turn started;
//   - message_dropped, data {"message_seq": N}: message N will never run;
//   - done: the running turn ended.
//
// Messages are started or dropped in the order of their seqs.
const (
	UserMessage     = "user_message"
	MessageConsumed = "message_consumed"
	MessageDropped  = "message_dropped"
	Done            = "done" // ends every turn (after Error when it failed); agent.EventDone
)

// Session events the session service emits besides the agent's stream.
const (
	// Error: a turn failed (agent.EventError); Done follows.
	Error = "error"
	// PermissionRequest: a tool call waits for a person's answer.
	PermissionRequest = "permission_request"
	// Checkpoint: a tool that requires a checkpoint waits for its
	// confirmation.
	Checkpoint = "checkpoint"
	// SessionRewound: a rewind cut the conversation back. The event log
	// itself is append-only (seqs keep increasing); what a rewind cuts is
	// the conversation the model sees.
	SessionRewound = "session_rewound"
)

// StopInterrupted is the stop_reason of a turn a crash (or kill) cut off,
// ended when the service starts again.
const StopInterrupted = "interrupted"

// Run event types (seed 001's, plus what weft adds: permission_request and
// checkpoint as for sessions; cancelled, interrupted and resumed).
const (
	RunPlanToken    = "plan_token"
	RunPlanReady    = "plan_ready"
	RunPlanApproval = "plan_approval_requested"
	RunStepStart    = "step_start"
	RunStepComplete = "step_complete"
	RunStepApproval = "step_approval_requested"
	RunPermission   = PermissionRequest
	RunCheckpoint   = Checkpoint
	RunComplete     = "complete"
	RunError        = Error
	RunCancelled    = "cancelled"
	RunInterrupted  = "interrupted"
	RunResumed      = "resumed"
)
