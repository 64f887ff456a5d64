// Package audit records policy decisions about tool calls: every allowed,
// blocked or failed call, with the rule or hook that decided, and every
// write a secret scan stopped. A Sink takes one Entry at a time; JSONL
// (a file), StoreSink (the database), Composite (several) and Noop are the
// sinks weft ships. Reading the trail back is store.Audits.ListAudit.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/weft-run/weft/record"
)

// Entry is one audit record (seed 000's AuditEntry).
type Entry = record.AuditEntry

// ErrClosed is wrapped by Write's error after Close.
var ErrClosed = errors.New("audit sink closed")

// Sink persists audit entries. Implementations are safe for concurrent
// use. Write returns only once the entry is stored (or failed to be), so
// that a nil error means the decision is on record.
type Sink interface {
	Write(Entry) error
	Close() error
}

// stamp gives an entry its time: now when unset, and UTC either way.
func stamp(e *Entry) {
	if e.Timestamp.IsZero() {
		e.Timestamp = time.Now()
	}
	e.Timestamp = e.Timestamp.UTC()
}

// JSONL appends one JSON object per line to a file. Each entry is one
// write(2) on a file opened O_APPEND, so lines from concurrent writers, in
// this process or another, never interleave.
type JSONL struct {
	path string

	mu     sync.Mutex
	f      *os.File
	closed bool
}

// NewJSONL opens (creating it, and its directories, if needed) the file at
// path for appending. A new file and new directories are private to the
// user (0600, 0700): the trail names files, commands and hosts.
func NewJSONL(path string) (*JSONL, error) {
	if path == "" {
		return nil, errors.New("audit: empty JSONL path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: create directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	return &JSONL{path: path, f: f}, nil
}

// Path is the file the sink appends to.
func (j *JSONL) Path() string { return j.path }

// Write appends e as one line. A zero Timestamp becomes now.
func (j *JSONL) Write(e Entry) error {
	stamp(&e)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Commands and paths read as typed: no \u003c for '<' or '&'.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil { // Encode ends the line
		return fmt.Errorf("audit: encode entry: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return fmt.Errorf("audit: %s: %w", j.path, ErrClosed)
	}
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("audit: write %s: %w", j.path, err)
	}
	return nil
}

// Close closes the file. Writes after Close fail with ErrClosed; Close
// itself can be called again.
func (j *JSONL) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("audit: close %s: %w", j.path, err)
	}
	return nil
}

// DefaultPath is where the JSONL trail goes by default: audit.jsonl next to
// the database at dbPath. It is "" for an in-memory database (":memory:")
// or no database, which have no place on disk.
func DefaultPath(dbPath string) string {
	if dbPath == "" || dbPath == ":memory:" {
		return ""
	}
	return filepath.Join(filepath.Dir(dbPath), "audit.jsonl")
}

// Composite writes every entry to each of its sinks (nil ones are
// skipped). One sink's failure does not keep the entry from the others;
// the errors are joined.
type Composite []Sink

// Write writes e to every sink.
func (c Composite) Write(e Entry) error {
	stamp(&e) // one time for every copy
	var errs []error
	for _, s := range c {
		if s != nil {
			errs = append(errs, s.Write(e))
		}
	}
	return errors.Join(errs...)
}

// Close closes every sink.
func (c Composite) Close() error {
	var errs []error
	for _, s := range c {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// Noop discards entries: auditing off, explicitly.
type Noop struct{}

// Write discards e.
func (Noop) Write(Entry) error { return nil }

// Close does nothing.
func (Noop) Close() error { return nil }

// StoreSink writes entries to the database, one transaction per entry.
// It does not batch: Write reports whether the entry is stored, and an
// audit entry is written once per tool call, far less often than the
// events the store is built to absorb.
type StoreSink struct {
	a Store

	// mu is held shared by each Write and exclusively by Close, so that
	// Close waits for the writes in flight: after Close, every Write that
	// returned nil is stored, and no other will be.
	mu     sync.RWMutex
	closed bool
}

// NewStoreSink returns a sink writing to a. Closing the sink does not
// close the store.
func NewStoreSink(a Store) *StoreSink { return &StoreSink{a: a} }

// Write stores e. A zero Timestamp becomes now.
func (s *StoreSink) Write(e Entry) error {
	stamp(&e)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("audit: store: %w", ErrClosed)
	}
	// Sink.Write has no context: an audit record is not abandoned because
	// the call it records was.
	if err := s.a.AppendAudit(context.Background(), e); err != nil {
		return fmt.Errorf("audit: store: %w", err)
	}
	return nil
}

// Close waits for the writes in flight and refuses later ones.
func (s *StoreSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

var (
	_ Sink = (*JSONL)(nil)
	_ Sink = Composite(nil)
	_ Sink = Noop{}
	_ Sink = (*StoreSink)(nil)
)

// Store is where a StoreSink appends (store.Audits; declared here so that
// the audit trail does not depend on the store package).
type Store interface {
	AppendAudit(ctx context.Context, entries ...record.AuditEntry) error
}
