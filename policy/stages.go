package policy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

// The stages of DefaultPipeline. Each is a type with one method; what a
// call carries from one to the next is in State.

// schemaStage checks the input against the tool's schema before anyone
// (a hook, a rule, a person) looks at it.
type schemaStage struct{}

func (schemaStage) Check(_ context.Context, st *State) Decision {
	p := st.Policy
	if p.Validate == nil {
		return Decision{}
	}
	in, err := p.Validate(st.Call.Tool, st.Input)
	if err != nil {
		return Decision{Verdict: permission.Deny, Reason: err.Error(), Stage: "schema"}
	}
	st.Input = in
	return Decision{}
}

// preToolUseStage runs the pre_tool_use hooks: they may deny, say allow
// or ask (an opinion the rules weigh: StageOpinion), rewrite the input
// (which is then validated again), add context or stop the run.
type preToolUseStage struct{}

func (preToolUseStage) Check(ctx context.Context, st *State) Decision {
	p := st.Policy
	if p.Hooks == nil || !p.Hooks.Has(hook.PreToolUse) {
		return Decision{}
	}
	out := p.Hooks.Run(ctx, p.hookInput(hook.PreToolUse, st.Call, st.Input))
	if out.Verdict == hook.Deny {
		st.Context = joinContext(st.Context, out.AdditionalContext)
		return Decision{Verdict: permission.Deny, Reason: nonEmpty(out.Reason, "blocked by a pre_tool_use hook"), Stage: "hook", By: out.Hook}
	}
	if len(out.UpdatedInput) > 0 {
		in := out.UpdatedInput
		if p.Validate != nil {
			var err error
			if in, err = p.Validate(st.Call.Tool, in); err != nil {
				return Decision{Verdict: permission.Deny, Reason: "a hook rewrote the input into an invalid one: " + err.Error(), Stage: "hook", By: out.Hook}
			}
		}
		st.Input = in
	}
	st.Context = joinContext(st.Context, out.AdditionalContext)
	if out.Stop && !st.Stop {
		st.Stop, st.StopReason = true, out.StopReason
	}
	switch out.Verdict {
	case hook.Ask:
		if st.Decision.Verdict == permission.Ask {
			return Decision{} // an earlier stage's ask stands
		}
		return Decision{Verdict: permission.Ask, Reason: nonEmpty(out.Reason, "a pre_tool_use hook asks for confirmation"), Stage: "hook", By: out.Hook}
	case hook.Allow:
		if st.Decision.Verdict == permission.Ask {
			return Decision{} // a hook does not overrule an earlier stage's ask
		}
		return Decision{Verdict: permission.Allow, Reason: out.Reason, Stage: "hook", By: out.Hook}
	}
	return Decision{}
}

// denyRulesStage starts the rules: it sets aside what the stages before
// them said (an opinion, for StageOpinion) so that the rules decide
// afresh, and denies a call a deny rule matches whatever was said before.
type denyRulesStage struct{}

func (denyRulesStage) Check(ctx context.Context, st *State) Decision {
	st.opinion, st.Decision = st.Decision, Decision{}
	return ruleStage{(*permission.Evaluation).DenyRules}.Check(ctx, st)
}

// ruleStage is one step of permission.Evaluate over the call's shared
// analysis (State.Evaluation); the first rule stage that decides wins.
//
// The rule steps are stages of their own, rather than permission.Evaluate
// as one, so that a stage can be placed between any two of them; they
// cost no more than Evaluate since they share its one analysis of the
// call (the shell parse, the resolved paths), made by the first of them.
type ruleStage struct{ step permission.Step }

func (s ruleStage) Check(_ context.Context, st *State) Decision {
	if st.Decision.Verdict != "" {
		return Decision{}
	}
	p := st.Policy
	d, ok := s.step(st.Evaluation(), p.Rules, p.Mode)
	if !ok {
		return Decision{}
	}
	return Decision{Verdict: d.Verdict, Reason: d.Reason, Stage: d.Stage, By: d.Rule,
		// A hook's allow never opens the floor, a command that could not
		// be analysed or a write to weft's or git's own configuration.
		HumanOnly: d.Verdict == permission.Ask &&
			(d.Stage == permission.StageFloor || d.Stage == permission.StageUnresolved || d.Stage == permission.StageProtected),
		Dangerous: d.Verdict == permission.Ask && d.Stage == permission.StageFloor,
	}
}

// opinionStage weighs what the stages before the rules said against the
// rules' decision: an ask sends the call to the human; an allow settles
// the question like an allow rule (not a HumanOnly one, and never a
// deny, which ended the pipeline). The deciding rule names itself in By;
// when none did, the stage that gave the opinion does.
type opinionStage struct{}

func (opinionStage) Check(_ context.Context, st *State) Decision {
	d, o := st.Decision, st.opinion
	if d.Verdict == "" {
		return Decision{}
	}
	if d.By == "" {
		d.By = o.By
	}
	switch o.Verdict {
	case permission.Ask:
		d.Verdict, d.Stage, d.Reason = permission.Ask, o.Stage, nonEmpty(d.Reason, o.Reason)
	case permission.Allow:
		if !d.HumanOnly {
			d.Verdict, d.Stage = permission.Allow, o.Stage
		}
	}
	return d
}

// resolvePathsStage gives weft's file tools the resolved paths the rules
// judged: the tool refuses one that resolves elsewhere by the time it
// runs (a symlink swapped in). See permission.ResolvedInput.
type resolvePathsStage struct{}

