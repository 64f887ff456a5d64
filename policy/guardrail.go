package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy/permission"
)

// Guardrails configure the loop guards of unattended runs (seed 004 §3):
// the guardrail stage, which refuses a call that repeats what has already
// failed or already answered, and the agent's circuit breaker, which
// reads its two fields here so that the configuration travels with the
// policy to every front door. The zero value is on, with the defaults.
//
// A threshold of 0 means its default; a negative one turns that guard
// off alone.
type Guardrails struct {
	// Disabled turns every guard off, circuit breaker included.
	Disabled bool `json:"disabled,omitempty"`
	// SameCallFailures: a tool called with the same arguments (the same
	// CallSignature) that failed this many times in a row is refused.
	// Default 5.
	SameCallFailures int `json:"sameCallFailures,omitempty"`
	// SameToolFailures: a tool that failed this many times in a row,
	// whatever its arguments, is refused. Default 8.
	SameToolFailures int `json:"sameToolFailures,omitempty"`
	// SameResult: a read-only tool that returned the identical result for
	// the same arguments this many times is refused. Default 5.
	SameResult int `json:"sameResult,omitempty"`
	// FailedRounds: after this many rounds in a row in which every tool
	// call failed, the agent adds a note asking the model to change
	// approach. Default 3.
	FailedRounds int `json:"failedRounds,omitempty"`
	// StuckRounds: after this many further such rounds the run ends with
	// stop reason "stuck". Default 3.
	StuckRounds int `json:"stuckRounds,omitempty"`
}

// The defaults of Guardrails.
const (
	DefaultSameCallFailures = 5
	DefaultSameToolFailures = 8
	DefaultSameResult       = 5
	DefaultFailedRounds     = 3
	DefaultStuckRounds      = 3
)

// threshold is n with 0 meaning def; 0 is returned for "off".
func threshold(n, def int) int {
	switch {
	case n < 0:
		return 0
	case n == 0:
		return def
	}
	return n
}

// Limits returns the effective thresholds: SameCallFailures,
// SameToolFailures, SameResult, FailedRounds and StuckRounds with
// defaults applied, 0 for a guard that is off (all of them when Disabled).
func (g Guardrails) Limits() (sameCall, sameTool, sameResult, failedRounds, stuckRounds int) {
	if g.Disabled {
		return 0, 0, 0, 0, 0
	}
	return threshold(g.SameCallFailures, DefaultSameCallFailures),
		threshold(g.SameToolFailures, DefaultSameToolFailures),
		threshold(g.SameResult, DefaultSameResult),
		threshold(g.FailedRounds, DefaultFailedRounds),
		threshold(g.StuckRounds, DefaultStuckRounds)
}

// Merge returns g with the fields o sets (Disabled, or a non-zero
// threshold) replacing its own: a higher settings scope over a lower.
func (g Guardrails) Merge(o Guardrails) Guardrails {
	if o.Disabled {
		g.Disabled = true
	}
	for _, f := range []struct{ dst, src *int }{
		{&g.SameCallFailures, &o.SameCallFailures}, {&g.SameToolFailures, &o.SameToolFailures},
		{&g.SameResult, &o.SameResult}, {&g.FailedRounds, &o.FailedRounds}, {&g.StuckRounds, &o.StuckRounds},
	} {
		if *f.src != 0 {
			*f.dst = *f.src
		}
	}
	return g
}

// The guardrail rules, in a refusal's Decision.By and the guardrail
// event's rule.
const (
	GuardSameCall   = "same_call_failures"
	GuardSameTool   = "same_tool_failures"
	GuardSameResult = "same_result"
)

// The audit notes of a refusal by the guardrail stage (Verdict.Notes).
const (
	NoteGuardRule      = "guardrail_rule"
	NoteGuardSignature = "guardrail_signature"
	NoteGuardCount     = "guardrail_count"
)

// Signature identifies a call by its tool and its arguments: SHA-256 of the
// tool name and the canonical JSON of the input (keys sorted, no
// insignificant space), so that the same call spelled twice is one.
type Signature [sha256.Size]byte

// String is the first 8 bytes in hex (seed 004's short form), what events
// and audit entries show.
func (s Signature) String() string { return hex.EncodeToString(s[:8]) }

// CallSignature is the Signature of a call of name with input.
func CallSignature(name string, input json.RawMessage) Signature {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(canonicalJSON(input))
	var s Signature
	h.Sum(s[:0])
	return s
}

// canonicalJSON re-encodes a JSON value with sorted keys and no
// insignificant space; numbers keep their spelling (UseNumber). Input
// that does not parse is used as it is: it still names the call.
func canonicalJSON(in json.RawMessage) []byte {
	in = bytes.TrimSpace(in)
	if len(in) == 0 {
		return []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return in
	}
	out, err := json.Marshal(v)
	if err != nil {
		return in
	}
	return out
}

// LoopTracker is the guardrails' memory of one agent run: which calls
// failed, how often in a row, and what read-only calls returned. The
// guardrail stage reads it before a call and the guardrail finisher
// records the call's outcome after it; both find it in the context
// (WithLoopTracker), where the agent puts one per run. A call checked
// without one is never refused. It is safe for concurrent use: calls of
// one round finish in parallel.
type LoopTracker struct {
	mu        sync.Mutex
	callFails map[Signature]int
	toolFails map[string]int
	results   map[Signature]resultRun
}

// resultRun is a read-only call's last result and how many times in a row
// it came back the same.
type resultRun struct {
	hash  [sha256.Size]byte
	count int
}

// NewLoopTracker returns an empty tracker.
func NewLoopTracker() *LoopTracker { return &LoopTracker{} }

type loopKey struct{}

