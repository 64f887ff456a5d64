package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

// Stage is one step of the pipeline before a call runs. Check looks at
// the call (st) and returns the zero Decision to pass it on, or a verdict:
//
//   - Deny ends the pipeline: the call is refused with the reason.
//   - Allow or Ask becomes the decision so far (st.Decision) and the
//     pipeline goes on; a later stage may replace it (the human answers an
//     ask, a checkpoint refuses an allowed call).
//
// The rules decide every call afresh: an Allow or Ask from a stage
// before them (a pre_tool_use hook, a stage of your own placed there) is
// an opinion they weigh after deciding, as a hook's is (StageOpinion: an
// Ask sends the call to the human, an Allow settles what the rules would
// have asked), and no stage before them can stop a deny rule. Among the
// rule stages the first that decides wins; a stage of your own placed
// among them takes part in that. An Ask that only a person may answer
// (Decision.HumanOnly: the dangerous-command floor, a command the
// analysis could not pin down, a write to weft's or git's configuration)
// is never replaced by an Allow except from the human.
//
// A stage may change st (Input, Context, Stop, Notes) but must not keep
// it, nor use it after Check returns: st belongs to one call, and is
// reused for another after it. A panic in a stage denies the call.
type Stage interface {
	Check(ctx context.Context, st *State) Decision
}

// StageFunc makes a function a Stage.
type StageFunc func(ctx context.Context, st *State) Decision

// Check calls f.
func (f StageFunc) Check(ctx context.Context, st *State) Decision { return f(ctx, st) }

// Finisher is one step of the pipeline after a call ran: st.Result is the
// tool's result, which it may change; as with a Stage, st must not be
// kept. A panic in a finisher is logged and the next one runs.
type Finisher interface {
	Finish(ctx context.Context, st *State)
}

// FinisherFunc makes a function a Finisher.
type FinisherFunc func(ctx context.Context, st *State)

// Finish calls f.
func (f FinisherFunc) Finish(ctx context.Context, st *State) { f(ctx, st) }

// Decision is a stage's answer about a call; the zero value passes the
// call on to the next stage.
type Decision struct {
	Verdict permission.Verdict // "" passes; Allow, Ask or Deny decides
	// Reason says why; for a denial it is what the model is shown, for an
	// ask what the person is shown.
	Reason string
	// Stage names what decided in the audit log and the verdict: one of
	// the values of Verdict.Stage, or a name of your own.
	Stage string
	By    string // the rule or hook that decided, when one did
	// HumanOnly marks an Ask only a person may answer: no stage but the
	// human turns it into an Allow.
	HumanOnly bool
	// Dangerous marks an Ask of the dangerous-command floor: an approver
	// must not remember an "always" for it (Call.Dangerous).
	Dangerous bool
}

// State is one call on its way through the pipeline: what every stage
// sees and may change.
type State struct {
	// Policy is the policy the call runs under: its rules, mode, hooks,
	// secrets and audit sink.
	Policy *Policy
	// Call is the call as the model made it; Call.Input is its input as
	// sent.
	Call Call
	// Input is what the tool will run with: validated, maybe rewritten by
	// a hook, with the resolved paths the rules judged. A stage that
	// rewrites it assigns a new slice and never writes into the old one.
	Input json.RawMessage
	// Decision is the decision so far; zero until a stage decides.
	Decision Decision
	// Context is additional context for the model, added to the result
	// it sees (from hooks).
	Context string
	// Stop is set when a hook asked the run to stop (continue:false).
	Stop       bool
	StopReason string
	// Notes are added to the Extra of the call's audit entry (the pipeline's
	// own "stage" and "by" win); nil until a stage adds one.
	Notes map[string]string
	// Human and Checkpoint are the Before's caller's (nil: nobody).
	Human      Human
	Checkpoint Checkpoint
	// Result is the tool's result, for the finishers; nil before the run.
	Result *tool.Result

	// eval is the rule stages' analysis of Input as it was when they
	// first needed it (evalInput).
	eval      *permission.Evaluation
	evalInput json.RawMessage
	// opinion is what the stages before the rules decided (a pre_tool_use
	// hook's allow or ask), weighed after the rules by StageOpinion.
	opinion Decision
}

// Evaluation is the permission rules' analysis of the call's current
// input (its fields, shell analysis, resolved paths), made once and
// shared by the rule stages; a stage of your own may use it too.
func (st *State) Evaluation() *permission.Evaluation {
	if st.eval == nil || !sameSlice(st.evalInput, st.Input) {
		st.eval = permission.NewEvaluation(st.Policy.permissionCall(st.Call.Tool, st.Input, st.Call.Spec.Meta))
		st.evalInput = st.Input
	}
	return st.eval
}