func (resolvePathsStage) Check(_ context.Context, st *State) Decision {
	if in, ok := st.Evaluation().ResolvedInput(); ok {
		st.Input = in
	}
	return Decision{}
}

// stageHuman is the Decision.Stage of the person's answer: the one answer
// that may replace an Ask marked HumanOnly.
const stageHuman = "human"

// approveStage answers an ask: the permission_request hooks, then the
// human. With no human at all the call is refused before any hook runs.
type approveStage struct{}

func (approveStage) Check(ctx context.Context, st *State) Decision {
	d := st.Decision
	if d.Verdict != permission.Ask {
		return Decision{}
	}
	p := st.Policy
	if st.Human == nil {
		return Decision{Verdict: permission.Deny, Reason: "no one is available to approve this call (" + d.Reason + ")", Stage: stageHuman}
	}
	if p.Hooks != nil && p.Hooks.Has(hook.PermissionRequest) {
		in := p.hookInput(hook.PermissionRequest, st.Call, st.Input)
		in.Reason = d.Reason
		out := p.Hooks.Run(ctx, in)
		switch out.Verdict {
		case hook.Deny:
			return Decision{Verdict: permission.Deny, Reason: nonEmpty(out.Reason, "denied by a permission_request hook"), Stage: "hook", By: out.Hook}
		case hook.Allow:
			if !d.HumanOnly {
				return Decision{Verdict: permission.Allow, Reason: d.Reason, Stage: "hook", By: out.Hook}
			}
		}
	}
	c := st.Call
	c.Input, c.Dangerous = st.Input, d.Dangerous
	if allow, why := safeHuman(ctx, st.Human, c, d.Reason, p.log()); !allow {
		return Decision{Verdict: permission.Deny, Reason: nonEmpty(why, "the user denied this tool call"), Stage: stageHuman}
	}
	return Decision{Verdict: permission.Allow, Reason: d.Reason, Stage: stageHuman}
}

// checkpointStage confirms a call of a tool that requires a checkpoint
// (irreversible actions); nil Checkpoint refuses it.
type checkpointStage struct{}

func (checkpointStage) Check(ctx context.Context, st *State) Decision {
	c := st.Call
	if !c.Spec.RequiresCheckpoint {
		return Decision{}
	}
	p := st.Policy
	req := CheckpointRequest{ToolCallID: c.ToolUseID, ToolName: c.Tool, Input: p.redactJSON(st.Input),
		Message: fmt.Sprintf("%s is irreversible and needs confirmation before it runs", c.Tool)}
	if st.Checkpoint == nil || !safeCheckpoint(ctx, st.Checkpoint, req, p.log()) {
		return Decision{Verdict: permission.Deny, Reason: DeniedAtCheckpoint, Stage: "checkpoint"}
	}
	return Decision{}
}

// redactFinisher takes registered secret values out of the result.
type redactFinisher struct{}

func (redactFinisher) Finish(_ context.Context, st *State) { st.Policy.RedactResult(st.Result) }

// postToolUseFinisher runs the post_tool_use (or post_tool_use_failure)
// hooks; what they say goes to the model as context.
type postToolUseFinisher struct{}

func (postToolUseFinisher) Finish(ctx context.Context, st *State) {
	p, res := st.Policy, st.Result
	if p.Hooks == nil {
		return
	}
	ev := hook.PostToolUse
	if res.IsError {
		ev = hook.PostToolUseFailure
	}
	if !p.Hooks.Has(ev) {
		return
	}
	in := p.hookInput(ev, st.Call, st.Input)
	out, _ := json.Marshal(map[string]any{"output": res.TextOf(), "is_error": res.IsError})
	in.ToolResponse = p.redactJSON(out)
	in.IsError = res.IsError
	o := p.Hooks.Run(ctx, in)
	if o.Verdict == hook.Deny && o.Reason != "" {
		// Claude Code's PostToolUse "block": the tool ran, and the reason
		// is fed back to the model.
		st.Context = joinContext(st.Context, o.Reason)
	}
	st.Context = joinContext(st.Context, o.AdditionalContext)
}

// contextFinisher appends the hooks' additional context to the result.
type contextFinisher struct{}

func (contextFinisher) Finish(_ context.Context, st *State) {
	if st.Context != "" {
		st.Result.Content = append(st.Result.Content, tool.Text(st.Policy.redact(st.Context)).Content...)
	}
}

// auditFinisher writes the call's audit entry.
type auditFinisher struct{}

func (auditFinisher) Finish(_ context.Context, st *State) {
	p, res := st.Policy, st.Result
	if p.Audit == nil {
		return
	}
	e := p.entry(st.Call, st.Input)
	e.Outcome = "allowed"
	e.Extra = auditExtra(st.Notes, st.Decision.Stage, st.Decision.By)
	if n, ok := secretCount(res.Data); ok {
		e.Outcome, e.Reason = "blocked", fmt.Sprintf("secret_detected:count=%d", n)
	} else if res.IsError {
		e.Outcome, e.Reason = "error", firstLine(res.TextOf())
	}
	p.write(e)
}

// auditExtra is an audit entry's Extra: the stages' notes, then the
// stage that decided and the rule or hook that did.
func auditExtra(notes map[string]string, stage, by string) map[string]string {
	extra := make(map[string]string, len(notes)+2)
	for k, v := range notes {
		extra[k] = v
	}
	extra["stage"] = stage
	if by != "" {
		extra["by"] = by
	}
	return extra
}
