// Package store is what a store implementation promises as a whole: the
// aggregate Store interface composed of small interfaces (sessions, their
// conversation, their event log; plan-and-execute runs with their step
// results and event log; saved workflows, schedules, memories and the
// audit trail) over the records of package record and the events of
// package event. The services do not import it: each declares the small
// interface it needs where it is used, and a Store satisfies all of them.
// Implementations: store/sqlite (the default, embedded), store/memstore
// (in memory) and store/redact (a wrapper); the conformance suite in
// store/storetest runs against every implementation.
package store

import (
	"context"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
)

// Sessions stores session headers.
type Sessions interface {
	// CreateSession stores s; ErrExists when the id is taken. CreatedAt and
	// UpdatedAt are set by the store when zero.
	CreateSession(ctx context.Context, s record.Session) (record.Session, error)
	// GetSession returns the session with its message count and last seq.
	GetSession(ctx context.Context, id string) (record.Session, error)
	// ListSessions pages through sessions, newest first.
	ListSessions(ctx context.Context, opt record.ListOptions) (record.SessionPage, error)
	// DeleteSession removes a session with its messages and events.
	DeleteSession(ctx context.Context, id string) error
	// UpdateSession replaces Title and Metadata.
	UpdateSession(ctx context.Context, s record.Session) error
}

// Messages stores the conversation the model sees.
type Messages interface {
	// AppendMessages appends to the session's conversation; ErrNotFound for
	// an unknown session.
	AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) error
	// ReplaceMessages swaps the whole conversation atomically (history
	// repair, compaction, /clear).
	ReplaceMessages(ctx context.Context, sessionID string, msgs []llm.Message) error
	// LoadMessages returns the conversation in order.
	LoadMessages(ctx context.Context, sessionID string) ([]llm.Message, error)
}

// Events stores a session's event log.
type Events interface {
	// AppendEvents stores events, assigning each the session's next seq
	// atomically (concurrent appenders never get the same seq), and returns
	// them with Seq and CreatedAt set. ErrNotFound for an unknown session.
	AppendEvents(ctx context.Context, sessionID string, events ...event.Event) ([]event.Event, error)
	// ReadEvents returns up to limit events with seq > after, in order.
	ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]event.Event, error)
}

// Turns finds the sessions a crash left with work in progress. A store
// keeps what it needs as events are appended (the turn framing above), so
// that finding them costs nothing like reading every event log.
type Turns interface {
	// ListOpenTurns returns every session with Accepted > Answered or
	// Running != 0, in no particular order.
	ListOpenTurns(ctx context.Context) ([]record.OpenTurns, error)
}

// EventBatch is one session's (or run's) events, for BatchEvents.
type EventBatch struct {
	SessionID string
	Events    []event.Event
}

// BatchEvents is implemented by event stores that store many sessions'
// events for about the price of one append (store/sqlite: one transaction
// instead of one per session). The event log's persister uses it when the
// store has it.
type BatchEvents interface {
	// AppendEventBatches appends each batch as AppendEvents would. out[i]
	// and errs[i] are batch i's stored events and error: one batch's
	// failure does not fail the others.
	AppendEventBatches(ctx context.Context, batches []EventBatch) (out [][]event.Event, errs []error)
}

// Audits stores the audit trail. It is append-only and independent of
// sessions: deleting a session keeps its audit entries.
type Audits interface {
	// AppendAudit stores entries in one transaction, assigning their IDs;
	// a zero Timestamp becomes the time of the append.
	AppendAudit(ctx context.Context, entries ...record.AuditEntry) error
	// ListAudit returns matching entries, oldest (lowest ID) first.
	ListAudit(ctx context.Context, q record.AuditQuery) ([]record.AuditEntry, error)
}

// Memories stores memories per user. Ranking and search are the caller's:
// a user's memories are few enough to score in memory.
type Memories interface {
	// AddMemory stores m and returns it as stored. The store assigns an ID
	// when it is empty (ErrExists when a given one is taken) and CreatedAt
	// when it is zero. Text must not be empty; UserID may be (one user).
	AddMemory(ctx context.Context, m record.Memory) (record.Memory, error)
	// ListMemories returns the user's memories, newest first.
	ListMemories(ctx context.Context, userID string) ([]record.Memory, error)
	// DeleteMemory removes the user's memory id; ErrNotFound when the user
	// has no such memory (another user's memory is not found either).
	DeleteMemory(ctx context.Context, userID, id string) error
}

