// Package policy is the one pipeline every tool call goes through, from
// every front door (SDK, CLI, HTTP, WebSocket, workflows, sub-agents):
//
//	schema validation -> pre_tool_use hooks -> deny rules -> ask rules ->
//	allow rules -> mode default -> the human -> checkpoint confirmation ->
//	run -> post_tool_use hooks -> audit
//
// Deny always wins: a deny rule beats an allowing hook, and the dangerous
// command floor beats allow rules. Each stage is a small function over one
// call; the pipeline is the list in Before. The stages themselves live in
// the packages below: permission (rules, modes, the shell floor), hook
// (lifecycle hooks), secret (redaction) and audit (sinks).
package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// Policy is the permission posture of one session or run. The zero value
// is the default mode with no rules, hooks, audit or secrets: read-only
// tools run and everything else asks the human.
type Policy struct {
	Mode      permission.Mode
	Rules     permission.RuleSet
	Workspace string   // absolute; file rules and auto mode are relative to it
	ExtraDirs []string // additionalDirectories
	// Protected are files and directories, besides
	// permission.ProtectedPatterns, whose change alters what weft runs (the
	// --settings file, the plugin directory, the audit log): writes to
	// them always ask.
	Protected []string
	Hooks     *hook.Manager
	Audit     audit.Sink
	Secrets   *secret.Set
	// Validate checks a call's input against its tool's schema (the
	// registry's Validate); nil skips the stage (Execute validates anyway).
	Validate  func(name string, input json.RawMessage) (json.RawMessage, error)
	SessionID string
	ActorID   string
	Logger    *slog.Logger
}

// Call is one tool call on its way through the pipeline.
type Call struct {
	ToolUseID string
	Tool      string
	Input     json.RawMessage
	Spec      tool.Spec
	Turn      int
	// Dangerous is set on calls put to the human by the dangerous-command
	// floor: an approver must not remember an "always" for them.
	Dangerous bool
}

// Human asks a person whether a call the rules did not settle may run;
// reason says why it is being asked. It must honour ctx.
type Human func(ctx context.Context, c Call, reason string) (allow bool, why string)

// Checkpoint confirms a call of a tool that requires a checkpoint
// (irreversible actions). nil denies every such call.
type Checkpoint func(ctx context.Context, c CheckpointRequest) bool

// CheckpointRequest is seed 000's CheckpointEvent.
type CheckpointRequest struct {
	ToolCallID string          `json:"tool_call_id"`
	ToolName   string          `json:"tool_name"`
	Input      json.RawMessage `json:"input"` // redacted
	Message    string          `json:"message"`
}

// DeniedAtCheckpoint is what the model sees when a checkpoint refuses.
const DeniedAtCheckpoint = "tool execution denied at checkpoint"

// Verdict is the pipeline's answer before a call runs.
type Verdict struct {
	Allow  bool
	Reason string          // for a denial: shown to the model
	Input  json.RawMessage // what to run with (a hook may have rewritten it)
	// Context is additional context from hooks, appended to the result
	// the model sees.
	Context string
	Stage   string // the stage that decided: schema, hook, deny_rule, ask_rule, allow_rule, mode, floor, unresolved, human, checkpoint
	By      string // the rule or hook that decided, when one did
	// Stop is set when a hook asked the run to stop (continue:false).
	Stop       bool
	StopReason string
}

func (p *Policy) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Before decides whether c may run: every stage up to (not including) the
// run. A denial is audited and reported to permission_denied hooks here.
func (p *Policy) Before(ctx context.Context, c Call, human Human, checkpoint Checkpoint) Verdict {
	v := p.before(ctx, c, human, checkpoint)
	if !v.Allow {
		p.denied(ctx, c, v)
	}
	return v
}

