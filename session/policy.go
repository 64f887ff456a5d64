package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/internal/approval"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/tool"
)

// Permissions is the wire shape of a permission posture: Claude Code's
// "permissions" settings object.
type Permissions = policy.Permissions

// sessionPolicy is a session's own permissions, layered on the server's.
type sessionPolicy struct {
	raw   Permissions
	rules permission.RuleSet
	mode  permission.Mode
}

// policyFor is the effective policy of one session's turn: the server's,
// plus the session's rules (a union, so a server deny still wins) and its
// mode when it sets one.
func (rt *Service) policyFor(l *live) *policy.Policy {
	p := rt.ServerPolicy()
	p.SessionID = l.id
	l.mu.Lock()
	o := l.override
	l.mu.Unlock()
	if o != nil {
		p.Rules = p.Rules.Merge(o.rules)
		if o.mode != "" {
			p.Mode = o.mode
		}
		p.ExtraDirs = append(append([]string(nil), p.ExtraDirs...), o.raw.AdditionalDirectories...)
	}
	return p
}

// loadOverride reads the session's permissions from its metadata once.
func (rt *Service) loadOverride(ctx context.Context, l *live) error {
	l.mu.Lock()
	done := l.override != nil
	l.mu.Unlock()
	if done {
		return nil
	}
	s, err := rt.cfg.Store.GetSession(ctx, l.id)
	if err != nil {
		return err
	}
	o := &sessionPolicy{}
	var meta map[string]json.RawMessage
	if len(s.Metadata) > 0 && json.Unmarshal(s.Metadata, &meta) == nil && len(meta["permissions"]) > 0 {
		if err := json.Unmarshal(meta["permissions"], &o.raw); err != nil {
			return fmt.Errorf("session %s: stored permissions: %w", l.id, err)
		}
		if o.rules, o.mode, err = policy.ParsePermissions("session "+l.id, o.raw); err != nil {
			return err
		}
	}
	l.mu.Lock()
	if l.override == nil {
		l.override = o
	}
	l.mu.Unlock()
	return nil
}

// ServerPermissions returns the server-wide permissions.
func (rt *Service) ServerPermissions() Permissions {
	p := rt.ServerPolicy()
	return policy.Render(p.Rules, p.Mode, p.ExtraDirs)
}

// SetServerPermissions replaces the server-wide permissions (rules, mode,
// directories); sessions see them from their next tool call. It does not
// persist across restarts: the settings files are the durable source.
func (rt *Service) SetServerPermissions(ctx context.Context, p Permissions) error {
	rules, mode, err := policy.ParsePermissions("permissions", p)
	if err != nil {
		return &record.InvalidError{Err: err}
	}
	if mode == "" {
		mode = permission.ModeDefault
	}
	if mode == permission.ModeBypass && !rt.cfg.AllowBypass {
		return fmt.Errorf("%w: bypass mode must be enabled when the server starts (--permission-mode bypass)", ErrForbidden)
	}
	rt.polMu.Lock()
	next := *rt.base
	next.Rules, next.Mode, next.ExtraDirs = rules, mode, p.AdditionalDirectories
	rt.base = &next
	rt.polMu.Unlock()
	rt.fireHook(hook.ConfigChange, "", func(in *hook.Input) { in.Extra = map[string]any{"source": "server_permissions"} })
	return nil
}

