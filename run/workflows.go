package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/plan"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/workflow"
)

// maxWorkflowName bounds a workflow's name, in characters.
const maxWorkflowName = 200

// WorkflowInput creates or changes a saved workflow. On update, fields
// left out (nil) keep their value.
type WorkflowInput struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	// InputSchema is the JSON Schema of the inputs ({"type":"object",...}).
	InputSchema json.RawMessage `json:"inputSchema"`
	// Plan is the compiled AgentPlan; Workflow is accepted as its alias.
	Plan     json.RawMessage `json:"plan"`
	Workflow json.RawMessage `json:"workflow"`
	// Canvas is the UI's graph, kept byte for byte.
	Canvas    json.RawMessage `json:"canvas"`
	Published *bool           `json:"published"`
	// Revision, when set on update, must be the stored revision (an
	// If-Match header does the same).
	Revision int `json:"revision"`
}

// WorkflowRunRequest runs a saved workflow.
type WorkflowRunRequest struct {
	Inputs json.RawMessage `json:"inputs"`
	Files  []FileGrant     `json:"files"`
	// Config is the run's config. A saved workflow runs without the plan
	// gate unless config.requireApproval is true; step gates apply.
	Config *RunConfig `json:"config"`
}

// NewWorkflowID is "wf_" and 12 hex digits (short enough for the tool
// name run_workflow_<id>).
func NewWorkflowID() string { return "wf_" + randHex(6) }

func (m *Service) workflows() (store.Workflows, error) {
	if m.cfg.Workflows == nil {
		return nil, errors.New("run: this server keeps no saved workflows (Config.Workflows is nil)")
	}
	return m.cfg.Workflows, nil
}

// apply copies in onto w (only the fields in sets).
func apply(w *record.Workflow, in WorkflowInput) {
	if in.Name != nil {
		w.Name = strings.TrimSpace(*in.Name)
	}
	if in.Description != nil {
		w.Description = *in.Description
	}
	if in.InputSchema != nil {
		w.InputSchema = nullToNil(in.InputSchema)
	}
	switch {
	case in.Plan != nil:
		w.Plan = in.Plan
	case in.Workflow != nil:
		w.Plan = in.Workflow
	}
	if in.Canvas != nil {
		w.Canvas = nullToNil(in.Canvas)
	}
	if in.Published != nil {
		w.Published = *in.Published
	}
}

func nullToNil(b json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(b); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return b
}

// checkWorkflow validates a workflow before it is saved: a name, an input
// schema that is an object schema and compiles, a plan that validates
// (known orchestratable tools, at most 64 steps, {{inputs.x}} only for
// declared inputs, "@file:x" only for declared inputs), and a canvas that
// is JSON.
func (m *Service) checkWorkflow(w record.Workflow) (plan.Plan, error) {
	if w.Name == "" {
		return plan.Plan{}, &record.InvalidError{Err: errors.New("name is required")}
	}
	if n := utf8.RuneCountInString(w.Name); n > maxWorkflowName {
		return plan.Plan{}, &record.InvalidError{Err: fmt.Errorf("name is %d characters long; the maximum is %d", n, maxWorkflowName)}
	}
	props, err := schemaInputs(w.InputSchema)
	if err != nil {
		return plan.Plan{}, err
	}
	if len(w.Canvas) > 0 && !json.Valid(w.Canvas) {
		return plan.Plan{}, &record.InvalidError{Err: errors.New("canvas is not valid JSON")}
	}
	p, err := decodePlan(w.Plan)
	if err != nil {
		return plan.Plan{}, err
	}
	names := make(map[string]bool, len(props.Properties))
	for n := range props.Properties {
		names[n] = true
	}
	env := plan.Env{Tool: m.lookupTool, Inputs: names, Files: names}
	if err := plan.Validate(p, env); err != nil {
		return plan.Plan{}, err
	}
	return p, nil
}

