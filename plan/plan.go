// Package plan is weft's plan-and-execute core (seed 001's AgentPlan): an
// ordered list of tool-call steps forming a DAG through dependsOn, the
// templating that wires one step's result into another's arguments, the
// validation that runs before any tool does, the executor that runs steps
// as soon as their dependencies complete, and the planner that has a model
// draft a plan with tools disabled.
//
// The package knows nothing of sessions, storage or HTTP: the runtime
// supplies a RunStep that sends each call through the tool framework and the
// safety pipeline, and turns the executor's callbacks into events.
package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/weft-run/weft/tool"
)

// MaxSteps is the default bound on a plan's length (seed 001 limits saved
// workflows to 64 steps). Env.MaxSteps lifts it for runs that need more.
const MaxSteps = 64

// Step is one tool call of a plan.
type Step struct {
	// ID names the step for dependsOn and {{steps.<id>.result}}. It is
	// optional: a step without one is named "step-<position+1>" (see
	// Plan.ID). Explicit ids use letters, digits, '_' and '-', and are not
	// all digits, so that a reference made only of digits is always a
	// position.
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	Tool        string `json:"tool"`
	// Args is the tool's JSON object argument; its string values may hold
	// placeholders (see Render).
	Args json.RawMessage `json:"args,omitempty"`
	// DependsOn lists earlier steps (ids or 0-based positions) that must
	// complete before this one starts.
	DependsOn        []Ref `json:"dependsOn,omitempty"`
	RequiresApproval bool  `json:"requiresApproval,omitempty"`
}

// Plan is seed 001's AgentPlan. Unknown fields are ignored on input.
type Plan struct {
	Steps []Step `json:"steps"`
}

// Ref names a step, by id or by 0-based position. In JSON it is either a
// string or a number; a number, and a string made only of digits, is a
// position, anything else an id.
type Ref string

// UnmarshalJSON accepts a JSON string or number. A number is kept as
// written, so that a negative or fractional one reaches Validate and is
// reported against its step rather than failing the whole document.
func (r *Ref) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*r = Ref(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil || n == "" {
		return fmt.Errorf("plan: dependsOn entries must be step ids (strings) or positions (numbers), got %s", b)
	}
	*r = Ref(n)
	return nil
}

// MarshalJSON writes a position as a number and an id as a string.
func (r Ref) MarshalJSON() ([]byte, error) {
	if _, ok := r.Position(); ok {
		return []byte(r), nil
	}
	return json.Marshal(string(r))
}

// Position returns the position r denotes when it is made only of digits.
func (r Ref) Position() (int, bool) {
	if !allDigits(string(r)) {
		return 0, false
	}
	n, err := strconv.Atoi(string(r))
	if err != nil {
		return 0, false
	}
	return n, true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ID returns the id of the step at position i: its own, or
// "step-<i+1>" when it has none.
func (p Plan) ID(i int) string {
	if id := p.Steps[i].ID; id != "" {
		return id
	}
	return defaultID(i)
}

func defaultID(i int) string { return "step-" + strconv.Itoa(i+1) }

// Index returns the position of the step r names: a position when r is
// all digits and in range, otherwise the step whose id (own or default) is
// r. It scans the plan; the validator and executor index it once instead.
func (p Plan) Index(r Ref) (int, bool) {
	if n, ok := r.Position(); ok {
		return n, n < len(p.Steps)
	}
	for i := range p.Steps {
		if p.ID(i) == string(r) {
			return i, true
		}
	}
	return 0, false
}

// Normalize returns a copy of p in which every step has its id set, so
// that a plan shown to people (plan_ready) or stored names every step the
// way the executor does. Args and DependsOn are shared with p.
func (p Plan) Normalize() Plan {
	out := Plan{Steps: make([]Step, len(p.Steps))}
	for i, s := range p.Steps {
		s.ID = p.ID(i)
		out.Steps[i] = s
	}
	return out
}

// ReadOnly reports whether every step's tool is known and read-only, for
// read-only batch runs, which refuse a plan before anything runs. offending
// names each step that is not, with the reason.
func (p Plan) ReadOnly(lookup func(string) (tool.Spec, bool)) (ok bool, offending []string) {
	for i, s := range p.Steps {
		var spec tool.Spec
		found := false
		if lookup != nil {
			spec, found = lookup(s.Tool)
		}
		switch {
		case !found:
			offending = append(offending, fmt.Sprintf("step %d (%q): unknown tool %q", i, p.ID(i), s.Tool))
		case !spec.ReadOnly:
			offending = append(offending, fmt.Sprintf("step %d (%q): tool %q is not read-only", i, p.ID(i), s.Tool))
		}
	}
	return len(offending) == 0, offending
}

// ResultOf turns a tool's text output into a step result: the text itself
// when it is a JSON value (so later steps can reach into it with a path),
// otherwise the text as a JSON string.
func ResultOf(text string) json.RawMessage {
	b := []byte(text)
	if json.Valid(b) {
		return compactRaw(b)
	}
	q, _ := json.Marshal(text) // a string always marshals
	return q
}

// normalizeResult is ResultOf for what a RunStep returned: nothing is
// null, invalid JSON is taken as text.
func normalizeResult(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(r) {
		return r
	}
	return ResultOf(string(r))
}

// StepError is the error Execute returns when a step failed: it names the
// step and wraps what made it fail.
type StepError struct {
	Index int
	ID    string
	Err   error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %d (%q) failed: %v", e.Index, e.ID, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// errNoApprover fails a step that requires approval when nobody can give
// it: no approver means deny (DESIGN.md, "Human").
var errNoApprover = errors.New("requires approval and no approver is configured")
