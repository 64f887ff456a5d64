package checkpoint

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

// StageName names the stage and the finisher in a policy pipeline.
const StageName = "workspace_checkpoint"

// The audit notes of a call the stage looked at (policy.State.Notes, in
// the audit entry's extra): the checkpoint taken before it, or why none
// could be.
const (
	NoteCheckpoint      = "checkpoint"
	NoteCheckpointError = "checkpoint_error"
)

// Stage is the policy pipeline's workspace checkpoint: before a call
// that may change files runs (Write, Edit, any file tool that is not
// read-only, a tool whose effect is "write", a Bash command the shell
// analysis does not know to be read-only), it snapshots the policy's
// workspace; after the call, its Finish records how the call left it. It
// goes last among the stages (Install), so only a call that will run is
// snapshotted, and last among the finishers, so that what post_tool_use
// hooks change (a formatter) counts as the call's.
//
// A snapshot that fails does not stop the call: it is logged and noted
// in the audit entry (NoteCheckpointError), unless Required.
type Stage struct {
	Store *Store
	// Session is the session of calls whose policy has no SessionID (weft
	// run and weft chat); "" is DefaultSession.
	Session string
	// Required refuses a call whose checkpoint could not be taken.
	Required bool

	mu      sync.Mutex
	stalled map[string]bool // workspaces whose snapshot timed out: not tried again
}

// Install returns pl with s as its last stage and last finisher.
func Install(pl *policy.Pipeline, s *Stage) (*policy.Pipeline, error) {
	if pl == nil {
		pl = policy.DefaultPipeline()
	}
	pl, err := pl.Insert("", StageName, policy.StageFunc(s.Check))
	if err != nil {
		return nil, err
	}
	return pl.InsertFinisher("", StageName, policy.FinisherFunc(s.Finish))
}

// Changes reports whether the call st carries may change files in the
// workspace, as the stage judges it.
func Changes(st *policy.State) bool {
	spec := st.Call.Spec
	if spec.ReadOnly {
		return false
	}
	if spec.Permission == tool.ClassBash || st.Call.Tool == "Bash" {
		a, ok := st.Evaluation().Shell()
		return !ok || a.MayChangeFiles()
	}
	return spec.Permission == tool.ClassFile || spec.Effect == tool.EffectWrite
}

func (s *Stage) session(st *policy.State) string {
	if st.Policy.SessionID != "" {
		return st.Policy.SessionID
	}
	return s.Session
}

// Check snapshots the workspace before an allowed call that may change
// it.
func (s *Stage) Check(ctx context.Context, st *policy.State) policy.Decision {
	if s.Store == nil || st.Decision.Verdict != permission.Allow || st.Policy.Workspace == "" || !Changes(st) {
		return policy.Decision{}
	}
	if s.isStalled(st.Policy.Workspace) {
		return s.failed(st, errStalled)
	}
	ws, err := s.Store.Workspace(st.Policy.Workspace)
	if err != nil {
		return s.failed(st, err)
	}
	cp, err := ws.Snapshot(ctx, Meta{Session: s.session(st), Turn: st.Call.Turn, Tool: st.Call.Tool, ToolCallID: st.Call.ToolUseID})
	if err != nil {
		if (errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) || errors.Is(err, ErrTooManyFiles) {
			s.stall(st.Policy.Workspace)
		}
		return s.failed(st, err)
	}
	note(st, NoteCheckpoint, cp.ID)
	return policy.Decision{}
}

var errStalled = errors.New("checkpoint: an earlier snapshot of this workspace timed out or found too many files; snapshots are off for it until weft restarts")

func (s *Stage) failed(st *policy.State, err error) policy.Decision {
	logger(st.Policy).Warn("workspace checkpoint failed", "tool", st.Call.Tool, "workspace", st.Policy.Workspace, "error", err)
	note(st, NoteCheckpointError, err.Error())
	if s.Required {
		return policy.Decision{Verdict: permission.Deny, Reason: "no checkpoint of the workspace could be taken before this change: " + err.Error(), Stage: StageName}
	}
	return policy.Decision{}
}

func logger(p *policy.Policy) *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func note(st *policy.State, k, v string) {
	if st.Notes == nil {
		st.Notes = map[string]string{}
	}
	st.Notes[k] = v
}

func (s *Stage) isStalled(ws string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled[ws]
}

func (s *Stage) stall(ws string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled == nil {
		s.stalled = map[string]bool{}
	}
	s.stalled[ws] = true
}

// Finish records how the call left the workspace, when Check took (or
// reused) a checkpoint before it.
func (s *Stage) Finish(ctx context.Context, st *policy.State) {
	id := st.Notes[NoteCheckpoint]
	if s.Store == nil || id == "" {
		return
	}
	ws, err := s.Store.Workspace(st.Policy.Workspace)
	if err == nil {
		// Also after a cancelled call: what it changed before it stopped
		// is the agent's, and without this record a restore would take
		// the person's next edits for the agent's too.
		err = ws.Settle(context.WithoutCancel(ctx), s.session(st), id, st.Call.ToolUseID)
	}
	if err != nil {
		logger(st.Policy).Warn("workspace checkpoint: recording the call's changes failed", "tool", st.Call.Tool, "checkpoint", id, "error", err)
	}
}
