package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weft-run/weft/record"
)

// checkWorkflow validates what CreateWorkflow and UpdateWorkflow store.
// The JSON fields are validated and then kept as the very bytes given: the
// canvas must come back exactly as the UI sent it.
func checkWorkflow(w record.Workflow) error {
	if w.Name == "" {
		return fmt.Errorf("memstore: workflow %q: empty name", w.ID)
	}
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"input schema", w.InputSchema}, {"plan", w.Plan}, {"canvas", w.Canvas}} {
		if err := checkJSON(fmt.Sprintf("workflow %q %s", w.ID, f.name), f.raw); err != nil {
			return err
		}
	}
	return nil
}

func copyWorkflow(w record.Workflow) record.Workflow {
	w.InputSchema, w.Plan, w.Canvas = cloneRaw(w.InputSchema), cloneRaw(w.Plan), cloneRaw(w.Canvas)
	return w
}

// CreateWorkflow implements store.Workflows.
func (s *Store) CreateWorkflow(ctx context.Context, w record.Workflow) (record.Workflow, error) {
	if err := requireID("create workflow", w.ID); err != nil {
		return record.Workflow{}, err
	}
	if err := checkWorkflow(w); err != nil {
		return record.Workflow{}, err
	}
	var err error
	if w.CreatedAt.IsZero() {
		w.CreatedAt = now()
	}
	if w.UpdatedAt.IsZero() {
		w.UpdatedAt = w.CreatedAt
	}
	if w.CreatedAt, err = stamp("workflow created_at", w.CreatedAt); err != nil {
		return record.Workflow{}, err
	}
	if w.UpdatedAt, err = stamp("workflow updated_at", w.UpdatedAt); err != nil {
		return record.Workflow{}, err
	}
	w = copyWorkflow(w)
	w.Revision = 1
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return record.Workflow{}, err
	}
	defer unlock()
	if _, ok := s.workflows[w.ID]; ok {
		return record.Workflow{}, exists("workflow", w.ID)
	}
	s.workflows[w.ID] = w
	return copyWorkflow(w), nil
}

// GetWorkflow implements store.Workflows.
func (s *Store) GetWorkflow(ctx context.Context, id string) (record.Workflow, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return record.Workflow{}, err
	}
	defer unlock()
	w, ok := s.workflows[id]
	if !ok {
		return record.Workflow{}, notFound("workflow", id)
	}
	return copyWorkflow(w), nil
}

// UpdateWorkflow implements store.Workflows: the revision check and the
// update happen under one lock, so of two updates expecting the same
// revision exactly one wins.
func (s *Store) UpdateWorkflow(ctx context.Context, w record.Workflow, expectRevision int) (record.Workflow, error) {
	if err := checkWorkflow(w); err != nil {
		return record.Workflow{}, err
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return record.Workflow{}, err
	}
	defer unlock()
	cur, ok := s.workflows[w.ID]
	if !ok {
		return record.Workflow{}, notFound("workflow", w.ID)
	}
	if expectRevision > 0 && cur.Revision != expectRevision {
		return record.Workflow{}, fmt.Errorf("workflow %q is at revision %d, not %d: %w", w.ID, cur.Revision, expectRevision, record.ErrConflict)
	}
	w = copyWorkflow(w)
	w.Revision, w.CreatedAt, w.UpdatedAt = cur.Revision+1, cur.CreatedAt, later(cur.UpdatedAt)
	s.workflows[w.ID] = w
	return copyWorkflow(w), nil
}

// DeleteWorkflow implements store.Workflows.
func (s *Store) DeleteWorkflow(ctx context.Context, id string) error {
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.workflows[id]; !ok {
		return notFound("workflow", id)
	}
	delete(s.workflows, id)
	return nil
}