// states recycles States: two a tool call (Before and After), on the
// hot path of every turn. Hence a stage must not keep its st.
var states = sync.Pool{New: func() any { return new(State) }}

func newState() *State { return states.Get().(*State) }

func freeState(st *State) {
	*st = State{} // nothing of one call reaches the next
	states.Put(st)
}

func sameSlice(a, b json.RawMessage) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Pipeline is the list of stages a call goes through: Stages before it
// runs, Finishers after. It is immutable, so policies and their copies
// share one; Insert and InsertFinisher return a new pipeline.
type Pipeline struct {
	stages    []named[Stage]
	finishers []named[Finisher]
}

type named[T any] struct {
	name string
	s    T
}

// The stages of DefaultPipeline, in order. A stage of your own goes
// before one of them (Insert); a snapshot of the workspace before a
// change, for one, would go at the end (Insert with before "").
const (
	StageSchema       = "schema"        // the input against the tool's JSON Schema (Policy.Validate)
	StageGuardrail    = "guardrail"     // loop guards: a call that keeps failing or keeps answering the same (Policy.Guardrails)
	StagePreToolUse   = "pre_tool_use"  // hooks: deny, an allow or ask opinion, rewrite the input, add context, stop
	StageDenyRules    = "deny_rules"    // permission.Evaluation.DenyRules
	StageBypass       = "bypass"        // bypass mode allows what no deny rule matched
	StageFloor        = "floor"         // the dangerous-command floor
	StageAskRules     = "ask_rules"     // ask rules
	StageUnresolved   = "unresolved"    // a command the analysis could not pin down
	StageProtected    = "protected"     // a write to weft's or git's own configuration
	StageAllowRules   = "allow_rules"   // allow rules
	StageModeDefault  = "mode_default"  // the mode's default (seed 004)
	StageOpinion      = "opinion"       // the pre-rule opinion (a hook's allow or ask) applied
	StageResolvePaths = "resolve_paths" // the input's paths replaced by the resolved paths judged
	StageApprove      = "approve"       // permission_request hooks, then the human
	StageCheckpoint   = "checkpoint"    // confirmation of a tool that requires a checkpoint
)

// The finishers of DefaultPipeline, in order.
const (
	FinishRedact      = "redact"        // registered secret values out of the result
	FinishGuardrail   = "guardrail"     // the call's outcome, for the guardrail stage's next check
	FinishPostToolUse = "post_tool_use" // post_tool_use (or post_tool_use_failure) hooks
	FinishContext     = "context"       // the hooks' additional context appended to the result
	FinishAudit       = "audit"         // the audit entry
)

var defaultPipeline = &Pipeline{
	stages: []named[Stage]{
		{StageSchema, schemaStage{}},
		{StageGuardrail, guardrailStage{}},
		{StagePreToolUse, preToolUseStage{}},
		{StageDenyRules, denyRulesStage{}},
		{StageBypass, ruleStage{(*permission.Evaluation).Bypass}},
		{StageFloor, ruleStage{(*permission.Evaluation).Floor}},
		{StageAskRules, ruleStage{(*permission.Evaluation).AskRules}},
		{StageUnresolved, ruleStage{(*permission.Evaluation).Unresolved}},
		{StageProtected, ruleStage{(*permission.Evaluation).Protected}},
		{StageAllowRules, ruleStage{(*permission.Evaluation).AllowRules}},
		{StageModeDefault, ruleStage{(*permission.Evaluation).ModeDefault}},
		{StageOpinion, opinionStage{}},
		{StageResolvePaths, resolvePathsStage{}},
		{StageApprove, approveStage{}},
		{StageCheckpoint, checkpointStage{}},
	},
	finishers: []named[Finisher]{
		{FinishRedact, redactFinisher{}},
		{FinishGuardrail, guardrailFinisher{}},
		{FinishPostToolUse, postToolUseFinisher{}},
		{FinishContext, contextFinisher{}},
		{FinishAudit, auditFinisher{}},
	},
}

// DefaultPipeline is the pipeline of a Policy whose Pipeline is nil:
//
//	schema -> guardrail -> pre_tool_use -> deny_rules -> bypass -> floor ->
//	ask_rules -> unresolved -> protected -> allow_rules -> mode_default ->
//	opinion -> resolve_paths -> approve -> checkpoint -> (run) -> redact ->
//	guardrail -> post_tool_use -> context -> audit
func DefaultPipeline() *Pipeline { return defaultPipeline }

