package record

import (
	"time"
)

// Audit outcomes.
const (
	AuditAllowed = "allowed"
	AuditBlocked = "blocked"
	AuditError   = "error"
)

// AuditEntry records one policy decision about a tool call (seed 000's
// AuditEntry, plus the ID the store assigns).
type AuditEntry struct {
	// ID is assigned by the store, increasing in append order; ignored on
	// input.
	ID         int64     `json:"id"`
	SessionID  string    `json:"session_id"`
	TurnNumber int       `json:"turn_number"`
	Timestamp  time.Time `json:"timestamp"` // UTC
	ToolName   string    `json:"tool_name"`
	// Operation is write, edit, read, execute or invoke.
	Operation string `json:"operation"`
	// Resource is what the call touched: a path, a URL, a command.
	Resource string `json:"resource,omitempty"`
	ActorID  string `json:"actor_id,omitempty"`
	// Outcome is one of the Audit* constants.
	Outcome string `json:"outcome"`
	// Reason says why, naming the rule or hook that decided.
	Reason string            `json:"reason,omitempty"`
	Extra  map[string]string `json:"extra,omitempty"`
}

// AuditQuery selects audit entries.
type AuditQuery struct {
	// SessionID keeps one session's entries; "" keeps all.
	SessionID string
	// Since keeps entries whose Timestamp is not before it; zero keeps all.
	Since time.Time
	// Limit is how many entries to return: 0 (or less) means 100, at most
	// 1000.
	Limit int
	// AfterID pages: only entries with a greater ID.
	AfterID int64
}