// Workflows stores saved workflows.
type Workflows interface {
	// CreateWorkflow stores w at revision 1; ErrExists when the id is
	// taken. CreatedAt and UpdatedAt are set by the store when zero.
	CreateWorkflow(ctx context.Context, w record.Workflow) (record.Workflow, error)
	// GetWorkflow returns the workflow; ErrNotFound.
	GetWorkflow(ctx context.Context, id string) (record.Workflow, error)
	// UpdateWorkflow replaces name, description, input schema, plan,
	// canvas and published flag, bumps the revision and UpdatedAt, and
	// returns the stored workflow. With expectRevision > 0 it fails with
	// ErrConflict, changing nothing, unless the stored revision is
	// expectRevision; ErrNotFound.
	UpdateWorkflow(ctx context.Context, w record.Workflow, expectRevision int) (record.Workflow, error)
	// DeleteWorkflow removes the workflow; ErrNotFound. Runs and schedules
	// naming it are left alone.
	DeleteWorkflow(ctx context.Context, id string) error
	// ListWorkflows returns every workflow (only the published ones when
	// publishedOnly), by name (byte order), then id.
	ListWorkflows(ctx context.Context, publishedOnly bool) ([]record.Workflow, error)
}

// Schedules stores schedules.
type Schedules interface {
	// CreateSchedule stores s; ErrExists when the id is taken. CreatedAt
	// is set by the store when zero.
	CreateSchedule(ctx context.Context, s record.Schedule) (record.Schedule, error)
	// GetSchedule returns the schedule; ErrNotFound.
	GetSchedule(ctx context.Context, id string) (record.Schedule, error)
	// UpdateSchedule replaces every field but ID and CreatedAt;
	// ErrNotFound.
	UpdateSchedule(ctx context.Context, s record.Schedule) error
	// DeleteSchedule removes the schedule; ErrNotFound.
	DeleteSchedule(ctx context.Context, id string) error
	// ListSchedules returns every schedule (only the active ones when
	// activeOnly), soonest NextRunAt first, then by id.
	ListSchedules(ctx context.Context, activeOnly bool) ([]record.Schedule, error)
}

// Runs stores plan-and-execute runs, their step results and their event
// logs.
type Runs interface {
	// CreateRun stores r; ErrExists when the id is taken. An empty Status
	// means RunPlanning. CreatedAt and UpdatedAt are set by the store when
	// zero; LastSeq is ignored.
	CreateRun(ctx context.Context, r record.Run) (record.Run, error)
	// GetRun returns the run with its last event seq; ErrNotFound.
	GetRun(ctx context.Context, id string) (record.Run, error)
	// UpdateRun replaces every field but ID, CreatedAt and LastSeq, and
	// moves UpdatedAt to now (never backwards); ErrNotFound.
	UpdateRun(ctx context.Context, r record.Run) error
	// ListRuns pages through runs, newest (CreatedAt, then ID) first.
	ListRuns(ctx context.Context, q record.RunQuery) (record.RunPage, error)
	// DeleteRun removes a run with its step results and events.
	DeleteRun(ctx context.Context, id string) error
	// PutStepResult inserts or replaces the result of (RunID, StepID);
	// ErrNotFound for an unknown run.
	PutStepResult(ctx context.Context, s record.StepResult) error
	// StepResults returns the run's step results by Index (then StepID);
	// ErrNotFound for an unknown run.
	StepResults(ctx context.Context, runID string) ([]record.StepResult, error)
	// DeleteStepResults removes, atomically, the run's step results for
	// which keep returns false (every one when keep is nil): rewind keeps
	// the first N, resume keeps the completed ones. keep is called with
	// the store's write lock held, so it must only look at its argument.
	DeleteStepResults(ctx context.Context, runID string, keep func(record.StepResult) bool) error
	// InterruptRuns marks every live run (planning, awaiting approval,
	// running) interrupted and returns their ids, sorted. Called once at
	// start-up, before any run starts: a live run in the store then is one
	// a crash or restart cut off.
	InterruptRuns(ctx context.Context) ([]string, error)
	// RunEvents is the runs' event log, with the Events contract keyed by
	// run id instead of session id (Event.SessionID carries the run id):
	// seqs per run from 1, ErrNotFound for an unknown run.
	RunEvents() Events
}

// Store is everything the runtime persists.
type Store interface {
	Sessions
	Messages
	Events
	Turns
	Runs
	Workflows
	Schedules
	Memories
	Audits
	Usage
	Close() error
}