func decodePlan(raw json.RawMessage) (plan.Plan, error) {
	var p plan.Plan
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return p, &record.InvalidError{Err: errors.New("plan is required: the compiled AgentPlan {\"steps\": [...]}")}
	}
	if t[0] != '{' {
		return p, &record.InvalidError{Err: errors.New("plan must be a JSON object {\"steps\": [...]}")}
	}
	if err := json.Unmarshal(t, &p); err != nil {
		return p, &record.InvalidError{Err: fmt.Errorf("plan: %v", err)}
	}
	return p, nil
}

// CreateWorkflow validates and stores a new workflow (revision 1), and
// offers it as a tool when it is published.
func (m *Service) CreateWorkflow(ctx context.Context, in WorkflowInput) (Workflow, error) {
	st, err := m.workflows()
	if err != nil {
		return Workflow{}, err
	}
	w := record.Workflow{ID: NewWorkflowID()}
	apply(&w, in)
	if _, err := m.checkWorkflow(w); err != nil {
		return Workflow{}, err
	}
	m.wfMu.Lock()
	defer m.wfMu.Unlock()
	stored, err := st.CreateWorkflow(ctx, w)
	if err != nil {
		return Workflow{}, err
	}
	return stored, m.syncTool(stored)
}

// GetWorkflow returns a saved workflow.
func (m *Service) GetWorkflow(ctx context.Context, id string) (Workflow, error) {
	st, err := m.workflows()
	if err != nil {
		return Workflow{}, err
	}
	return st.GetWorkflow(ctx, id)
}

// ListWorkflows returns the saved workflows by name (only the published
// ones when publishedOnly).
func (m *Service) ListWorkflows(ctx context.Context, publishedOnly bool) ([]Workflow, error) {
	st, err := m.workflows()
	if err != nil {
		return nil, err
	}
	return st.ListWorkflows(ctx, publishedOnly)
}

// UpdateWorkflow changes a workflow (the fields in sets), validates the
// result and stores it as the next revision. With expectRevision (or
// in.Revision) > 0 it fails with ErrConflict unless that is the stored
// revision. Publishing or unpublishing takes effect in the tool registry
// at once.
func (m *Service) UpdateWorkflow(ctx context.Context, id string, in WorkflowInput, expectRevision int) (Workflow, error) {
	st, err := m.workflows()
	if err != nil {
		return Workflow{}, err
	}
	if expectRevision <= 0 {
		expectRevision = in.Revision
	}
	m.wfMu.Lock()
	defer m.wfMu.Unlock()
	cur, err := st.GetWorkflow(ctx, id)
	if err != nil {
		return Workflow{}, err
	}
	if expectRevision > 0 && cur.Revision != expectRevision {
		return Workflow{}, fmt.Errorf("workflow %q is at revision %d, not %d: %w", id, cur.Revision, expectRevision, ErrConflict)
	}
	w := cur
	apply(&w, in)
	if _, err := m.checkWorkflow(w); err != nil {
		return Workflow{}, err
	}
	stored, err := st.UpdateWorkflow(ctx, w, expectRevision)
	if err != nil {
		return Workflow{}, err
	}
	return stored, m.syncTool(stored)
}

// PublishWorkflow publishes (or unpublishes) a workflow: a published one
// is the tool run_workflow_<id> from now on.
func (m *Service) PublishWorkflow(ctx context.Context, id string, published bool, expectRevision int) (Workflow, error) {
	return m.UpdateWorkflow(ctx, id, WorkflowInput{Published: &published}, expectRevision)
}

// DeleteWorkflow deletes a workflow and withdraws its tool. Runs of it
// stay in the history.
func (m *Service) DeleteWorkflow(ctx context.Context, id string) error {
	st, err := m.workflows()
	if err != nil {
		return err
	}
	m.wfMu.Lock()
	defer m.wfMu.Unlock()
	if err := st.DeleteWorkflow(ctx, id); err != nil {
		return err
	}
	if m.cfg.Tools != nil {
		m.cfg.Tools.Remove(workflow.ToolName(id))
	}
	return nil
}

