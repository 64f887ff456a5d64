package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/tool"
)

// object is a JSON object argument (workflow inputs) that keeps numbers
// exactly as written; its generated schema is an object with any
// properties.
type object map[string]any

// UnmarshalJSON decodes an object, numbers as json.Number.
func (o *object) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*o = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*o = m
	return nil
}

type scheduleInput struct {
	WorkflowID      string `json:"workflowId" jsonschema:"id of a published workflow"`
	Inputs          object `json:"inputs,omitempty" jsonschema:"the workflow's inputs, matching its input schema"`
	IntervalSeconds int    `json:"intervalSeconds" jsonschema:"seconds between runs, or the delay of a one-shot schedule"`
	Recurring       *bool  `json:"recurring,omitempty" jsonschema:"true (the default): run every interval until the schedule expires; false: run once, after the interval"`
	RunImmediately  bool   `json:"runImmediately,omitempty" jsonschema:"also run once right now"`
}

// Tool returns the task_schedule tool: it creates a schedule, as Create.
func (s *Scheduler) Tool() tool.Tool {
	desc := fmt.Sprintf("Schedules a published workflow to run in the background every intervalSeconds (at least %d), "+
		"or once after a delay with recurring: false. Schedules expire %s after creation; at most %d can be active. "+
		"Each run is a background task: follow it with task_output or task_wait using the lastTaskId shown by the schedule.",
		int(s.opt.MinInterval/time.Second), ttlText(s.opt.TTL), s.opt.MaxActive)
	return tool.Func("task_schedule", desc,
		tool.Meta{Effect: tool.EffectExecute, Permission: tool.ClassGeneric},
		s.scheduleTool)
}

func (s *Scheduler) scheduleTool(ctx context.Context, in scheduleInput, _ *tool.Call) (tool.Result, error) {
	req := Request{WorkflowID: in.WorkflowID, IntervalSeconds: in.IntervalSeconds,
		Recurring: in.Recurring, RunImmediately: in.RunImmediately}
	if in.Inputs != nil {
		raw, err := json.Marshal(map[string]any(in.Inputs))
		if err != nil {
			return tool.Errorf("task_schedule: inputs: %v", err), nil
		}
		req.Inputs = raw
	}
	sch, err := s.Create(ctx, req)
	if err != nil {
		return tool.Errorf("task_schedule: %v", err), nil
	}
	body, _ := json.MarshalIndent(sch, "", "  ")
	return tool.Result{
		Content: tool.Text(describe(sch) + "\n" + string(body)).Content,
		Data:    map[string]any{"schedule": sch},
	}, nil
}

// describe says in a sentence what a new schedule will do.
func describe(sch record.Schedule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Created schedule %s for workflow %s", sch.ID, sch.WorkflowID)
	switch {
	case sch.Recurring:
		fmt.Fprintf(&b, ": every %d s until %s; next run at %s.", sch.IntervalSeconds,
			sch.ExpiresAt.UTC().Format(time.RFC3339), sch.NextRunAt.UTC().Format(time.RFC3339))
	case sch.Active:
		fmt.Fprintf(&b, ": once, at %s.", sch.NextRunAt.UTC().Format(time.RFC3339))
	default:
		b.WriteString(": once, now.")
	}
	if sch.LastTaskID != "" {
		fmt.Fprintf(&b, " First run started as task %s.", sch.LastTaskID)
	}
	return b.String()
}

func ttlText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		days := int(d / (24 * time.Hour))
		if days == 1 {
			return "1 day"
		}
		return fmt.Sprintf("%d days", days)
	}
	return d.String()
}
