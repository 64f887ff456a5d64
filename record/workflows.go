package record

import (
	"encoding/json"
	"time"
)

// Workflow is a saved plan with an input contract. Plan, InputSchema and
// Canvas are opaque to the store and come back byte for byte: the canvas
// in particular is the UI's graph exactly as the UI sent it, whitespace
// and key order included.
type Workflow struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Plan        json.RawMessage `json:"plan"`
	Canvas      json.RawMessage `json:"canvas,omitempty"`
	Published   bool            `json:"published"`
	// Revision is 1 at creation and grows by one with every update.
	Revision  int       `json:"revision"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Schedule fires a workflow run at intervals, or once after a delay.
// Policy (minimum interval, how many may be active, expiry) is the
// runtime's; the store keeps what it is given.
type Schedule struct {
	ID              string          `json:"id"`
	WorkflowID      string          `json:"workflowId"`
	Inputs          json.RawMessage `json:"inputs,omitempty"`
	IntervalSeconds int             `json:"intervalSeconds"`
	Recurring       bool            `json:"recurring"`
	Active          bool            `json:"active"`
	NextRunAt       time.Time       `json:"nextRunAt"`
	ExpiresAt       time.Time       `json:"expiresAt"`
	CreatedAt       time.Time       `json:"createdAt"`
	LastRunAt       time.Time       `json:"lastRunAt,omitzero"`
	RunCount        int             `json:"runCount"`
	LastTaskID      string          `json:"lastTaskId,omitempty"`
	// LastError says why the most recent failed firing failed, and
	// LastErrorAt when; a successful firing clears both.
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
}