func (p *Policy) before(ctx context.Context, c Call, human Human, checkpoint Checkpoint) Verdict {
	v := Verdict{Input: c.Input}
	if p.Validate != nil {
		in, err := p.Validate(c.Tool, c.Input)
		if err != nil {
			return Verdict{Reason: err.Error(), Stage: "schema", Input: c.Input}
		}
		v.Input = in
	}

	// pre_tool_use hooks: may deny, force a question, pre-approve or
	// rewrite the input (which is then validated again).
	hookVerdict := hook.NoOpinion
	if p.Hooks != nil && p.Hooks.Has(hook.PreToolUse) {
		out := p.Hooks.Run(ctx, p.hookInput(hook.PreToolUse, c, v.Input))
		v.Context = out.AdditionalContext
		v.Stop, v.StopReason = out.Stop, out.StopReason
		if out.Verdict == hook.Deny {
			return Verdict{Reason: nonEmpty(out.Reason, "blocked by a pre_tool_use hook"), Stage: "hook", By: out.Hook, Input: v.Input, Context: v.Context}
		}
		if len(out.UpdatedInput) > 0 {
			in := out.UpdatedInput
			if p.Validate != nil {
				var err error
				if in, err = p.Validate(c.Tool, in); err != nil {
					return Verdict{Reason: "a hook rewrote the input into an invalid one: " + err.Error(), Stage: "hook", By: out.Hook, Input: v.Input}
				}
			}
			v.Input = in
		}
		hookVerdict = out.Verdict
		v.By = out.Hook
	}

	pc := p.permissionCall(c.Tool, v.Input, c.Spec.Meta)
	d := permission.Evaluate(p.Rules, p.Mode, pc)
	if in, ok := permission.ResolvedInput(pc); ok && d.Verdict != permission.Deny {
		// The tool opens the path the rules judged; it refuses one that
		// resolves elsewhere by the time it runs (a symlink swapped in).
		v.Input = in
	}
	v.Stage, v.Reason = d.Stage, d.Reason
	if d.Rule != "" {
		v.By = d.Rule
	}
	verdict := d.Verdict
	switch {
	case verdict == permission.Deny:
		return Verdict{Reason: d.Reason, Stage: d.Stage, By: d.Rule, Input: v.Input, Context: v.Context}
	case hookVerdict == hook.Ask:
		verdict = permission.Ask
		v.Stage, v.Reason = "hook", nonEmpty(v.Reason, "a pre_tool_use hook asks for confirmation")
	case hookVerdict == hook.Allow && d.Stage != permission.StageFloor && d.Stage != permission.StageUnresolved && d.Stage != permission.StageProtected:
		// A hook's allow settles the question like an allow rule, but never
		// opens the dangerous-command floor, a command that could not be
		// analysed or a write to weft's or git's own configuration.
		verdict = permission.Allow
		v.Stage = "hook"
	}

	if verdict == permission.Ask {
		if human == nil {
			return Verdict{Reason: "no one is available to approve this call (" + d.Reason + ")", Stage: "human", Input: v.Input, Context: v.Context}
		}
		if p.Hooks != nil && p.Hooks.Has(hook.PermissionRequest) {
			in := p.hookInput(hook.PermissionRequest, c, v.Input)
			in.Reason = d.Reason
			out := p.Hooks.Run(ctx, in)
			switch out.Verdict {
			case hook.Deny:
				return Verdict{Reason: nonEmpty(out.Reason, "denied by a permission_request hook"), Stage: "hook", By: out.Hook, Input: v.Input, Context: v.Context}
			case hook.Allow:
				if d.Stage != permission.StageFloor && d.Stage != permission.StageUnresolved && d.Stage != permission.StageProtected {
					verdict = permission.Allow
					v.Stage, v.By = "hook", out.Hook
				}
			}
		}
	}
	if verdict == permission.Ask {
		hc := Call{ToolUseID: c.ToolUseID, Tool: c.Tool, Input: v.Input, Spec: c.Spec, Turn: c.Turn, Dangerous: d.Stage == permission.StageFloor}
		allow, why := safeHuman(ctx, human, hc, d.Reason, p.log())
		if !allow {
			return Verdict{Reason: nonEmpty(why, "the user denied this tool call"), Stage: "human", Input: v.Input, Context: v.Context}
		}
		v.Stage, v.By = "human", ""
	}

	if c.Spec.RequiresCheckpoint {
		req := CheckpointRequest{ToolCallID: c.ToolUseID, ToolName: c.Tool, Input: p.redactJSON(v.Input),
			Message: fmt.Sprintf("%s is irreversible and needs confirmation before it runs", c.Tool)}
		if checkpoint == nil || !safeCheckpoint(ctx, checkpoint, req, p.log()) {
			return Verdict{Reason: DeniedAtCheckpoint, Stage: "checkpoint", Input: v.Input, Context: v.Context}
		}
	}
	v.Allow = true
	return v
}

// permissionCall is what the permission rules see of a call.
func (p *Policy) permissionCall(name string, input json.RawMessage, meta tool.Meta) permission.Call {
	return permission.Call{Tool: name, Input: input, Meta: meta, Workspace: p.Workspace, ExtraDirs: p.ExtraDirs, Protected: p.Protected}
}

// After finishes a call that ran: it redacts the result, runs the
// post_tool_use (or post_tool_use_failure) hooks and audits the outcome.
func (p *Policy) After(ctx context.Context, c Call, v Verdict, res *tool.Result) {
	p.RedactResult(res)
	if p.Hooks != nil {
		ev := hook.PostToolUse
		if res.IsError {
			ev = hook.PostToolUseFailure
		}
		if p.Hooks.Has(ev) {
			in := p.hookInput(ev, c, v.Input)
			out, _ := json.Marshal(map[string]any{"output": res.TextOf(), "is_error": res.IsError})
			in.ToolResponse = p.redactJSON(out)
			in.IsError = res.IsError
			o := p.Hooks.Run(ctx, in)
			if o.Verdict == hook.Deny && o.Reason != "" {
				// Claude Code's PostToolUse "block": the tool ran, and the
				// reason is fed back to the model.
				v.Context = joinContext(v.Context, o.Reason)
			}
			v.Context = joinContext(v.Context, o.AdditionalContext)
		}
	}
	if v.Context != "" {
		res.Content = append(res.Content, tool.Text(p.redact(v.Context)).Content...)
	}
	if p.Audit == nil {
		return
	}
	e := p.entry(c, v.Input)
	e.Outcome = "allowed"
	e.Extra = map[string]string{"stage": v.Stage}
	if v.By != "" {
		e.Extra["by"] = v.By
	}
	if n, ok := secretCount(res.Data); ok {
		e.Outcome, e.Reason = "blocked", fmt.Sprintf("secret_detected:count=%d", n)
	} else if res.IsError {
		e.Outcome, e.Reason = "error", firstLine(res.TextOf())
	}
	p.write(e)
}