// CopyWorkflow duplicates a workflow (plan, schema, canvas byte for byte)
// as a new, unpublished one named name, or "<name> (copy)".
func (m *Service) CopyWorkflow(ctx context.Context, id, name string) (Workflow, error) {
	src, err := m.GetWorkflow(ctx, id)
	if err != nil {
		return Workflow{}, err
	}
	if name = strings.TrimSpace(name); name == "" {
		name = src.Name
		if rs := []rune(name); len(rs) > maxWorkflowName-7 {
			name = string(rs[:maxWorkflowName-7])
		}
		name += " (copy)"
	}
	published := false
	return m.CreateWorkflow(ctx, WorkflowInput{Name: &name, Description: &src.Description, InputSchema: src.InputSchema,
		Plan: src.Plan, Canvas: src.Canvas, Published: &published})
}

// syncTool makes the registry match a stored workflow: its tool while it
// is published, none otherwise.
func (m *Service) syncTool(w record.Workflow) error {
	if m.cfg.Tools == nil {
		return nil
	}
	if !w.Published {
		m.cfg.Tools.Remove(workflow.ToolName(w.ID))
		return nil
	}
	return m.registerTool(w)
}

func (m *Service) registerTool(w record.Workflow) error {
	if m.cfg.Tools == nil {
		return nil
	}
	ro := false
	if p, err := decodePlan(w.Plan); err == nil {
		ro, _ = p.ReadOnly(m.lookupTool)
	}
	t := workflow.New(workflow.Def{ID: w.ID, Name: w.Name, Description: w.Description, InputSchema: w.InputSchema,
		ReadOnly: ro, Timeout: m.cfg.WorkflowToolTimeout}, m)
	if err := m.cfg.Tools.Replace(t); err != nil {
		return fmt.Errorf("publishing workflow %q as a tool: %w", w.ID, err)
	}
	return nil
}

// RunWorkflow starts a run of a saved workflow (published or not) with
// the inputs bound and checked: every missing required input and every
// input of the wrong type is listed in one *InputsError; omitted optional
// inputs get their schema default, or null.
func (m *Service) RunWorkflow(ctx context.Context, id string, req WorkflowRunRequest) (Run, error) {
	w, err := m.GetWorkflow(ctx, id)
	if err != nil {
		return Run{}, err
	}
	p, err := m.prepareWorkflow(w, req.Inputs, req.Files, req.Config, nil)
	if err != nil {
		return Run{}, err
	}
	return m.launch(ctx, p)
}

// StartWorkflow starts a published workflow in the background (background
// tasks, schedules) and returns the run's id at once; follow it with
// WaitRun. A caller's policy in ctx (a model's tool call that submitted
// the task) is inherited as for a workflow called as a tool; otherwise
// the server's applies and questions wait on the run's events.
func (m *Service) StartWorkflow(ctx context.Context, id string, inputs json.RawMessage) (string, error) {
	p, err := m.prepareStart(ctx, id, inputs)
	if err != nil {
		return "", err
	}
	p.detached = true
	r, err := m.launch(context.WithoutCancel(ctx), p)
	if err != nil {
		return "", err
	}
	return r.ID, nil
}

// prepareStart is StartWorkflow up to the launch: every check it makes.
func (m *Service) prepareStart(ctx context.Context, id string, inputs json.RawMessage) (*prepared, error) {
	w, err := m.GetWorkflow(ctx, id)
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return nil, fmt.Errorf("workflow %q not found: %w", id, err)
		}
		return nil, err
	}
	if !w.Published {
		return nil, &record.InvalidError{Err: fmt.Errorf("workflow %q is not published: publish it to run it in the background", id)}
	}
	var caller *policy.Caller
	if c, ok := policy.CallerFrom(ctx); ok {
		caller = &c
	}
	return m.prepareWorkflow(w, inputs, nil, nil, caller)
}

