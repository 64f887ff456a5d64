package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/maphash"
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
// tool name and the canonical JSON of the input (object keys sorted,
// insignificant space removed), so that the same call spelled twice is
// one.
type Signature [sha256.Size]byte

// String is the first 8 bytes in hex (seed 004's short form), what events
// and audit entries show.
func (s Signature) String() string { return hex.EncodeToString(s[:8]) }

// CallSignature is the Signature of a call of name with input.
func CallSignature(name string, input json.RawMessage) Signature {
	// This runs for calls of every run: the canonical form is built in a
	// pooled buffer, so that it costs no allocation.
	bp := sigBufs.Get().(*[]byte)
	b := append((*bp)[:0], name...)
	b = append(b, 0)
	b = appendCanonicalJSON(b, input)
	sig := sha256.Sum256(b)
	if cap(b) <= 64<<10 { // a huge input's buffer is not kept
		*bp = b
		sigBufs.Put(bp)
	}
	return sig
}

var sigBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// appendCanonicalJSON appends in re-encoded with object keys sorted (by
// their bytes as written) and no insignificant space; strings and numbers
// keep their spelling. Empty input is {}; input that does not parse is
// appended as it is: it still names the call.
func appendCanonicalJSON(dst []byte, in json.RawMessage) []byte {
	in = trimSpace(in)
	if len(in) == 0 {
		return append(dst, "{}"...)
	}
	n := len(dst)
	out, rest, ok := canonValue(dst, in, 0)
	if ok && len(skipSpace(rest)) == 0 {
		return out
	}
	if out, ok := canonSlow(dst[:n], in); ok {
		return out
	}
	return append(dst[:n], in...)
}

// canonSlow canonicalises through encoding/json: for objects too wide or
// too deep for the fast path.
func canonSlow(dst []byte, in []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || len(skipSpace(in[dec.InputOffset():])) > 0 {
		return dst, false
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return dst, false
	}
	return append(dst, bytes.TrimSuffix(out.Bytes(), []byte("\n"))...), true
}

// The fast path's bounds: wider objects and deeper nesting go the slow way.
const (
	canonMaxMembers = 16
	canonMaxDepth   = 32
)

// trimSpace trims JSON's insignificant space (not bytes.TrimSpace's
// wider set) from both ends.
func trimSpace(b []byte) []byte {
	b = skipSpace(b)
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// canonValue appends the canonical form of the value at the start of in
// and returns what follows it; ok is false for what the fast path cannot
// or will not do (malformed input, too wide, too deep).
func canonValue(dst, in []byte, depth int) (out, rest []byte, ok bool) {
	in = skipSpace(in)
	if len(in) == 0 || depth > canonMaxDepth {
		return dst, in, false
	}
	switch c := in[0]; {
	case c == '{':
		return canonObject(dst, in[1:], depth)
	case c == '[':
		dst = append(dst, '[')
		in = skipSpace(in[1:])
		if len(in) > 0 && in[0] == ']' {
			return append(dst, ']'), in[1:], true
		}
		for {
			if dst, in, ok = canonValue(dst, in, depth+1); !ok {
				return dst, in, false
			}
			in = skipSpace(in)
			if len(in) == 0 {
				return dst, in, false
			}
			switch in[0] {
			case ',':
				dst, in = append(dst, ','), in[1:]
			case ']':
				return append(dst, ']'), in[1:], true
			default:
				return dst, in, false
			}
		}
	case c == '"':
		end, ok := stringEnd(in)
		if !ok {
			return dst, in, false
		}
		return append(dst, in[:end]...), in[end:], true
	default: // a number, true, false or null
		i := scalarEnd(in)
		if i == 0 {
			return dst, in, false
		}
		return append(dst, in[:i]...), in[i:], true
	}
}

// scalarEnd returns the length of the number or literal (true, false,
// null) at the start of in, 0 when there is none.
func scalarEnd(in []byte) int {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(in, []byte(lit)) {
			return len(lit)
		}
	}
	// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
	i := 0
	digits := func() int {
		n := 0
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(in) && in[i] == '-' {
		i++
	}
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case digits() == 0:
		return 0
	}
	if i < len(in) && in[i] == '.' {
		i++
		if digits() == 0 {
			return 0
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0
		}
	}
	return i
}

// skipValue returns what follows the value at the start of in.
func skipValue(in []byte, depth int) (rest []byte, ok bool) {
	in = skipSpace(in)
	if len(in) == 0 || depth > canonMaxDepth {
		return in, false
	}
	switch in[0] {
	case '{', '[':
		closer := byte('}')
		if in[0] == '[' {
			closer = ']'
		}
		in = skipSpace(in[1:])
		if len(in) > 0 && in[0] == closer {
			return in[1:], true
		}
		for {
			if closer == '}' {
				in = skipSpace(in)
				end, ok := stringEnd(in)
				if !ok || len(in) == 0 || in[0] != '"' {
					return in, false
				}
				in = skipSpace(in[end:])
				if len(in) == 0 || in[0] != ':' {
					return in, false
				}
				in = in[1:]
			}
			if in, ok = skipValue(in, depth+1); !ok {
				return in, false
			}
			in = skipSpace(in)
			switch {
			case len(in) == 0:
				return in, false
			case in[0] == ',':
				in = in[1:]
			case in[0] == closer:
				return in[1:], true
			default:
				return in, false
			}
		}
	case '"':
		end, ok := stringEnd(in)
		return in[end:], ok
	}
	i := scalarEnd(in)
	return in[i:], i > 0
}

