package tool

import (
	"fmt"
	"sync"
	"time"
)

// Session is the state tools of one agent session share. It is safe for
// concurrent use (tool calls of one turn may run in parallel).
type Session struct {
	mu    sync.Mutex
	reads map[string]FileStamp
	todos []Todo
	// attached is state of packages above the tools (see Attach).
	attached map[any]any
}

// FileStamp is what the session saw of a file when it last read or wrote it.
type FileStamp struct {
	ModTime time.Time
	Size    int64
}

// NewSession returns empty session state.
func NewSession() *Session { return &Session{reads: map[string]FileStamp{}} }

// MarkRead records that the session has seen path (an absolute, resolved
// path) as it is now; Write and Edit call it too, so that a file the
// session wrote can be edited next.
func (s *Session) MarkRead(path string, st FileStamp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reads == nil {
		s.reads = map[string]FileStamp{}
	}
	s.reads[path] = st
}

// ReadStamp returns what the session last saw of path.
func (s *Session) ReadStamp(path string) (FileStamp, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.reads[path]
	return st, ok
}

// TodoStatus is a todo item's state.
type TodoStatus string

const (
	TodoPending    TodoStatus = "pending"
	TodoInProgress TodoStatus = "in_progress"
	TodoCompleted  TodoStatus = "completed"
)

// Todo is one item of the session's todo list (TodoWrite).
type Todo struct {
	Content    string     `json:"content"`
	Status     TodoStatus `json:"status"`
	ActiveForm string     `json:"activeForm,omitempty"`
	ID         string     `json:"id,omitempty"`
}

// SetTodos replaces the todo list.
func (s *Session) SetTodos(t []Todo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.todos = append([]Todo(nil), t...)
}

// Todos returns a copy of the todo list.
func (s *Session) Todos() []Todo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Todo(nil), s.todos...)
}

// Attach returns the value kept under key, storing init's first: state
// that belongs to the conversation rather than to one agent session (the
// agent's sub-agent slots), so that it is carried over with the rest when
// a front door builds a session per turn.
func (s *Session) Attach(key any, init func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.attached[key]; ok {
		return v
	}
	if s.attached == nil {
		s.attached = map[any]any{}
	}
	v := init()
	s.attached[key] = v
	return v
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
