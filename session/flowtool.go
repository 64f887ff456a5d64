package session

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/tool"
)

// FlowTools makes run_current_flow for a workflow (run.Service): the
// tool of the Flows builder's chat dock, which runs the workflow being
// edited, draft or published.
type FlowTools interface {
	CurrentFlowTool(ctx context.Context, workflowID string) (tool.Tool, error)
}

// flowTools is set once the run service exists (it is built after the
// session service, whose policy it uses).
type flowTools struct {
	mu sync.RWMutex
	f  FlowTools
}

// SetFlowTools lets sessions bound to a workflow (CreateOptions) offer
// run_current_flow; without it their turns fail to start, saying so.
func (rt *Service) SetFlowTools(f FlowTools) {
	rt.flows.mu.Lock()
	rt.flows.f = f
	rt.flows.mu.Unlock()
}

// CreateOptions are what a session may be created with besides its id.
type CreateOptions struct {
	// WorkflowTool binds the session to a workflow: its turns get the
	// server's tools plus run_current_flow, which runs that workflow.
	WorkflowTool string
}

// metaWorkflowTool is the session metadata key of the binding.
const metaWorkflowTool = "workflow_tool"

type workflowBinding struct {
	WorkflowID string `json:"workflow_id"`
}

// CreateSessionWith creates a session as CreateSession does, with opt
// stored in the same write (a crash never leaves a session half bound).
func (rt *Service) CreateSessionWith(ctx context.Context, id string, opt CreateOptions) (record.Session, error) {
	if id == "" {
		id = NewSessionID()
	}
	s := record.Session{ID: id}
	if opt.WorkflowTool != "" {
		b, err := json.Marshal(map[string]workflowBinding{metaWorkflowTool: {WorkflowID: opt.WorkflowTool}})
		if err != nil {
			return record.Session{}, err
		}
		s.Metadata = b
	}
	sess, err := rt.cfg.Store.CreateSession(ctx, s)
	if err == nil {
		rt.fireHook(hook.SessionStart, id, func(in *hook.Input) { in.Extra = map[string]any{"source": "startup"} })
	}
	return sess, err
}

// WorkflowToolOf returns the workflow a session is bound to, "" if none.
func WorkflowToolOf(s record.Session) string {
	if len(s.Metadata) == 0 {
		return ""
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(s.Metadata, &meta) != nil || len(meta[metaWorkflowTool]) == 0 {
		return ""
	}
	var b workflowBinding
	if json.Unmarshal(meta[metaWorkflowTool], &b) != nil {
		return ""
	}
	return b.WorkflowID
}

// flowToolTimeout bounds reading the binding and the workflow when a turn
// starts.
const flowToolTimeout = 10 * time.Second

// toolsFor returns the tools of l's next turn: the server's, plus
// run_current_flow when the session is bound to a workflow. The binding
// and the workflow's schema are read now, so that the model is offered
// the flow as it is stored when the turn starts.
func (rt *Service) toolsFor(l *live) (*tool.Registry, error) {
	ctx, cancel := context.WithTimeout(rt.shutdown, flowToolTimeout)
	defer cancel()
	s, err := rt.cfg.Store.GetSession(ctx, l.id)
	if err != nil {
		return nil, err
	}
	wf := WorkflowToolOf(s)
	if wf == "" {
		return rt.cfg.Tools, nil
	}
	rt.flows.mu.RLock()
	f := rt.flows.f
	rt.flows.mu.RUnlock()
	if f == nil {
		return nil, errNoFlowTools
	}
	t, err := f.CurrentFlowTool(ctx, wf)
	if err != nil {
		return nil, err
	}
	reg, _ := tool.NewRegistry()
	if rt.cfg.Tools != nil {
		reg = rt.cfg.Tools.Subset(func(tool.Tool, tool.Spec) bool { return true })
	}
	if err := reg.Replace(t); err != nil {
		return nil, err
	}
	return reg, nil
}

var errNoFlowTools = errors.New("the session is bound to a workflow, but this server has no runs to run it (run_current_flow)")
