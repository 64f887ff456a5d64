// Package memstore is an in-memory store.Store: the whole persistence
// contract of package store, and nothing persisted. It is for tests that
// want a real store without a database file, and for programs that embed
// weft and keep no state across restarts (a CLI run, a serverless handler,
// an SDK caller with its own persistence). Everything is gone when the
// process exits.
//
// It passes the same conformance suite as store/sqlite (store/storetest),
// with the same errors (store.ErrNotFound, ErrExists, ErrConflict,
// ErrInvalidCursor), the same validation (JSON fields, statuses, empty
// ids) and the same event seq rules: per session (and per run) from 1,
// gap-free, assigned atomically. Times come back in UTC at nanosecond
// precision, and, as in SQLite, only times between the years 1678 and
// 2262 can be stored, so code tested against memstore behaves the same on
// the database.
//
// A Store is safe for concurrent use. Values are copied in and out: a
// caller that changes a slice or map it passed in or got back (event data,
// metadata, message blocks, tags) does not change what is stored.
package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/keyset"
)

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("memstore: store is closed")

const (
	defaultListLimit  = 50
	maxListLimit      = 500
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// Store is an in-memory store.Store. The zero value is not usable; call
// New.
type Store struct {
	// One lock for everything: a call sees and leaves the store
	// consistent, as a database transaction would, and readers never see
	// an event before every lower seq.
	mu     sync.RWMutex
	closed bool

	sessions  map[string]*session
	runs      map[string]*run
	workflows map[string]record.Workflow
	schedules map[string]record.Schedule
	memories  map[string]*memory
	audit     []record.AuditEntry
	usage     []record.UsageRecord // usage.go

	memorySeq int64 // insertion order of memories, for ties on CreatedAt
	auditSeq  int64 // the last audit entry id handed out

	sessionEvents events
	runEvents     events
}

type session struct {
	hdr record.Session // without the counts, which are computed
	// msgs holds each message as JSON, as the database does: loading
	// decodes a fresh copy, and a message round-trips exactly as it would
	// through store/sqlite.
	msgs   [][]byte
	events []event.Event
}

// New returns an empty store.
func New() *Store {
	s := &Store{
		sessions:  map[string]*session{},
		runs:      map[string]*run{},
		workflows: map[string]record.Workflow{},
		schedules: map[string]record.Schedule{},
		memories:  map[string]*memory{},
	}
	s.sessionEvents = events{s: s, kind: "session", log: func(id string) *[]event.Event {
		if x := s.sessions[id]; x != nil {
			return &x.events
		}
		return nil
	}}
	s.runEvents = events{s: s, kind: "run", log: func(id string) *[]event.Event {
		if x := s.runs[id]; x != nil {
			return &x.events
		}
		return nil
	}}
	return s
}

// Close implements store.Store: it drops everything; later calls fail with
// ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.sessions, s.runs, s.workflows, s.schedules, s.memories, s.audit, s.usage = nil, nil, nil, nil, nil, nil, nil
	return nil
}

// begin checks ctx and takes the lock for a call; the returned function
// releases it.
func (s *Store) begin(ctx context.Context, write bool) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if write {
		s.mu.Lock()
	} else {
		s.mu.RLock()
	}
	unlock := s.mu.Unlock
	if !write {
		unlock = s.mu.RUnlock
	}
	if s.closed {
		unlock()
		return nil, ErrClosed
	}
	return unlock, nil
}

// ---- values ----

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// stamp is t as the store keeps it: UTC, no monotonic reading, refused
// outside what SQLite's nanosecond integers can hold.
func stamp(what string, t time.Time) (time.Time, error) {
	if t.Before(minTime) || t.After(maxTime) {
		return time.Time{}, fmt.Errorf("memstore: %s %s is outside the storable range (years 1678 to 2262)", what, t.Format(time.RFC3339))
	}
	return time.Unix(0, t.UnixNano()).UTC(), nil
}

