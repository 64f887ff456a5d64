package hook

import (
	"errors"
	"fmt"
	"strings"
)

// Event names a point in the agent's lifecycle where hooks run. The value
// is the seed name (snake_case); Claude Code's CamelCase names are accepted
// by ParseEvent and reported by ClaudeName.
type Event string

// The events of seed 000 (14), seed 001 (run_complete, run_error) and the
// Claude Code events that have no seed counterpart.
const (
	PreSampling        Event = "pre_sampling"          // before a model call; can block it
	PostSampling       Event = "post_sampling"         // after a model response
	PreToolUse         Event = "pre_tool_use"          // before a tool runs; can deny, ask, allow or rewrite the input
	PostToolUse        Event = "post_tool_use"         // after a tool succeeded
	PostToolUseFailure Event = "post_tool_use_failure" // after a tool failed
	SessionStart       Event = "session_start"         // a session started or resumed; stdout becomes context
	SessionEnd         Event = "session_end"           // a session ended
	PermissionRequest  Event = "permission_request"    // a call is about to ask the human; can answer for them
	PermissionDenied   Event = "permission_denied"     // a call was denied
	Stop               Event = "stop"                  // the agent is about to stop; deny keeps it going
	Notification       Event = "notification"          // the engine notifies the user
	ConfigChange       Event = "config_change"         // settings changed
	TaskCreated        Event = "task_created"          // a background task was created
	TaskCompleted      Event = "task_completed"        // a background task finished
	RunComplete        Event = "run_complete"          // an agent run ended normally
	RunError           Event = "run_error"             // an agent run ended with an error
	UserPromptSubmit   Event = "user_prompt_submit"    // a user prompt arrived; can block it; stdout becomes context
	SubagentStop       Event = "subagent_stop"         // a sub-agent is about to stop
	PreCompact         Event = "pre_compact"           // before context compaction
)

// ErrUnknownEvent is wrapped by ParseEvent for names it does not know.
var ErrUnknownEvent = errors.New("unknown hook event")

// allEvents is read-only: the order Events reports.
var allEvents = [...]Event{
	PreSampling, PostSampling, PreToolUse, PostToolUse, PostToolUseFailure,
	SessionStart, SessionEnd, PermissionRequest, PermissionDenied, Stop,
	Notification, ConfigChange, TaskCreated, TaskCompleted, RunComplete,
	RunError, UserPromptSubmit, SubagentStop, PreCompact,
}

// Events returns every event, seed 000's fourteen first.
func Events() []Event {
	out := make([]Event, len(allEvents))
	copy(out, allEvents[:])
	return out
}

// ParseEvent accepts a seed name ("pre_tool_use") or a Claude Code name
// ("PreToolUse"). Case, underscores and dashes are ignored, so both
// spellings of every event work.
func ParseEvent(name string) (Event, error) {
	key := normalizeEventName(name)
	if key != "" {
		for _, e := range allEvents {
			if normalizeEventName(string(e)) == key {
				return e, nil
			}
		}
	}
	return "", fmt.Errorf("%w %q", ErrUnknownEvent, name)
}

func normalizeEventName(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		switch {
		case r == '_' || r == '-':
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Valid reports whether e is one of the known events.
func (e Event) Valid() bool {
	for _, k := range allEvents {
		if k == e {
			return true
		}
	}
	return false
}

// ClaudeName returns Claude Code's name for e ("PreToolUse"), or "" when
// Claude Code has no such event.
func (e Event) ClaudeName() string {
	switch e {
	case PreToolUse:
		return "PreToolUse"
	case PostToolUse:
		return "PostToolUse"
	case PostToolUseFailure:
		return "PostToolUseFailure"
	case UserPromptSubmit:
		return "UserPromptSubmit"
	case Stop:
		return "Stop"
	case SubagentStop:
		return "SubagentStop"
	case SessionStart:
		return "SessionStart"
	case SessionEnd:
		return "SessionEnd"
	case Notification:
		return "Notification"
	case PreCompact:
		return "PreCompact"
	case PermissionRequest:
		return "PermissionRequest"
	case PermissionDenied:
		return "PermissionDenied"
	case ConfigChange:
		return "ConfigChange"
	case TaskCreated:
		return "TaskCreated"
	case TaskCompleted:
		return "TaskCompleted"
	}
	return ""
}

// isToolEvent reports whether e is about one tool call, so a matcher
// applies to the tool's name.
func (e Event) isToolEvent() bool {
	switch e {
	case PreToolUse, PostToolUse, PostToolUseFailure, PermissionRequest, PermissionDenied:
		return true
	}
	return false
}

// plainStdoutIsContext reports whether non-JSON stdout of a successful
// command becomes context for the model, as in Claude Code.
func (e Event) plainStdoutIsContext() bool {
	return e == UserPromptSubmit || e == SessionStart
}

// gates reports whether a hook's verdict on e can stop an action. Such a
// hook must see everything it is asked to judge: when its input cannot be
// passed whole, the action is refused. (A permission_request hook answers
// for the person; when it cannot be shown its input, the person is asked.)
func (e Event) gates() bool {
	switch e {
	case PreToolUse, UserPromptSubmit, PreSampling:
		return true
	}
	return false
}