// WithLoopTracker returns ctx carrying t, for Policy.Before and After.
func WithLoopTracker(ctx context.Context, t *LoopTracker) context.Context {
	return context.WithValue(ctx, loopKey{}, t)
}

// LoopTrackerFrom returns the tracker ctx carries, or nil.
func LoopTrackerFrom(ctx context.Context) *LoopTracker {
	t, _ := ctx.Value(loopKey{}).(*LoopTracker)
	return t
}

// GuardBlock is a refusal by the guardrails.
type GuardBlock struct {
	Rule      string // GuardSameCall, GuardSameTool or GuardSameResult
	Signature Signature
	Count     int // the failures or identical results in a row
	Reason    string
}

// Check reports whether a call of tool with input must be refused under g.
// readOnly says whether the tool is read-only.
func (t *LoopTracker) Check(g Guardrails, tool string, input json.RawMessage, readOnly bool) (GuardBlock, bool) {
	sameCall, sameTool, sameResult, _, _ := g.Limits()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.callFails) == 0 && len(t.toolFails) == 0 && len(t.results) == 0 {
		return GuardBlock{}, false // nothing failed or repeated yet: skip the signature
	}
	sig := CallSignature(tool, input)
	if n := t.callFails[sig]; sameCall > 0 && n >= sameCall {
		return GuardBlock{Rule: GuardSameCall, Signature: sig, Count: n, Reason: fmt.Sprintf(
			"blocked by a guardrail: %s failed %d times in a row with these exact arguments, so it was not run again. "+
				"Do not repeat it unchanged: read the last error, then change the arguments, use a different tool or approach, "+
				"or tell the user what is in the way.", tool, n)}, true
	}
	if n := t.toolFails[tool]; sameTool > 0 && n >= sameTool {
		return GuardBlock{Rule: GuardSameTool, Signature: sig, Count: n, Reason: fmt.Sprintf(
			"blocked by a guardrail: %s failed %d times in a row, so it was not run again. "+
				"Stop calling %s for now: try a different tool or a different approach, or ask the user for help.", tool, n, tool)}, true
	}
	if r := t.results[sig]; readOnly && sameResult > 0 && r.count >= sameResult {
		return GuardBlock{Rule: GuardSameResult, Signature: sig, Count: r.count, Reason: fmt.Sprintf(
			"blocked by a guardrail: %s returned the identical result %d times for these arguments, so it was not run again: "+
				"nothing has changed since. Use the result you already have and move on to the next step.", tool, r.count)}, true
	}
	return GuardBlock{}, false
}

// Record notes the outcome of a call that ran: a failure counts towards
// the call's and the tool's failures in a row, a success clears both, and
// a read-only tool's result is compared with its last result for the same
// arguments.
func (t *LoopTracker) Record(tool string, input json.RawMessage, readOnly bool, failed bool, content []llm.Block) {
	sig := CallSignature(tool, input)
	var h [sha256.Size]byte
	if readOnly && !failed {
		h = resultHash(content)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if failed {
		if t.callFails == nil {
			t.callFails, t.toolFails = map[Signature]int{}, map[string]int{}
		}
		t.callFails[sig]++
		t.toolFails[tool]++
		delete(t.results, sig)
		return
	}
	delete(t.callFails, sig)
	delete(t.toolFails, tool)
	if !readOnly {
		return
	}
	if t.results == nil {
		t.results = map[Signature]resultRun{}
	}
	r := t.results[sig]
	if r.count > 0 && r.hash == h {
		r.count++
	} else {
		r = resultRun{hash: h, count: 1}
	}
	t.results[sig] = r
}

// resultHash digests what the model sees of a result.
func resultHash(content []llm.Block) [sha256.Size]byte {
	h := sha256.New()
	for _, b := range content {
		h.Write([]byte(b.Type))
		h.Write([]byte{0})
		h.Write([]byte(b.Text))
		h.Write([]byte{0})
		h.Write([]byte(b.MediaType))
		h.Write([]byte{0})
		h.Write(b.Data)
		h.Write([]byte{0})
		h.Write([]byte(b.URL))
		h.Write([]byte{0})
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// guardrailStage refuses a call the run's LoopTracker says repeats what
// already failed, or what already answered, too often. It runs right
// after the schema check: a refused call reaches no hook and no person.
type guardrailStage struct{}

func (guardrailStage) Check(ctx context.Context, st *State) Decision {
	g := st.Policy.Guardrails
	if g.Disabled {
		return Decision{}
	}
	t := LoopTrackerFrom(ctx)
	if t == nil {
		return Decision{}
	}
	b, blocked := t.Check(g, st.Call.Tool, st.Call.Input, st.Call.Spec.ReadOnly)
	if !blocked {
		return Decision{}
	}
	if st.Notes == nil {
		st.Notes = make(map[string]string, 3)
	}
	st.Notes[NoteGuardRule] = b.Rule
	st.Notes[NoteGuardSignature] = b.Signature.String()
	st.Notes[NoteGuardCount] = strconv.Itoa(b.Count)
	return Decision{Verdict: permission.Deny, Reason: b.Reason, Stage: StageGuardrail, By: b.Rule}
}

// guardrailFinisher records a call's outcome in the run's LoopTracker.
// It runs after redaction, on the result as the model will see it, and
// before the hooks add their context to it. The call's signature is taken
// from the input as the model sent it (Call.Input), as the stage does.
type guardrailFinisher struct{}

func (guardrailFinisher) Finish(ctx context.Context, st *State) {
	if st.Policy.Guardrails.Disabled || st.Result == nil {
		return
	}
	t := LoopTrackerFrom(ctx)
	if t == nil {
		return
	}
	t.Record(st.Call.Tool, st.Call.Input, st.Call.Spec.ReadOnly, st.Result.IsError, st.Result.Content)
}