// optStamp is stamp for an optional time: zero stays zero.
func optStamp(what string, t time.Time) (time.Time, error) {
	if t.IsZero() {
		return time.Time{}, nil
	}
	return stamp(what, t)
}

func now() time.Time { return time.Unix(0, time.Now().UnixNano()).UTC() }

// later is the time an update sets: now, but never before prev (the wall
// clock can step back).
func later(prev time.Time) time.Time {
	if t := now(); t.After(prev) {
		return t
	}
	return prev
}

// checkJSON refuses raw JSON that is present but invalid; nil is allowed
// (no value).
func checkJSON(what string, raw json.RawMessage) error {
	if raw != nil && !json.Valid(raw) {
		return fmt.Errorf("memstore: %s is not valid JSON", what)
	}
	return nil
}

// cloneRaw copies raw bytes, keeping nil nil.
func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage{}, b...)
}

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, record.ErrNotFound)
}

func exists(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, record.ErrExists)
}

func requireID(kind, id string) error {
	if id == "" {
		return fmt.Errorf("memstore: %s: empty id", kind)
	}
	return nil
}

func clampLimit(limit, def, most int) int {
	if limit <= 0 {
		return def
	}
	return min(limit, most)
}

// ---- sessions ----

// CreateSession implements store.Sessions.
func (s *Store) CreateSession(ctx context.Context, in record.Session) (record.Session, error) {
	if err := requireID("create session", in.ID); err != nil {
		return record.Session{}, err
	}
	hdr, err := newSessionHeader(in)
	if err != nil {
		return record.Session{}, err
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return record.Session{}, err
	}
	defer unlock()
	if _, ok := s.sessions[in.ID]; ok {
		return record.Session{}, exists("session", in.ID)
	}
	s.sessions[in.ID] = &session{hdr: hdr}
	return copySession(hdr), nil
}

func newSessionHeader(in record.Session) (record.Session, error) {
	var err error
	if in.CreatedAt.IsZero() {
		in.CreatedAt = now()
	}
	if in.UpdatedAt.IsZero() {
		in.UpdatedAt = in.CreatedAt
	}
	if in.CreatedAt, err = stamp("session created_at", in.CreatedAt); err != nil {
		return record.Session{}, err
	}
	if in.UpdatedAt, err = stamp("session updated_at", in.UpdatedAt); err != nil {
		return record.Session{}, err
	}
	if err := checkJSON("session metadata", in.Metadata); err != nil {
		return record.Session{}, err
	}
	in.Metadata = cloneRaw(in.Metadata)
	in.MessageCount, in.LastSeq = 0, 0
	return in, nil
}

func copySession(h record.Session) record.Session {
	h.Metadata = cloneRaw(h.Metadata)
	return h
}

// view is the session as GetSession reports it, counts included.
func (x *session) view() record.Session {
	h := copySession(x.hdr)
	h.MessageCount = len(x.msgs)
	h.LastSeq = int64(len(x.events))
	return h
}

// GetSession implements store.Sessions.
func (s *Store) GetSession(ctx context.Context, id string) (record.Session, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return record.Session{}, err
	}
	defer unlock()
	x := s.sessions[id]
	if x == nil {
		return record.Session{}, notFound("session", id)
	}
	return x.view(), nil
}

// ListSessions implements store.Sessions: newest (CreatedAt, then ID)
// first, paged by an opaque cursor that keeps its place when sessions are
// added or deleted.
func (s *Store) ListSessions(ctx context.Context, opt record.ListOptions) (record.SessionPage, error) {
	limit := clampLimit(opt.Limit, defaultListLimit, maxListLimit)
	var after *cursor
	if opt.Cursor != "" {
		c, err := decodeCursor(opt.Cursor)
		if err != nil {
			return record.SessionPage{}, err
		}
		after = &c
	}
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return record.SessionPage{}, err
	}
	defer unlock()
	all := make([]*session, 0, len(s.sessions))
	for _, x := range s.sessions {
		if after == nil || after.Follows(x.hdr.CreatedAt, x.hdr.ID) {
			all = append(all, x)
		}
	}
	slices.SortFunc(all, func(a, b *session) int { return newestFirst(a.hdr.CreatedAt, a.hdr.ID, b.hdr.CreatedAt, b.hdr.ID) })
	page := record.SessionPage{Sessions: make([]record.Session, 0, min(limit, len(all)))}
	for _, x := range all[:min(limit, len(all))] {
		page.Sessions = append(page.Sessions, x.view())
	}
	if len(all) > limit {
		last := page.Sessions[limit-1]
		page.NextCursor = encodeCursor(keyset.After(last.CreatedAt, last.ID))
	}
	return page, nil
}

