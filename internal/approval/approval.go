// Package approval is the one broker for every question a person answers
// while a session's turn or a run waits: permission requests, checkpoint
// confirmations, plan gates, step gates, budget requests and MCP servers'
// requests for input. It gives them one id scheme, one timeout rule, one
// answered-once rule and bounded memory, so that the session and run
// services do not each keep their own.
//
// A question is opened before the event that announces it is published,
// so that an answer sent on seeing the event finds it open: Open, then
// publish, then Wait.
package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/weft-run/weft/record"
)

// Errors callers map onto statuses (errors.Is).
var (
	// ErrNotFound: no such question is open in the scope, and none was
	// answered recently.
	ErrNotFound = record.ErrNotFound
	// ErrAnswered: the question was answered already (or is being).
	ErrAnswered = errors.New("request already answered")
	// ErrTimeout: Wait's timeout passed with no answer.
	ErrTimeout = errors.New("approval: no answer in time")
	// ErrExists: a question with the same key is open in the scope.
	ErrExists = errors.New("approval: request already open")
)

// Kind is what a question asks; generated ids start with it and "_".
type Kind string

// The kinds weft asks.
const (
	Permission Kind = "perm" // may this tool call run
	Checkpoint Kind = "ckpt" // confirm an irreversible tool call
	Plan       Kind = "plan" // approve (or edit) a run's plan
	Step       Kind = "step" // approve a run's step
	// Elicitation: an MCP server's request for input (its answer's
	// Payload is what the asker defines: the action and content).
	Elicitation Kind = "elicit"
	// Budget: may the run go past its budget (agent.BudgetRequest). Its
	// ids are the engine's ("budget_<hex>"), given as the key.
	Budget Kind = "budget"
)

// DefaultTimeout is how long a permission request or checkpoint waits for
// an answer before it counts as denied.
const DefaultTimeout = 5 * time.Minute

// Bounds of the answered ids remembered, so that a second answer is
// ErrAnswered rather than ErrNotFound after the question closed:
// MaxAnsweredPerScope per scope (its newest), and MaxAnsweredClosed over
// every closed scope together (the scopes closed most recently).
const (
	MaxAnsweredPerScope = 256
	MaxAnsweredClosed   = 4096
)

// Answer is a person's answer. Payload carries what the question's kind
// defines (a plan gate: the edited plan, nil to keep it).
type Answer struct {
	Allow   bool
	Reason  string
	Payload any
}

// Pending is an open question.
type Pending struct {
	ID   string
	Kind Kind
}

// Broker holds the open questions by scope (a session id, a run id). The
// zero value is not usable; call New.
type Broker struct {
	mu     sync.Mutex
	scopes map[string]*scope
	// closed lists, oldest first, the closed scopes kept only for their
	// answered ids; closedN counts those ids.
	closed  []string
	closedN int
}

type scope struct {
	open     map[string]*Ticket
	order    []string // open ids, in the order they were opened
	answered map[string]bool
	fifo     []string // answered ids, oldest first
	isClosed bool
}

// New returns an empty broker.
func New() *Broker { return &Broker{scopes: map[string]*scope{}} }

// Ticket is an open question, for its asker.
type Ticket struct {
	ID    string
	Kind  Kind
	b     *Broker
	scope string
	ch    chan Answer // buffered: an answer never waits for the asker
	// answered is set, under b.mu, by the first answer.
	answered bool
}

