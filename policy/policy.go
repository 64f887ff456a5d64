// Package policy is the one pipeline every tool call goes through, from
// every front door (SDK, CLI, HTTP, WebSocket, workflows, sub-agents):
//
//	schema validation -> guardrails -> pre_tool_use hooks -> deny rules ->
//	bypass -> danger floor -> ask rules -> unresolved command ->
//	protected path -> allow rules -> mode default -> the hooks' opinion ->
//	resolved paths -> the human -> checkpoint confirmation -> run ->
//	redact -> guardrails -> post_tool_use hooks -> context -> audit
//
// Each stage is a small type with one method (Stage before the run,
// Finisher after it) and the pipeline is a list of them (Pipeline,
// DefaultPipeline), which later features extend without editing the
// others: the guardrails (guardrail.go) before the hooks, a budget or a
// sub-agent's tool limits wherever they belong, a workspace snapshot at the end
// (Pipeline.Insert). A call carries its State from stage to stage: the
// call, its input as rewritten, the decision so far, the context for
// the model and the notes for the audit entry.
//
// Deny always wins: a deny rule beats an allowing hook, and the dangerous
// command floor beats allow rules. The rule stages are the steps of
// permission.Evaluate, each a stage of its own over one shared analysis
// of the call (see ruleStage). The stages themselves live in the
// packages below: permission (rules, modes, the shell floor), hook
// (lifecycle hooks), secret (redaction) and audit (sinks).
package policy

import (
	"context"
	"encoding/json"
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
	Validate func(name string, input json.RawMessage) (json.RawMessage, error)
	// Guardrails configure the loop guards: the guardrail stage and the
	// agent's circuit breaker. The zero value is on with the defaults.
	Guardrails Guardrails
	// Pipeline is the list of stages calls go through; nil means
	// DefaultPipeline(). Add a stage with DefaultPipeline().Insert.
	Pipeline  *Pipeline
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
	Stage   string // what decided: schema, hook, deny_rule, ask_rule, allow_rule, mode, floor, unresolved, protected, human, checkpoint, or a Decision.Stage of a stage of your own
	By      string // the rule or hook that decided, when one did
	// Stop is set when a hook asked the run to stop (continue:false).
	Stop       bool
	StopReason string
	// Notes are what stages added to the call's audit entry (State.Notes);
	// After writes them with the outcome.
	Notes map[string]string
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
	st := newState()
	*st = State{Policy: p, Call: c, Input: c.Input, Human: human, Checkpoint: checkpoint}
	v := p.pipeline().check(ctx, st)
	freeState(st)
	if !v.Allow {
		p.denied(ctx, c, v)
	}
	return v
}

// permissionCall is what the permission rules see of a call.
func (p *Policy) permissionCall(name string, input json.RawMessage, meta tool.Meta) permission.Call {
	return permission.Call{Tool: name, Input: input, Meta: meta, Workspace: p.Workspace, ExtraDirs: p.ExtraDirs, Protected: p.Protected}
}

// After finishes a call that ran, through the pipeline's finishers: it
// redacts the result, runs the post_tool_use (or post_tool_use_failure)
// hooks, adds their context to the result and audits the outcome. v is
// the call's verdict from Before.
func (p *Policy) After(ctx context.Context, c Call, v Verdict, res *tool.Result) {
	st := newState()
	*st = State{Policy: p, Call: c, Input: v.Input, Context: v.Context, Stop: v.Stop, StopReason: v.StopReason, Notes: v.Notes, Result: res,
		Decision: Decision{Verdict: permission.Allow, Reason: v.Reason, Stage: v.Stage, By: v.By}}
	p.pipeline().finish(ctx, st)
	freeState(st)
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
	e.Extra = auditExtra(v.Notes, v.Stage, v.By)
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