// newestFirst orders by creation time, then id, both descending.
func newestFirst(at1 time.Time, id1 string, at2 time.Time, id2 string) int {
	if c := at2.Compare(at1); c != 0 {
		return c
	}
	return strings.Compare(id2, id1)
}

// DeleteSession implements store.Sessions: the session goes with its
// messages and events; audit entries stay.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.sessions[id]; !ok {
		return notFound("session", id)
	}
	delete(s.sessions, id)
	return nil
}

// UpdateSession implements store.Sessions: Title and Metadata are
// replaced, UpdatedAt moves to now (never backwards).
func (s *Store) UpdateSession(ctx context.Context, in record.Session) error {
	if err := checkJSON("session metadata", in.Metadata); err != nil {
		return err
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	x := s.sessions[in.ID]
	if x == nil {
		return notFound("session", in.ID)
	}
	x.hdr.Title, x.hdr.Metadata = in.Title, cloneRaw(in.Metadata)
	x.hdr.UpdatedAt = later(x.hdr.UpdatedAt)
	return nil
}

// ---- messages ----

// encodeMessages marshals as store/sqlite does (no HTML escaping, so "<"
// and "&" in tool arguments stay as sent), before the lock is taken.
func encodeMessages(msgs []llm.Message) ([][]byte, error) {
	out := make([][]byte, len(msgs))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range msgs {
		buf.Reset()
		if err := enc.Encode(&msgs[i]); err != nil {
			return nil, fmt.Errorf("memstore: encode message %d: %w", i, err)
		}
		out[i] = bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	return out, nil
}

// AppendMessages implements store.Messages.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) error {
	data, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	x := s.sessions[sessionID]
	if x == nil {
		return notFound("session", sessionID)
	}
	x.msgs = append(x.msgs, data...)
	x.hdr.UpdatedAt = later(x.hdr.UpdatedAt)
	return nil
}

// ReplaceMessages implements store.Messages.
func (s *Store) ReplaceMessages(ctx context.Context, sessionID string, msgs []llm.Message) error {
	data, err := encodeMessages(msgs)
	if err != nil {
		return err
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	x := s.sessions[sessionID]
	if x == nil {
		return notFound("session", sessionID)
	}
	x.msgs = data
	x.hdr.UpdatedAt = later(x.hdr.UpdatedAt)
	return nil
}

// LoadMessages implements store.Messages.
func (s *Store) LoadMessages(ctx context.Context, sessionID string) ([]llm.Message, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	x := s.sessions[sessionID]
	if x == nil {
		unlock()
		return nil, notFound("session", sessionID)
	}
	// The stored encodings are never modified in place (appends and
	// replaces swap slices), so decoding can happen after the unlock.
	data := slices.Clone(x.msgs)
	unlock()
	var msgs []llm.Message
	for i, d := range data {
		var m llm.Message
		if err := json.Unmarshal(d, &m); err != nil {
			return nil, fmt.Errorf("memstore: load messages of %q: message %d: %w", sessionID, i, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// ---- events ----

// events is one of the store's two event logs, sessions' and runs': the
// same contract keyed by session or run id. It implements store.Events
// and store.BatchEvents.
type events struct {
	s    *Store
	kind string // "session" or "run", for messages
	// log returns the id's events, nil for an unknown id; called with the
	// store's lock held.
	log func(id string) *[]event.Event
}

// AppendEvents implements store.Events.
func (s *Store) AppendEvents(ctx context.Context, sessionID string, evs ...event.Event) ([]event.Event, error) {
	return s.sessionEvents.AppendEvents(ctx, sessionID, evs...)
}

// ReadEvents implements store.Events. A limit <= 0 means no limit.
func (s *Store) ReadEvents(ctx context.Context, sessionID string, after int64, limit int) ([]event.Event, error) {
	return s.sessionEvents.ReadEvents(ctx, sessionID, after, limit)
}

// AppendEventBatches implements store.BatchEvents: all batches under one
// lock, each failing alone.
func (s *Store) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]event.Event, []error) {
	return s.sessionEvents.AppendEventBatches(ctx, batches)
}

// prepare validates and copies events for an append to id: the whole
// batch is refused when one event is invalid.
func (l *events) prepare(id string, in []event.Event) ([]event.Event, error) {
	out := make([]event.Event, len(in))
	t := now()
	for i, e := range in {
		if err := checkJSON(fmt.Sprintf("%s %q event %d (%s) data", l.kind, id, i, e.Type), e.Data); err != nil {
			return nil, err
		}
		if e.CreatedAt.IsZero() {
			e.CreatedAt = t
		}
		var err error
		if e.CreatedAt, err = stamp("event created_at", e.CreatedAt); err != nil {
			return nil, err
		}
		e.SessionID = id
		e.Data = cloneRaw(e.Data)
		out[i] = e
	}
	return out, nil
}

// add stores prepared events under the next seqs; the lock is held.
func (l *events) add(id string, evs []event.Event) ([]event.Event, error) {
	log := l.log(id)
	if log == nil {
		return nil, notFound(l.kind, id)
	}
	out := make([]event.Event, len(evs))
	for i, e := range evs {
		e.Seq = int64(len(*log)) + 1
		*log = append(*log, e)
		e.Data = cloneRaw(e.Data)
		out[i] = e
	}
	return out, nil
}

// AppendEvents implements store.Events for l's log.
func (l *events) AppendEvents(ctx context.Context, id string, evs ...event.Event) ([]event.Event, error) {
	prepared, err := l.prepare(id, evs)
	if err != nil {
		return nil, err
	}
	unlock, err := l.s.begin(ctx, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return l.add(id, prepared)
}

// AppendEventBatches implements store.BatchEvents for l's log.
func (l *events) AppendEventBatches(ctx context.Context, batches []store.EventBatch) ([][]event.Event, []error) {
	out := make([][]event.Event, len(batches))
	errs := make([]error, len(batches))
	prepared := make([][]event.Event, len(batches))
	for i, b := range batches {
		prepared[i], errs[i] = l.prepare(b.SessionID, b.Events)
	}
	unlock, err := l.s.begin(ctx, true)
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return out, errs
	}
	defer unlock()
	for i, b := range batches {
		if errs[i] == nil {
			out[i], errs[i] = l.add(b.SessionID, prepared[i])
		}
	}
	return out, errs
}

// ReadEvents implements store.Events for l's log. A limit <= 0 means no
// limit.
func (l *events) ReadEvents(ctx context.Context, id string, after int64, limit int) ([]event.Event, error) {
	unlock, err := l.s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	log := l.log(id)
	if log == nil {
		return nil, notFound(l.kind, id)
	}
	n := int64(len(*log))
	after = max(after, 0)
	if after >= n {
		return nil, nil
	}
	end := n
	if limit > 0 {
		end = min(n, after+int64(limit))
	}
	out := make([]event.Event, 0, end-after)
	for _, e := range (*log)[after:end] {
		e.Data = cloneRaw(e.Data)
		out = append(out, e)
	}
	return out, nil
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.BatchEvents = (*Store)(nil)
	_ store.BatchEvents = (*events)(nil)
)