// SessionPermissions returns a session's own permissions (empty when it
// has none) and the effective mode.
func (rt *Service) SessionPermissions(ctx context.Context, id string) (Permissions, error) {
	// Known sessions only: no in-memory state for ids that do not exist.
	if _, err := rt.cfg.Store.GetSession(ctx, id); err != nil {
		return Permissions{}, err
	}
	l, err := rt.session(id)
	if err != nil {
		return Permissions{}, err
	}
	defer rt.release(l)
	if err := rt.loadOverride(ctx, l); err != nil {
		return Permissions{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.override.raw, nil
}

// SetSessionPermissions replaces a session's own permissions, stored with
// the session so they survive a restart. Its rules add to the server's
// (a server deny still wins); its mode replaces the server's.
func (rt *Service) SetSessionPermissions(ctx context.Context, id string, p Permissions) error {
	rules, mode, err := policy.ParsePermissions("permissions", p)
	if err != nil {
		return &record.InvalidError{Err: err}
	}
	if mode == permission.ModeBypass && !rt.cfg.AllowBypass {
		return fmt.Errorf("%w: bypass mode must be enabled when the server starts (--permission-mode bypass)", ErrForbidden)
	}
	rt.metaMu.Lock()
	defer rt.metaMu.Unlock()
	s, err := rt.cfg.Store.GetSession(ctx, id)
	if err != nil {
		return err
	}
	meta := map[string]json.RawMessage{}
	if len(s.Metadata) > 0 {
		_ = json.Unmarshal(s.Metadata, &meta)
	}
	raw, _ := json.Marshal(p)
	meta["permissions"] = raw
	s.Metadata, _ = json.Marshal(meta)
	if err := rt.cfg.Store.UpdateSession(ctx, s); err != nil {
		return err
	}
	l, err := rt.session(id)
	if err != nil {
		return err
	}
	defer rt.release(l)
	l.mu.Lock()
	l.override = &sessionPolicy{raw: p, rules: rules, mode: mode}
	l.mu.Unlock()
	rt.fireHook(hook.ConfigChange, id, func(in *hook.Input) { in.Extra = map[string]any{"source": "session_permissions"} })
	return nil
}

// ToolSpecs lists the tools sessions get, as they are now.
func (rt *Service) ToolSpecs() []tool.Spec {
	if rt.cfg.Tools == nil {
		return nil
	}
	return rt.cfg.Tools.Specs()
}

// Audit reads the audit trail.
func (rt *Service) Audit(ctx context.Context, q record.AuditQuery) ([]record.AuditEntry, error) {
	if rt.cfg.Audits == nil {
		return nil, errors.New("this server keeps no audit trail in its database")
	}
	return rt.cfg.Audits.ListAudit(ctx, q)
}

// PluginInfo describes a plugin that contributes hooks.
type PluginInfo = hook.PluginInfo

// Plugins lists the plugins that contribute hooks, with their trust.
func (rt *Service) Plugins() []PluginInfo {
	if rt.hooks == nil {
		return nil
	}
	return rt.hooks.Plugins()
}

// TrustPlugin lets a plugin's hooks run (from the next call on), or stops
// them again.
func (rt *Service) TrustPlugin(id string, trust bool) error {
	m := rt.hooks
	if m == nil {
		return ErrNotFound
	}
	known := false
	for _, p := range m.Plugins() {
		if p.ID == id {
			known = true
		}
	}
	if !known {
		return ErrNotFound
	}
	if trust {
		m.Trust(id)
	} else {
		m.Untrust(id)
	}
	rt.fireHook(hook.ConfigChange, "", func(in *hook.Input) {
		in.Extra = map[string]any{"source": "plugin_trust", "plugin": id, "trusted": trust}
	})
	return nil
}

// fireHook runs observer hooks of the runtime's own events in the
// background: they never hold up a request.
func (rt *Service) fireHook(ev hook.Event, sessionID string, fill func(*hook.Input)) {
	m := rt.hooks
	if m == nil || !m.Has(ev) {
		return
	}
	in := rt.ServerPolicy().HookInput(ev)
	in.SessionID = sessionID
	if fill != nil {
		fill(&in)
	}
	m.Go(rt.shutdown, in) // bounded; the manager's Close waits for it
}

// redactor is the event logs' redaction (eventlog.Options.Redact): the
// one place every event of a session or a run passes before any reader or
// the store gets it. nil without secrets.
func redactor(sec *secret.Set) func([]byte) []byte {
	if sec == nil {
		return nil
	}
	return sec.RedactJSON
}

func (rt *Service) redact(s string) string {
	if sec := rt.secrets; sec != nil && sec.Len() > 0 {
		return sec.Redact(s)
	}
	return s
}

// redactMessages replaces secret values in every field of messages (text,
// tool inputs, tool results, at any depth) before they are stored.
func (rt *Service) redactMessages(msgs []llm.Message) []llm.Message {
	return secret.Redacted(rt.secrets, msgs)
}

// approver is the human of a session's policy: it asks through a
// permission_request event and waits for Answer.
func (rt *Service) approver(l *live) agent.ApproveFunc {
	return func(ctx context.Context, req agent.ApprovalRequest) agent.Decision {
		input := json.RawMessage(req.Input)
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		msg := fmt.Sprintf("%s requests permission to run", req.ToolName)
		rt.fireHook(hook.Notification, l.id, func(in *hook.Input) {
			in.Message, in.Level, in.ToolName = msg, "info", req.ToolName
		})
		return rt.ask(ctx, l, event.PermissionRequest, func(id string) any {
			return event.PermissionRequestData{ID: id, ToolName: req.ToolName, Input: input, ToolUse: req.ID, Message: msg, Reason: req.Reason, Origin: origin(req.Origin)}
		})
	}
}

// checkpointer confirms irreversible calls through a checkpoint event.
func (rt *Service) checkpointer(l *live) policy.Checkpoint {
	return func(ctx context.Context, req policy.CheckpointRequest) bool {
		d := rt.ask(ctx, l, event.Checkpoint, func(id string) any {
			return event.CheckpointData{ID: id, ToolCallID: req.ToolCallID, ToolName: req.ToolName, Input: req.Input, Message: req.Message}
		})
		return d.Allow
	}
}

// ask opens a question (permission_request, checkpoint) in the approval
// broker, records the event that announces it and waits for its answer,
// the permission timeout or the turn's end. The question is open before
// the event is visible, so that an answer sent on seeing it finds it.
func (rt *Service) ask(ctx context.Context, l *live, typ string, payload func(id string) any) agent.Decision {
	kind := approval.Permission
	if typ == event.Checkpoint {
		kind = approval.Checkpoint
	}
	q, err := rt.approvals.Open(l.scope, kind, "")
	if err != nil {
		return agent.Deny("the request could not be recorded")
	}
	data := payload(q.ID)
	l.mu.Lock()
	w := l.writer
	l.mu.Unlock()
	if w != nil {
		// Through the turn's writer, after the events before it, and
		// visible before anyone is asked to answer.
		w.sync(typ, data)
	} else if _, err := rt.appendTo(context.WithoutCancel(ctx), l, typ, data); err != nil {
		q.Close()
		return agent.Deny("the request could not be recorded")
	}
	a, err := q.Wait(ctx, rt.cfg.PermissionTimeout)
	switch {
	case err == nil:
		return agent.Decision{Allow: a.Allow, Reason: a.Reason}
	case errors.Is(err, approval.ErrTimeout):
		return agent.Deny(fmt.Sprintf("no answer to the %s within %s", strings.ReplaceAll(typ, "_", " "), rt.cfg.PermissionTimeout))
	default:
		return agent.Deny("the turn was cancelled")
	}
}

// FireHook fires the server's hooks for ev, as the session service does
// for its own events (background tasks fire task_created and
// task_completed through it: run.BackgroundConfig.Hooks).
func (rt *Service) FireHook(ev hook.Event, sessionID string, fill func(*hook.Input)) {
	rt.fireHook(ev, sessionID, fill)
}

// Secrets are the server policy's secrets (no API call replaces them),
// for the background tasks' output.
func (rt *Service) Secrets() *secret.Set { return rt.secrets }

// origin is the event form of a sub-agent's origin (nil for the session's
// own calls).
func origin(o *agent.Origin) *event.Origin {
	if o == nil {
		return nil
	}
	return &event.Origin{SubagentID: o.SubagentID, ToolUseID: o.ToolUseID, Type: o.Type}
}
