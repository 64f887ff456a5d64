package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// workflowFunc is a workflow of the in-memory runner: it gets the run's
// context (cancelled by CancelRun) and the inputs.
type workflowFunc func(ctx context.Context, inputs json.RawMessage) (status string, result json.RawMessage, errMsg string)

// memRunner is a small, real WorkflowRunner: each run is a goroutine
// running one of its workflow functions.
type memRunner struct {
	workflows map[string]workflowFunc

	mu        sync.Mutex
	n         int
	runs      map[string]*memRun
	cancelled []string
}

type memRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	status string
	result json.RawMessage
	errMsg string
}

func newMemRunner(workflows map[string]workflowFunc) *memRunner {
	return &memRunner{workflows: workflows, runs: map[string]*memRun{}}
}

func (m *memRunner) StartWorkflow(_ context.Context, workflowID string, inputs json.RawMessage) (string, error) {
	fn := m.workflows[workflowID]
	if fn == nil {
		return "", fmt.Errorf("workflow %q not found", workflowID)
	}
	ctx, cancel := context.WithCancel(context.Background())
	run := &memRun{cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.n++
	id := fmt.Sprintf("run_%d", m.n)
	m.runs[id] = run
	m.mu.Unlock()
	go func() {
		defer cancel()
		st, res, msg := fn(ctx, inputs)
		m.mu.Lock()
		run.status, run.result, run.errMsg = st, res, msg
		m.mu.Unlock()
		close(run.done)
	}()
	return id, nil
}

func (m *memRunner) WaitRun(ctx context.Context, runID string) (string, json.RawMessage, string, error) {
	m.mu.Lock()
	run := m.runs[runID]
	m.mu.Unlock()
	if run == nil {
		return "", nil, "", errors.New("no such run")
	}
	select {
	case <-run.done:
	case <-ctx.Done():
		return "", nil, "", ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return run.status, run.result, run.errMsg, nil
}

func (m *memRunner) CancelRun(runID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	run := m.runs[runID]
	if run == nil {
		return false
	}
	m.cancelled = append(m.cancelled, runID)
	run.cancel()
	return true
}

func (m *memRunner) cancelledRuns() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.cancelled...)
}

// testWorkflows: echo returns its inputs; fail fails; interrupted ends
// interrupted; gate waits for its release channel or a cancel; stubborn
// ignores cancels until released.
func testWorkflows(release, stubborn <-chan struct{}) map[string]workflowFunc {
	return map[string]workflowFunc{
		"echo": func(_ context.Context, in json.RawMessage) (string, json.RawMessage, string) {
			return "completed", in, ""
		},
		"fail": func(context.Context, json.RawMessage) (string, json.RawMessage, string) {
			return "failed", nil, "step 2 (fetch): connection refused"
		},
		"interrupted": func(context.Context, json.RawMessage) (string, json.RawMessage, string) {
			return "interrupted", nil, ""
		},
		"gate": func(ctx context.Context, _ json.RawMessage) (string, json.RawMessage, string) {
			select {
			case <-release:
				return "completed", json.RawMessage(`"released"`), ""
			case <-ctx.Done():
				return "cancelled", nil, "cancelled by request"
			}
		},
		"stubborn": func(context.Context, json.RawMessage) (string, json.RawMessage, string) {
			<-stubborn
			return "completed", nil, ""
		},
	}
}
