// Package redact keeps registered secret values out of storage: Store
// wraps a store.Store so that every row written through it, whatever the
// table and whatever the field (conversation messages with their tool
// inputs and results, events, runs with their goal, plan, inputs and step
// results, workflows, schedules, memories, audit entries, session
// metadata), has every registered value replaced by "[SECRET:NAME]"
// (secret.Redacted) before the wrapped store sees it. weft serve wraps its
// database once and hands only the wrapped store to the runtime, the run
// manager, the scheduler, memory and the audit sink.
//
// Reads pass through unchanged: what was written is already redacted.
package redact

import (
	"context"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// Store returns s redacting with set. The wrapper implements
// store.BatchEvents when s does (the event log batches through it); other
// optional interfaces of s are hidden: reach them through Unwrap. A nil
// set returns s itself.
func Store(s store.Store, set *secret.Set) store.Store {
	if set == nil {
		return s
	}
	r := &redacting{Store: s, set: set, runEvents: events(s.RunEvents(), set)}
	if b, ok := s.(store.BatchEvents); ok {
		return &batchRedacting{redacting: r, batch: batchEvents{b, set}}
	}
	return r
}

// Unwrap returns the store Store wrapped, or s when it is not a wrapper.
func Unwrap(s store.Store) store.Store {
	if u, ok := s.(interface{ Unwrap() store.Store }); ok {
		return u.Unwrap()
	}
	return s
}

// redacting overrides every method of store.Store that writes; the
// embedded store answers the rest (reads, deletes). A test holds the list
// to store.Store's methods, so a new writing method cannot slip through
// unredacted.
type redacting struct {
	store.Store
	set       *secret.Set
	runEvents store.Events
}

func (r *redacting) Unwrap() store.Store { return r.Store }

// Ping forwards the wrapped store's health check, so that a health probe
// through the wrapper still reaches the database's own (store/sqlite
// checks both its connections); a store without one answers a read.
func (r *redacting) Ping(ctx context.Context) error {
	if p, ok := r.Store.(interface{ Ping(context.Context) error }); ok {
		return p.Ping(ctx)
	}
	_, err := r.Store.ListSessions(ctx, record.ListOptions{Limit: 1})
	return err
}

func (r *redacting) CreateSession(ctx context.Context, s record.Session) (record.Session, error) {
	return r.Store.CreateSession(ctx, secret.Redacted(r.set, s))
}

func (r *redacting) UpdateSession(ctx context.Context, s record.Session) error {
	return r.Store.UpdateSession(ctx, secret.Redacted(r.set, s))
}

func (r *redacting) AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) error {
	return r.Store.AppendMessages(ctx, sessionID, secret.Redacted(r.set, msgs)...)
}

func (r *redacting) ReplaceMessages(ctx context.Context, sessionID string, msgs []llm.Message) error {
	return r.Store.ReplaceMessages(ctx, sessionID, secret.Redacted(r.set, msgs))
}

func (r *redacting) AppendEvents(ctx context.Context, sessionID string, evs ...event.Event) ([]event.Event, error) {
	return r.Store.AppendEvents(ctx, sessionID, secret.Redacted(r.set, evs)...)
}

func (r *redacting) CreateRun(ctx context.Context, run record.Run) (record.Run, error) {
	return r.Store.CreateRun(ctx, secret.Redacted(r.set, run))
}

func (r *redacting) UpdateRun(ctx context.Context, run record.Run) error {
	return r.Store.UpdateRun(ctx, secret.Redacted(r.set, run))
}

func (r *redacting) PutStepResult(ctx context.Context, s record.StepResult) error {
	return r.Store.PutStepResult(ctx, secret.Redacted(r.set, s))
}

func (r *redacting) RunEvents() store.Events { return r.runEvents }

func (r *redacting) CreateWorkflow(ctx context.Context, w record.Workflow) (record.Workflow, error) {
	return r.Store.CreateWorkflow(ctx, secret.Redacted(r.set, w))
}

func (r *redacting) UpdateWorkflow(ctx context.Context, w record.Workflow, expectRevision int) (record.Workflow, error) {
	return r.Store.UpdateWorkflow(ctx, secret.Redacted(r.set, w), expectRevision)
}

func (r *redacting) CreateSchedule(ctx context.Context, s record.Schedule) (record.Schedule, error) {
	return r.Store.CreateSchedule(ctx, secret.Redacted(r.set, s))
}

func (r *redacting) UpdateSchedule(ctx context.Context, s record.Schedule) error {
	return r.Store.UpdateSchedule(ctx, secret.Redacted(r.set, s))
}

func (r *redacting) AddMemory(ctx context.Context, m record.Memory) (record.Memory, error) {
	return r.Store.AddMemory(ctx, secret.Redacted(r.set, m))
}

func (r *redacting) AppendAudit(ctx context.Context, entries ...record.AuditEntry) error {
	return r.Store.AppendAudit(ctx, secret.Redacted(r.set, entries)...)
}

// AppendUsage redacts the ids and names too: a session id is a client's
// choice and could be anything.
func (r *redacting) AppendUsage(ctx context.Context, recs ...record.UsageRecord) error {
	return r.Store.AppendUsage(ctx, secret.Redacted(r.set, recs)...)
}

// batchRedacting is a redacting store over one that batches events.
type batchRedacting struct {
	*redacting
	batch batchEvents
}

func (b *batchRedacting) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]event.Event, []error) {
	return b.batch.AppendEventBatches(ctx, batches)
}

type batchEvents struct {
	store.BatchEvents
	set *secret.Set
}

func (b batchEvents) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]event.Event, []error) {
	return b.BatchEvents.AppendEventBatches(ctx, secret.Redacted(b.set, batches))
}

// events wraps an event log of the store (the runs'), keeping its
// batching.
func events(e store.Events, set *secret.Set) store.Events {
	r := redactingEvents{Events: e, set: set}
	if b, ok := e.(store.BatchEvents); ok {
		return batchRedactingEvents{redactingEvents: r, batch: batchEvents{b, set}}
	}
	return r
}

type redactingEvents struct {
	store.Events
	set *secret.Set
}

func (r redactingEvents) AppendEvents(ctx context.Context, id string, evs ...event.Event) ([]event.Event, error) {
	return r.Events.AppendEvents(ctx, id, secret.Redacted(r.set, evs)...)
}

type batchRedactingEvents struct {
	redactingEvents
	batch batchEvents
}

func (b batchRedactingEvents) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]event.Event, []error) {
	return b.batch.AppendEventBatches(ctx, batches)
}