// CheckWorkflow makes StartWorkflow's checks without starting anything:
// the workflow exists and is published, the inputs satisfy its input
// schema, and its plan is valid under this server's tools and settings.
// Schedules use it at creation. Its errors are typed (*record.InvalidError for an
// unknown or unpublished workflow, *InputsError, *ValidationError), so a
// front door answers 400.
func (m *Service) CheckWorkflow(ctx context.Context, id string, inputs json.RawMessage) error {
	_, err := m.prepareStart(ctx, id, inputs)
	if errors.Is(err, record.ErrNotFound) {
		// An unknown workflow makes the request wrong, not the schedule
		// or task it is for missing.
		return &record.InvalidError{Err: fmt.Errorf("workflow %q not found", id)}
	}
	return err
}

// callCancelGrace bounds how long a cancelled workflow tool call waits
// for its run to stop.
const callCancelGrace = 10 * time.Second

// CallWorkflow runs a published workflow synchronously for its tool,
// run_workflow_<id> (it implements workflow.Runner). The run is an
// ordinary one, in the history, but it inherits the caller's policy
// (policy.CallerFrom(ctx)): the caller approved this one call, so asks
// inside it count as granted and step gates open by themselves, while
// deny rules and the danger floor still refuse. With no caller in ctx the
// server's policy applies. Cancelling ctx cancels the run.
func (m *Service) CallWorkflow(ctx context.Context, id string, inputs json.RawMessage) (workflow.Outcome, error) {
	w, err := m.GetWorkflow(ctx, id)
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return workflow.Outcome{}, fmt.Errorf("workflow %q no longer exists", id)
		}
		return workflow.Outcome{}, err
	}
	if !w.Published {
		return workflow.Outcome{}, fmt.Errorf("workflow %q is no longer published", id)
	}
	return m.callWorkflow(ctx, w, inputs, nil)
}

// callWorkflow runs w to its end for a workflow tool, under the caller's
// policy (see CallWorkflow).
// started, when set, is told the run's id as soon as the run exists.
func (m *Service) callWorkflow(ctx context.Context, w record.Workflow, inputs json.RawMessage, started func(runID string)) (workflow.Outcome, error) {
	var caller *policy.Caller
	if c, ok := policy.CallerFrom(ctx); ok {
		caller = &c
	}
	p, err := m.prepareWorkflow(w, inputs, nil, nil, caller)
	if err != nil {
		return workflow.Outcome{}, err
	}
	r, err := m.launch(ctx, p)
	if err != nil {
		return workflow.Outcome{}, err
	}
	out := workflow.Outcome{RunID: r.ID}
	if started != nil {
		started(r.ID)
	}
	end, err := m.WaitRun(ctx, r.ID)
	if err != nil {
		m.CancelRun(r.ID)
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callCancelGrace)
		defer cancel()
		if end, err = m.WaitRun(wctx, r.ID); err != nil {
			out.Status, out.Error = record.RunCancelled, "the call was cancelled"
			return out, nil
		}
	}
	out.Status, out.Error = end.Status, end.Error
	if end.Status == record.RunCompleted {
		if out.Result, err = m.RunResult(context.WithoutCancel(ctx), r.ID); err != nil {
			return out, err
		}
	}
	return out, nil
}