// RedactResult replaces registered secret values in a result: its content
// and its structured data. (Registry.Execute has already done so, before
// capping the output, when the call carried the secrets.)
func (p *Policy) RedactResult(res *tool.Result) {
	*res = secret.Redacted(p.Secrets, *res)
}

func (p *Policy) denied(ctx context.Context, c Call, v Verdict) {
	if p.Audit != nil {
		p.auditDenial(c, v)
	}
	if p.Hooks != nil && p.Hooks.Has(hook.PermissionDenied) {
		in := p.hookInput(hook.PermissionDenied, c, v.Input)
		in.Reason = v.Reason
		p.Hooks.Run(ctx, in)
	}
}

func (p *Policy) auditDenial(c Call, v Verdict) {
	e := p.entry(c, v.Input)
	e.Outcome, e.Reason = "blocked", v.Reason
	e.Extra = map[string]string{"stage": v.Stage}
	if v.By != "" {
		e.Extra["by"] = v.By
	}
	if v.Stage == "schema" {
		e.Outcome = "error"
	}
	p.write(e)
}

func (p *Policy) write(e audit.Entry) {
	if p.Audit == nil {
		return
	}
	// Every field, for every sink (the JSONL file and the database).
	e = secret.Redacted(p.Secrets, e)
	if err := p.Audit.Write(e); err != nil {
		p.log().Error("writing an audit entry failed", "tool", e.ToolName, "error", err)
	}
}

func (p *Policy) entry(c Call, input json.RawMessage) audit.Entry {
	return audit.Entry{
		SessionID: p.SessionID, TurnNumber: c.Turn, Timestamp: time.Now().UTC(),
		ToolName: c.Tool, Operation: Operation(c.Tool, c.Spec.Meta), Resource: Resource(input), ActorID: p.ActorID,
	}
}

// HookInput is the envelope of a hook about this session (for the events
// the engine raises outside tool calls).
func (p *Policy) HookInput(ev hook.Event) hook.Input {
	return hook.Input{Event: ev, SessionID: p.SessionID, Cwd: p.Workspace, PermissionMode: string(p.Mode)}
}

func (p *Policy) hookInput(ev hook.Event, c Call, input json.RawMessage) hook.Input {
	in := p.HookInput(ev)
	in.ToolName, in.ToolInput, in.ToolUseID, in.Turn = c.Tool, p.redactJSON(input), c.ToolUseID, c.Turn
	return in
}

func (p *Policy) redact(s string) string {
	if p.Secrets == nil {
		return s
	}
	return p.Secrets.Redact(s)
}

func (p *Policy) redactJSON(b json.RawMessage) json.RawMessage {
	if p.Secrets == nil || len(b) == 0 {
		return b
	}
	return p.Secrets.RedactJSON(b)
}

// Operation names what a call does, in seed 000's audit vocabulary.
func Operation(name string, m tool.Meta) string {
	switch name {
	case "Write":
		return "write"
	case "Edit":
		return "edit"
	case "Read", "Grep", "Glob":
		return "read"
	case "Bash":
		return "execute"
	}
	switch {
	case m.ReadOnly || m.Effect == tool.EffectRead:
		return "read"
	case m.Effect == tool.EffectWrite:
		return "write"
	case m.Effect == tool.EffectExecute:
		return "execute"
	}
	return "invoke"
}

// Resource is what a call acts on: a path, URL or command, cut short.
func Resource(input json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(input, &in) != nil {
		return ""
	}
	for _, k := range []string{"file_path", "path", "url", "command", "pattern"} {
		if s, ok := in[k].(string); ok && s != "" {
			if len(s) > 200 {
				s = s[:200] + "…"
			}
			return s
		}
	}
	return ""
}

func secretCount(data map[string]any) (int, bool) {
	switch n := data["secret_detected"].(type) {
	case int:
		return n, true
	case float64:
		return int(n), true
	}
	return 0, false
}

func safeHuman(ctx context.Context, h Human, c Call, reason string, log *slog.Logger) (allow bool, why string) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("approve function panicked; denying", "tool", c.Tool, "panic", r)
			allow, why = false, "the approval check failed"
		}
	}()
	allow, why = h(ctx, c, reason)
	if ctx.Err() != nil {
		return false, "the run was stopped while waiting for approval"
	}
	return allow, why
}

func safeCheckpoint(ctx context.Context, cp Checkpoint, req CheckpointRequest, log *slog.Logger) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("checkpoint handler panicked; denying", "tool", req.ToolName, "panic", r)
			ok = false
		}
	}()
	return cp(ctx, req) && ctx.Err() == nil
}

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func joinContext(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