// Open opens a question in scope. With key "" it gets a generated id,
// "<kind>_<12 hex digits>"; a caller may give its own (a step id within
// its run): ErrExists when that key is open in the scope.
func (b *Broker) Open(scopeID string, kind Kind, key string) (*Ticket, error) {
	id := key
	if id == "" {
		var r [6]byte
		_, _ = rand.Read(r[:])
		id = string(kind) + "_" + hex.EncodeToString(r[:])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopes[scopeID]
	if s == nil {
		s = &scope{open: map[string]*Ticket{}}
		b.scopes[scopeID] = s
	} else if s.isClosed {
		b.reopenLocked(scopeID, s)
	}
	if _, ok := s.open[id]; ok {
		return nil, ErrExists
	}
	t := &Ticket{ID: id, Kind: kind, b: b, scope: scopeID, ch: make(chan Answer, 1)}
	s.open[id] = t
	s.order = append(s.order, id)
	return t, nil
}

// Wait waits for the answer, timeout (none when 0) or ctx, and closes the
// question: from then on an answer to it is ErrAnswered when one came,
// ErrNotFound otherwise.
func (t *Ticket) Wait(ctx context.Context, timeout time.Duration) (Answer, error) {
	defer t.Close()
	var expired <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		expired = tm.C
	}
	select {
	case a := <-t.ch:
		return a, nil
	case <-expired:
		return Answer{}, ErrTimeout
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
}

// Close closes the question without waiting (an abandoned gate).
func (t *Ticket) Close() {
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopes[t.scope]
	if s == nil || s.open[t.ID] != t {
		return
	}
	delete(s.open, t.ID)
	s.order = slices.DeleteFunc(s.order, func(id string) bool { return id == t.ID })
	b.dropIfEmptyLocked(t.scope, s)
}

// Answer answers the open question id of scope, once: ErrAnswered for a
// second answer, ErrNotFound for a question that is not open (closed
// unanswered, or never opened).
func (b *Broker) Answer(scopeID, id string, a Answer) error {
	return b.AnswerIf(scopeID, id, a, nil)
}

// AnswerIf is Answer, with check run first on the open question (under
// the broker's lock, so that no other answer comes between): its error is
// returned and the question stays open. check must not call the broker.
func (b *Broker) AnswerIf(scopeID, id string, a Answer, check func(Pending) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopes[scopeID]
	if s == nil {
		return ErrNotFound
	}
	t := s.open[id]
	if t == nil {
		if s.answered[id] {
			return ErrAnswered
		}
		return ErrNotFound
	}
	if t.answered {
		return ErrAnswered
	}
	if check != nil {
		if err := check(Pending{ID: t.ID, Kind: t.Kind}); err != nil {
			return err
		}
	}
	t.answered = true
	b.rememberLocked(s, id)
	t.ch <- a
	return nil
}

// Pending lists scope's open, unanswered questions in the order they were
// opened.
func (b *Broker) Pending(scopeID string) []Pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopes[scopeID]
	if s == nil {
		return nil
	}
	var out []Pending
	for _, id := range s.order {
		if t := s.open[id]; !t.answered {
			out = append(out, Pending{ID: id, Kind: t.Kind})
		}
	}
	return out
}

// Close ends a scope (its session's state is evicted, its run attempt
// ended): open questions are forgotten, as if closed unanswered, and the
// answered ids are kept among the closed scopes' (bounded by
// MaxAnsweredClosed) until the scope opens a question again or Forget.
func (b *Broker) Close(scopeID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopes[scopeID]
	if s == nil || s.isClosed {
		return
	}
	clear(s.open)
	s.order = nil
	if len(s.fifo) == 0 {
		delete(b.scopes, scopeID)
		return
	}
	s.isClosed = true
	b.closed = append(b.closed, scopeID)
	b.closedN += len(s.fifo)
	for b.closedN > MaxAnsweredClosed && len(b.closed) > 0 {
		old := b.closed[0]
		b.closed = b.closed[1:]
		b.closedN -= len(b.scopes[old].fifo)
		delete(b.scopes, old)
	}
}

// Forget drops everything of a scope (a deleted session): an answer to
// any of its questions is ErrNotFound.
func (b *Broker) Forget(scopeID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scopes[scopeID]
	if s == nil {
		return
	}
	if s.isClosed {
		b.reopenLocked(scopeID, s)
	}
	delete(b.scopes, scopeID)
}

// reopenLocked takes a closed scope out of the closed list.
func (b *Broker) reopenLocked(scopeID string, s *scope) {
	s.isClosed = false
	b.closedN -= len(s.fifo)
	b.closed = slices.DeleteFunc(b.closed, func(id string) bool { return id == scopeID })
}

func (b *Broker) rememberLocked(s *scope, id string) {
	if s.answered == nil {
		s.answered = map[string]bool{}
	}
	if s.answered[id] {
		return
	}
	if len(s.fifo) >= MaxAnsweredPerScope {
		delete(s.answered, s.fifo[0])
		s.fifo = s.fifo[1:]
	}
	s.answered[id] = true
	s.fifo = append(s.fifo, id)
}

// dropIfEmptyLocked keeps no scope that holds nothing.
func (b *Broker) dropIfEmptyLocked(scopeID string, s *scope) {
	if len(s.open) == 0 && len(s.fifo) == 0 && !s.isClosed {
		delete(b.scopes, scopeID)
	}
}