// prepareWorkflow binds a workflow's inputs and files and validates its
// plan for a run.
func (m *Service) prepareWorkflow(w record.Workflow, rawInputs json.RawMessage, grants []FileGrant, cfg *RunConfig, caller *policy.Caller) (*prepared, error) {
	schema, err := schemaInputs(w.InputSchema)
	if err != nil {
		return nil, err
	}
	inputs, err := bindInputs(schema, w.InputSchema, rawInputs)
	if err != nil {
		return nil, err
	}
	grants = append([]FileGrant(nil), grants...)
	for _, name := range schema.sharedDirs() {
		if !slices.ContainsFunc(grants, func(g FileGrant) bool { return g.Name == name }) {
			grants = append(grants, FileGrant{Name: name, CreateSharedDirectory: true})
		}
	}
	if err := checkGrants(grants); err != nil {
		return nil, err
	}
	c := RunConfig{}
	if cfg != nil {
		c = *cfg
	}
	if c.RequireApproval == nil || !*c.RequireApproval {
		c.AutoApprove = true
	}
	if caller == nil {
		if err := m.checkConfig(&c); err != nil {
			return nil, err
		}
	}
	pl, err := decodePlan(w.Plan)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	env := m.runEnv(names, grants)
	if err := m.checkPlan(pl, env, c); err != nil {
		return nil, err
	}
	if err := checkLeftOutInputs(pl, inputs); err != nil {
		return nil, err
	}
	norm := pl.Normalize()
	p := &prepared{cfg: c, plan: &norm, grants: grants, inputs: inputs, schema: w.InputSchema, env: env,
		approve: !c.autoApprove(), caller: caller}
	p.run = record.Run{Goal: workflowGoal(w, inputs), WorkflowID: w.ID}
	return p, nil
}

// checkLeftOutInputs refuses, before anything runs, inputs that were left
// out (bound to null) but that a step uses where they cannot simply be left
// out: inside text or with a path (plan.Render fails there; alone,
// "{{inputs.x}}" drops its argument).
func checkLeftOutInputs(pl plan.Plan, inputs map[string]json.RawMessage) error {
	var probs []string
	for i, s := range pl.Steps {
		refs, err := plan.Refs(s.Args)
		if err != nil {
			continue // checkPlan has accepted the plan: unreachable
		}
		for _, r := range refs {
			if r.Kind != plan.KindInput || (r.Whole && r.Path == "") {
				continue
			}
			if v, ok := inputs[r.Target]; ok && string(bytes.TrimSpace(v)) == "null" {
				probs = append(probs, fmt.Sprintf("input %q was not given, but step %d (%q) uses it in %s at %s: give it, give it a default, or use it only as a whole value (\"{{inputs.%s}}\"), which is left out when it is not given",
					r.Target, i, pl.ID(i), r.Text, r.Pointer, r.Target))
			}
		}
	}
	if len(probs) > 0 {
		return &InputsError{Problems: probs}
	}
	return nil
}

// workflowGoal is a workflow run's goal: its description with the inputs
// rendered in ({{inputs.x}}), or its name.
func workflowGoal(w record.Workflow, inputs map[string]json.RawMessage) string {
	d := strings.TrimSpace(w.Description)
	if d == "" {
		return "Run workflow " + w.Name
	}
	out, err := plan.Render(mustJSON(d), plan.Scope{Inputs: inputs})
	var s string
	if err != nil || json.Unmarshal(out, &s) != nil {
		return d
	}
	return s
}

// inputSchema is what the runtime reads of a workflow's input contract.
type inputSchema struct {
	Type       json.RawMessage         `json:"type"`
	Properties map[string]propertySpec `json:"properties"`
	Required   []string                `json:"required"`
}

type propertySpec struct {
	Type    json.RawMessage `json:"type"`
	Default json.RawMessage `json:"default"`
	// Auto "shared-directory" (seed 001's x-fengyu-auto) grants a fresh
	// shared directory under the input's name without the caller asking.
	Auto      string `json:"x-weft-auto"`
	AutoSeed1 string `json:"x-fengyu-auto"`
}