// stringEnd returns the length of the JSON string at the start of in,
// quotes included.
func stringEnd(in []byte) (int, bool) {
	if len(in) == 0 || in[0] != '"' {
		return 0, false
	}
	for i := 1; i < len(in); i++ {
		switch c := in[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false // control characters must be escaped
		case c == '\\':
			i++
			if i >= len(in) {
				return 0, false
			}
			switch in[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(in) {
					return 0, false
				}
				for _, h := range in[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// member is an object member: the key with its quotes, and the raw value.
type member struct{ key, val []byte }

func canonObject(dst, in []byte, depth int) (out, rest []byte, ok bool) {
	var arr [canonMaxMembers]member
	members := arr[:0]
	in = skipSpace(in)
	if len(in) > 0 && in[0] == '}' {
		return append(dst, "{}"...), in[1:], true
	}
	for {
		in = skipSpace(in)
		if len(in) == 0 || in[0] != '"' || len(members) == canonMaxMembers {
			return dst, in, false
		}
		end, ok := stringEnd(in)
		if !ok {
			return dst, in, false
		}
		key := in[:end]
		in = skipSpace(in[end:])
		if len(in) == 0 || in[0] != ':' {
			return dst, in, false
		}
		in = skipSpace(in[1:])
		after, ok := skipValue(in, depth+1)
		if !ok {
			return dst, in, false
		}
		members = append(members, member{key: key, val: in[:len(in)-len(after)]})
		in = skipSpace(after)
		if len(in) == 0 {
			return dst, in, false
		}
		if in[0] == '}' {
			in = in[1:]
			break
		}
		if in[0] != ',' {
			return dst, in, false
		}
		in = in[1:]
	}
	for i := 1; i < len(members); i++ { // insertion sort: a handful of keys
		for j := i; j > 0 && bytes.Compare(members[j].key, members[j-1].key) < 0; j-- {
			members[j], members[j-1] = members[j-1], members[j]
		}
	}
	dst = append(dst, '{')
	for i, m := range members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(dst, m.key...), ':')
		if dst, _, ok = canonValue(dst, m.val, depth+1); !ok {
			return dst, in, false
		}
	}
	return append(dst, '}'), in, true
}

// LoopTracker is the guardrails' memory of one agent run: which calls
// failed, how often in a row, and what read-only calls returned. The
// guardrail stage reads it before a call and the guardrail finisher
// records the call's outcome after it; both find it in the context
// (WithLoopTracker), where the agent puts one per run. A call checked
// without one is never refused. It is safe for concurrent use: calls of
// one round finish in parallel. The zero value is ready to use.
type LoopTracker struct {
	mu        sync.Mutex
	callFails map[Signature]int
	toolFails map[string]int
	results   map[Signature]resultRun
}

// resultRun is a read-only call's last result (a digest of it) and how
// many times in a row it came back the same.
type resultRun struct {
	hash  uint64
	count int
}

// NewLoopTracker returns an empty tracker.
func NewLoopTracker() *LoopTracker { return &LoopTracker{} }

// resultSeed keys the result digests. A digest is compared only with
// another of the same process, so one seed serves every tracker.
var resultSeed = maphash.MakeSeed()

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
	// The signature is worked out only when a count could refuse the call.
	needSig := (sameCall > 0 && len(t.callFails) > 0) || (readOnly && sameResult > 0 && len(t.results) > 0)
	var sig Signature
	if needSig {
		sig = CallSignature(tool, input)
	}
	if n := t.callFails[sig]; needSig && sameCall > 0 && n >= sameCall {
		return GuardBlock{Rule: GuardSameCall, Signature: sig, Count: n, Reason: fmt.Sprintf(
			"blocked by a guardrail: %s failed %d times in a row with these exact arguments, so it was not run again. "+
				"Do not repeat it unchanged: read the last error, then change the arguments, use a different tool or approach, "+
				"or tell the user what is in the way.", tool, n)}, true
	}
	if n := t.toolFails[tool]; sameTool > 0 && n >= sameTool {
		if !needSig {
			sig = CallSignature(tool, input)
		}
		return GuardBlock{Rule: GuardSameTool, Signature: sig, Count: n, Reason: fmt.Sprintf(
			"blocked by a guardrail: %s failed %d times in a row, so it was not run again. "+
				"Stop calling %s for now: try a different tool or a different approach, or ask the user for help.", tool, n, tool)}, true
	}
	if r := t.results[sig]; needSig && readOnly && sameResult > 0 && r.count >= sameResult {
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
	var h uint64
	if readOnly && !failed {
		h = t.resultHash(content)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if failed {
		if t.callFails == nil {
			t.callFails, t.toolFails = map[Signature]int{}, map[string]int{}
		}
		sig := CallSignature(tool, input)
		t.callFails[sig]++
		t.toolFails[tool]++
		delete(t.results, sig)
		return
	}
	delete(t.toolFails, tool)
	if len(t.callFails) == 0 && !readOnly {
		return // nothing to clear, nothing to remember
	}
	sig := CallSignature(tool, input)
	delete(t.callFails, sig)
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

// resultHash digests what the model sees of a result. It needs to tell
// results apart, not to resist an adversary (a collision would only
// refuse a repeated read-only call early), so it is maphash: results can
// be large, and this runs for every read-only call.
func (t *LoopTracker) resultHash(content []llm.Block) uint64 {
	var h maphash.Hash
	h.SetSeed(resultSeed)
	for _, b := range content {
		h.WriteString(string(b.Type))
		h.WriteByte(0)
		h.WriteString(b.Text)
		h.WriteByte(0)
		h.WriteString(b.MediaType)
		h.WriteByte(0)
		h.Write(b.Data)
		h.WriteByte(0)
		h.WriteString(b.URL)
		h.WriteByte(0)
	}
	return h.Sum64()
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