// Insert returns a copy of the pipeline with s, named name, placed before
// the stage named before ("" places it at the end). The name must be new.
func (pl *Pipeline) Insert(before, name string, s Stage) (*Pipeline, error) {
	stages, err := insert(pl.stages, before, name, s)
	if err != nil {
		return nil, err
	}
	return &Pipeline{stages: stages, finishers: pl.finishers}, nil
}

// InsertFinisher returns a copy of the pipeline with f, named name, placed
// before the finisher named before ("" places it at the end).
func (pl *Pipeline) InsertFinisher(before, name string, f Finisher) (*Pipeline, error) {
	finishers, err := insert(pl.finishers, before, name, f)
	if err != nil {
		return nil, err
	}
	return &Pipeline{stages: pl.stages, finishers: finishers}, nil
}

func insert[T any](list []named[T], before, name string, s T) ([]named[T], error) {
	if name == "" {
		return nil, fmt.Errorf("policy: a stage needs a name")
	}
	if any(s) == nil {
		return nil, fmt.Errorf("policy: stage %q is nil", name)
	}
	if slices.ContainsFunc(list, func(n named[T]) bool { return n.name == name }) {
		return nil, fmt.Errorf("policy: the pipeline already has a stage %q", name)
	}
	at := len(list)
	if before != "" {
		if at = slices.IndexFunc(list, func(n named[T]) bool { return n.name == before }); at < 0 {
			return nil, fmt.Errorf("policy: no stage %q to insert %q before", before, name)
		}
	}
	out := make([]named[T], 0, len(list)+1)
	out = append(append(append(out, list[:at]...), named[T]{name, s}), list[at:]...)
	return out, nil
}

// Stages returns the names of the stages before the run, in order.
func (pl *Pipeline) Stages() []string { return names(pl.stages) }

// Finishers returns the names of the finishers, in order.
func (pl *Pipeline) Finishers() []string { return names(pl.finishers) }

func names[T any](list []named[T]) []string {
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = n.name
	}
	return out
}

func (p *Policy) pipeline() *Pipeline {
	if p.Pipeline != nil {
		return p.Pipeline
	}
	return defaultPipeline
}

// check runs the stages over st and returns the verdict.
func (pl *Pipeline) check(ctx context.Context, st *State) Verdict {
	d := pl.decide(ctx, st)
	v := Verdict{Reason: d.Reason, Input: st.Input, Context: st.Context, Stage: d.Stage, By: d.By, Notes: st.Notes}
	switch d.Verdict {
	case permission.Allow:
		v.Allow = true
		v.Stop, v.StopReason = st.Stop, st.StopReason
	case permission.Ask:
		// No stage answered the question: nobody approved the call.
		v.Reason, v.Stage, v.By = "no one approved this call ("+d.Reason+")", stageHuman, ""
	case permission.Deny:
	default:
		v.Reason, v.Stage = "no stage of the policy decided this call", "policy"
	}
	return v
}

func (pl *Pipeline) decide(ctx context.Context, st *State) (d Decision) {
	var stage string
	defer func() {
		if r := recover(); r != nil {
			st.Policy.log().Error("a policy stage panicked; denying the call", "tool", st.Call.Tool, "stage", stage, "panic", r)
			d = Decision{Verdict: permission.Deny, Reason: "the permission check failed", Stage: stage}
		}
	}()
	for _, s := range pl.stages {
		stage = s.name
		nd := s.s.Check(ctx, st)
		switch nd.Verdict {
		case "":
			continue
		case permission.Allow:
			if cur := st.Decision; cur.Verdict == permission.Ask && cur.HumanOnly && nd.Stage != stageHuman {
				continue // only a person answers this one
			}
		case permission.Ask:
		case permission.Deny:
			return nd
		default: // fail closed
			return Decision{Verdict: permission.Deny, Reason: fmt.Sprintf("the policy stage %s gave an unknown verdict %q", s.name, nd.Verdict), Stage: s.name}
		}
		st.Decision = nd
	}
	return st.Decision
}

// finish runs the finishers over st.
func (pl *Pipeline) finish(ctx context.Context, st *State) {
	for _, f := range pl.finishers {
		runFinisher(ctx, f, st)
	}
}

func runFinisher(ctx context.Context, f named[Finisher], st *State) {
	defer func() {
		if r := recover(); r != nil {
			st.Policy.log().Error("a policy finisher panicked", "tool", st.Call.Tool, "stage", f.name, "panic", r)
		}
	}()
	f.s.Finish(ctx, st)
}