func (s inputSchema) sharedDirs() []string {
	var out []string
	for n, p := range s.Properties {
		if p.Auto == "shared-directory" || p.AutoSeed1 == "shared-directory" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// schemaInputs reads and checks an input schema: empty, or a JSON object
// schema of type object that compiles.
func schemaInputs(raw json.RawMessage) (inputSchema, error) {
	var s inputSchema
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return s, nil
	}
	if t[0] != '{' || json.Unmarshal(t, &s) != nil {
		return s, &record.InvalidError{Err: errors.New("inputSchema must be a JSON Schema object")}
	}
	if len(s.Type) > 0 && string(s.Type) != `"object"` {
		return s, &record.InvalidError{Err: fmt.Errorf("inputSchema must have type \"object\", not %s", s.Type)}
	}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			return s, &record.InvalidError{Err: fmt.Errorf("inputSchema requires %q but does not declare it in properties", r)}
		}
	}
	err := tool.ValidateInput(tool.Spec{Name: "inputs", InputSchema: t}, json.RawMessage("{}"))
	var ie *tool.InputError
	if err != nil && !errors.As(err, &ie) {
		return s, &record.InvalidError{Err: fmt.Errorf("inputSchema does not compile: %v", err)}
	}
	return s, nil
}

// bindInputs checks a run's inputs against the workflow's schema and fills
// in omitted optional inputs (their default, or null).
func bindInputs(s inputSchema, rawSchema, raw json.RawMessage) (map[string]json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	given := map[string]json.RawMessage{}
	if len(t) > 0 && string(t) != "null" {
		if t[0] != '{' || json.Unmarshal(t, &given) != nil {
			return nil, &InputsError{Problems: []string{"inputs must be a JSON object"}}
		}
	}
	var probs, missing []string
	for _, name := range s.Required {
		if v, ok := given[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			missing = append(missing, name)
			probs = append(probs, fmt.Sprintf("missing required input %q", name))
		}
	}
	names := make([]string, 0, len(given))
	for n := range given {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		ps, ok := s.Properties[n]
		if !ok || string(bytes.TrimSpace(given[n])) == "null" {
			continue
		}
		if want := typeNames(ps.Type); len(want) > 0 {
			got := jsonType(given[n])
			if !typeMatches(want, got) {
				probs = append(probs, fmt.Sprintf("input %q must be %s, not %s", n, strings.Join(want, " or "), got))
			}
		}
	}
	if len(probs) == 0 && len(bytes.TrimSpace(rawSchema)) > 0 {
		// The rest of JSON Schema (enum, minimum, patterns, ...).
		err := tool.ValidateInput(tool.Spec{Name: "inputs", InputSchema: rawSchema}, mustJSON(given))
		var ie *tool.InputError
		if errors.As(err, &ie) {
			for _, p := range ie.Problems {
				where := "inputs"
				if p.Path != "" {
					where = "input " + p.Path
				}
				probs = append(probs, where+": "+p.Message)
			}
		}
	}
	if len(probs) > 0 {
		return nil, &InputsError{Problems: probs, Missing: missing}
	}
	out := make(map[string]json.RawMessage, len(s.Properties)+len(given))
	for n, v := range given {
		out[n] = v
	}
	for n, ps := range s.Properties {
		if _, ok := out[n]; !ok {
			if len(bytes.TrimSpace(ps.Default)) > 0 {
				out[n] = ps.Default
			} else {
				out[n] = json.RawMessage("null")
			}
		}
	}
	return out, nil
}

// typeNames reads a schema's "type": a name or a list of names.
func typeNames(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil && one != "" {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

// jsonType names a JSON value's type as JSON Schema does ("integer" for a
// number with no fraction).
func jsonType(v json.RawMessage) string {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return "null"
	}
	switch t[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	var n json.Number
	if json.Unmarshal(t, &n) == nil {
		if _, err := n.Int64(); err == nil {
			return "integer"
		}
		var f float64
		if json.Unmarshal(t, &f) == nil && f == float64(int64(f)) {
			return "integer"
		}
	}
	return "number"
}

func typeMatches(want []string, got string) bool {
	for _, w := range want {
		if w == got || (w == "number" && got == "integer") {
			return true
		}
	}
	return false
}