// ListWorkflows implements store.Workflows: by name (byte order), then id.
func (s *Store) ListWorkflows(ctx context.Context, publishedOnly bool) ([]record.Workflow, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []record.Workflow{}
	for _, w := range s.workflows {
		if !publishedOnly || w.Published {
			out = append(out, copyWorkflow(w))
		}
	}
	slices.SortFunc(out, func(a, b record.Workflow) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// checkSchedule validates s and returns it as stored (times in UTC,
// inputs copied).
func checkSchedule(s record.Schedule) (record.Schedule, error) {
	if s.WorkflowID == "" {
		return record.Schedule{}, fmt.Errorf("memstore: schedule %q: empty workflow id", s.ID)
	}
	if s.IntervalSeconds < 0 || s.RunCount < 0 {
		return record.Schedule{}, fmt.Errorf("memstore: schedule %q: negative interval or run count", s.ID)
	}
	if err := checkJSON(fmt.Sprintf("schedule %q inputs", s.ID), s.Inputs); err != nil {
		return record.Schedule{}, err
	}
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"next_run_at", &s.NextRunAt}, {"expires_at", &s.ExpiresAt}, {"last_run_at", &s.LastRunAt}, {"last_error_at", &s.LastErrorAt}} {
		var err error
		if *f.t, err = optStamp("schedule "+f.name, *f.t); err != nil {
			return record.Schedule{}, err
		}
	}
	s.Inputs = cloneRaw(s.Inputs)
	return s, nil
}

func copySchedule(s record.Schedule) record.Schedule {
	s.Inputs = cloneRaw(s.Inputs)
	return s
}

// CreateSchedule implements store.Schedules.
func (s *Store) CreateSchedule(ctx context.Context, sc record.Schedule) (record.Schedule, error) {
	if err := requireID("create schedule", sc.ID); err != nil {
		return record.Schedule{}, err
	}
	sc, err := checkSchedule(sc)
	if err != nil {
		return record.Schedule{}, err
	}
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = now()
	}
	if sc.CreatedAt, err = stamp("schedule created_at", sc.CreatedAt); err != nil {
		return record.Schedule{}, err
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return record.Schedule{}, err
	}
	defer unlock()
	if _, ok := s.schedules[sc.ID]; ok {
		return record.Schedule{}, exists("schedule", sc.ID)
	}
	s.schedules[sc.ID] = sc
	return copySchedule(sc), nil
}

// GetSchedule implements store.Schedules.
func (s *Store) GetSchedule(ctx context.Context, id string) (record.Schedule, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return record.Schedule{}, err
	}
	defer unlock()
	sc, ok := s.schedules[id]
	if !ok {
		return record.Schedule{}, notFound("schedule", id)
	}
	return copySchedule(sc), nil
}

// UpdateSchedule implements store.Schedules: every field but ID and
// CreatedAt is replaced.
func (s *Store) UpdateSchedule(ctx context.Context, sc record.Schedule) error {
	sc, err := checkSchedule(sc)
	if err != nil {
		return err
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	cur, ok := s.schedules[sc.ID]
	if !ok {
		return notFound("schedule", sc.ID)
	}
	sc.CreatedAt = cur.CreatedAt
	s.schedules[sc.ID] = sc
	return nil
}

// DeleteSchedule implements store.Schedules.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.schedules[id]; !ok {
		return notFound("schedule", id)
	}
	delete(s.schedules, id)
	return nil
}

// ListSchedules implements store.Schedules: soonest NextRunAt first (a
// zero one first of all, as SQL sorts NULL), then by id.
func (s *Store) ListSchedules(ctx context.Context, activeOnly bool) ([]record.Schedule, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []record.Schedule{}
	for _, sc := range s.schedules {
		if !activeOnly || sc.Active {
			out = append(out, copySchedule(sc))
		}
	}
	// The zero time (year 1) is before every storable one.
	slices.SortFunc(out, func(a, b record.Schedule) int {
		return cmp.Or(a.NextRunAt.Compare(b.NextRunAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}
