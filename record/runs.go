package record

import (
	"encoding/json"
	"time"
)

// Run statuses. A run is live while planning, awaiting approval or
// running; the others are final until a resume, fork or rewind starts it
// again (as a new run, or the same one back in planning).
const (
	RunPlanning         = "planning"
	RunAwaitingApproval = "awaiting_approval"
	RunRunning          = "running"
	RunCompleted        = "completed"
	RunFailed           = "failed"
	RunCancelled        = "cancelled"
	RunInterrupted      = "interrupted"
	// RunBudget: the run stopped before a model call that would have
	// taken it past its budget (max_budget_usd, max_tokens_total), and
	// nobody allowed more. Final, and resumable like a failed run.
	RunBudget = "budget"
)

// ValidRunStatus reports whether s is one of the Run* statuses.
func ValidRunStatus(s string) bool {
	switch s {
	case RunPlanning, RunAwaitingApproval, RunRunning, RunCompleted, RunFailed, RunCancelled, RunInterrupted, RunBudget:
		return true
	}
	return false
}

// Step statuses.
const (
	StepRunning   = "running"
	StepCompleted = "completed"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
	StepCancelled = "cancelled"
)

// ValidStepStatus reports whether s is one of the Step* statuses.
func ValidStepStatus(s string) bool {
	switch s {
	case StepRunning, StepCompleted, StepFailed, StepSkipped, StepCancelled:
		return true
	}
	return false
}

// Run is a stored plan-and-execute run's header. The JSON fields are opaque
// to the store and come back byte for byte.
type Run struct {
	ID     string          `json:"runId"`
	Goal   string          `json:"goal"`
	Status string          `json:"status"` // one of the Run* constants
	Plan   json.RawMessage `json:"plan,omitempty"`
	Config json.RawMessage `json:"config,omitempty"`
	Inputs json.RawMessage `json:"inputs,omitempty"`
	Files  json.RawMessage `json:"files,omitempty"`
	// Posture is the permission/sandbox posture the run was created under;
	// resume, fork and rewind refuse a weaker one.
	Posture    json.RawMessage `json:"posture,omitempty"`
	WorkflowID string          `json:"workflowId,omitempty"`
	// ParentID is the run this one was forked, resumed or rewound from.
	ParentID  string    `json:"parentId,omitempty"`
	BatchID   string    `json:"batchId,omitempty"`
	Summary   string    `json:"summary,omitempty"`
	Error     string    `json:"error,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// LastSeq is the highest run event seq appended, 0 when none.
	LastSeq int64 `json:"lastSeq"`
}

// StepResult is the outcome of one plan step of a run.
type StepResult struct {
	RunID  string `json:"-"`
	StepID string `json:"stepId"`
	// Index is the step's position in the plan; results are listed by it.
	Index      int             `json:"index"`
	Status     string          `json:"status"` // one of the Step* constants
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	StartedAt  time.Time       `json:"startedAt,omitzero"`
	FinishedAt time.Time       `json:"finishedAt,omitzero"`
}

// RunQuery filters and pages ListRuns.
type RunQuery struct {
	// Q keeps runs whose goal, summary or error contains it, ignoring case
	// (Unicode lower-casing). "" keeps all.
	Q string
	// Status keeps runs in this status. "" keeps all.
	Status string
	Limit  int    // 0 means 50; at most 500
	Cursor string // from the previous page's NextCursor; "" for the first page
}

// RunPage is one page of runs.
type RunPage struct {
	Runs       []Run  `json:"runs"`
	NextCursor string `json:"nextCursor,omitempty"`
}
