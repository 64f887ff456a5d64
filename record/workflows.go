package store

import (
	"context"
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

// Workflows stores saved workflows.
type Workflows interface {
	// CreateWorkflow stores w at revision 1; ErrExists when the id is
	// taken. CreatedAt and UpdatedAt are set by the store when zero.
	CreateWorkflow(ctx context.Context, w Workflow) (Workflow, error)
	// GetWorkflow returns the workflow; ErrNotFound.
	GetWorkflow(ctx context.Context, id string) (Workflow, error)
	// UpdateWorkflow replaces name, description, input schema, plan,
	// canvas and published flag, bumps the revision and UpdatedAt, and
	// returns the stored workflow. With expectRevision > 0 it fails with
	// ErrConflict, changing nothing, unless the stored revision is
	// expectRevision; ErrNotFound.
	UpdateWorkflow(ctx context.Context, w Workflow, expectRevision int) (Workflow, error)
	// DeleteWorkflow removes the workflow; ErrNotFound. Runs and schedules
	// naming it are left alone.
	DeleteWorkflow(ctx context.Context, id string) error
	// ListWorkflows returns every workflow (only the published ones when
	// publishedOnly), by name (byte order), then id.
	ListWorkflows(ctx context.Context, publishedOnly bool) ([]Workflow, error)
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

// Schedules stores schedules.
type Schedules interface {
	// CreateSchedule stores s; ErrExists when the id is taken. CreatedAt
	// is set by the store when zero.
	CreateSchedule(ctx context.Context, s Schedule) (Schedule, error)
	// GetSchedule returns the schedule; ErrNotFound.
	GetSchedule(ctx context.Context, id string) (Schedule, error)
	// UpdateSchedule replaces every field but ID and CreatedAt;
	// ErrNotFound.
	UpdateSchedule(ctx context.Context, s Schedule) error
	// DeleteSchedule removes the schedule; ErrNotFound.
	DeleteSchedule(ctx context.Context, id string) error
	// ListSchedules returns every schedule (only the active ones when
	// activeOnly), soonest NextRunAt first, then by id.
	ListSchedules(ctx context.Context, activeOnly bool) ([]Schedule, error)
}
