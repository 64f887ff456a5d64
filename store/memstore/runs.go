package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/internal/keyset"
)

type run struct {
	hdr    record.Run // LastSeq is computed
	steps  map[string]record.StepResult
	events []event.Event
}

// checkRun validates r's status and JSON fields.
func checkRun(r record.Run) error {
	if !record.ValidRunStatus(r.Status) {
		return fmt.Errorf("memstore: run %q: unknown status %q", r.ID, r.Status)
	}
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"plan", r.Plan}, {"config", r.Config}, {"inputs", r.Inputs}, {"files", r.Files}, {"posture", r.Posture}} {
		if err := checkJSON(fmt.Sprintf("run %q %s", r.ID, f.name), f.raw); err != nil {
			return err
		}
	}
	return nil
}

func copyRun(r record.Run) record.Run {
	r.Plan, r.Config, r.Inputs = cloneRaw(r.Plan), cloneRaw(r.Config), cloneRaw(r.Inputs)
	r.Files, r.Posture = cloneRaw(r.Files), cloneRaw(r.Posture)
	return r
}

func (x *run) view() record.Run {
	r := copyRun(x.hdr)
	r.LastSeq = int64(len(x.events))
	return r
}

// CreateRun implements store.Runs.
func (s *Store) CreateRun(ctx context.Context, r record.Run) (record.Run, error) {
	if err := requireID("create run", r.ID); err != nil {
		return record.Run{}, err
	}
	if r.Status == "" {
		r.Status = record.RunPlanning
	}
	if err := checkRun(r); err != nil {
		return record.Run{}, err
	}
	var err error
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now()
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	if r.CreatedAt, err = stamp("run created_at", r.CreatedAt); err != nil {
		return record.Run{}, err
	}
	if r.UpdatedAt, err = stamp("run updated_at", r.UpdatedAt); err != nil {
		return record.Run{}, err
	}
	r = copyRun(r)
	r.LastSeq = 0
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return record.Run{}, err
	}
	defer unlock()
	if _, ok := s.runs[r.ID]; ok {
		return record.Run{}, exists("run", r.ID)
	}
	s.runs[r.ID] = &run{hdr: r, steps: map[string]record.StepResult{}}
	return copyRun(r), nil
}

// GetRun implements store.Runs.
func (s *Store) GetRun(ctx context.Context, id string) (record.Run, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return record.Run{}, err
	}
	defer unlock()
	x := s.runs[id]
	if x == nil {
		return record.Run{}, notFound("run", id)
	}
	return x.view(), nil
}

// UpdateRun implements store.Runs.
func (s *Store) UpdateRun(ctx context.Context, r record.Run) error {
	if err := checkRun(r); err != nil {
		return err
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	x := s.runs[r.ID]
	if x == nil {
		return notFound("run", r.ID)
	}
	r = copyRun(r)
	r.CreatedAt, r.LastSeq = x.hdr.CreatedAt, 0
	r.UpdatedAt = later(x.hdr.UpdatedAt)
	x.hdr = r
	return nil
}

// runSearch is what RunQuery.Q is matched against, lower-cased (Unicode);
// the separator keeps a query from matching across two fields.
func runSearch(r record.Run) string {
	return strings.ToLower(r.Goal + "\x00" + r.Summary + "\x00" + r.Error)
}

// ListRuns implements store.Runs.
func (s *Store) ListRuns(ctx context.Context, q record.RunQuery) (record.RunPage, error) {
	limit := clampLimit(q.Limit, defaultListLimit, maxListLimit)
	var after *cursor
	if q.Cursor != "" {
		c, err := decodeCursor(q.Cursor)
		if err != nil {
			return record.RunPage{}, err
		}
		after = &c
	}
	needle := strings.ToLower(q.Q)
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return record.RunPage{}, err
	}
	defer unlock()
	var match []*run
	for _, x := range s.runs {
		if (q.Status == "" || x.hdr.Status == q.Status) &&
			(needle == "" || strings.Contains(runSearch(x.hdr), needle)) &&
			(after == nil || after.Follows(x.hdr.CreatedAt, x.hdr.ID)) {
			match = append(match, x)
		}
	}
	slices.SortFunc(match, func(a, b *run) int { return newestFirst(a.hdr.CreatedAt, a.hdr.ID, b.hdr.CreatedAt, b.hdr.ID) })
	page := record.RunPage{Runs: make([]record.Run, 0, min(limit, len(match)))}
	for _, x := range match[:min(limit, len(match))] {
		page.Runs = append(page.Runs, x.view())
	}
	if len(match) > limit {
		last := page.Runs[limit-1]
		page.NextCursor = encodeCursor(keyset.After(last.CreatedAt, last.ID))
	}
	return page, nil
}

// DeleteRun implements store.Runs: the run goes with its step results and
// events.
func (s *Store) DeleteRun(ctx context.Context, id string) error {
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := s.runs[id]; !ok {
		return notFound("run", id)
	}
	delete(s.runs, id)
	return nil
}

// InterruptRuns implements store.Runs.
func (s *Store) InterruptRuns(ctx context.Context) ([]string, error) {
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var ids []string
	for id, x := range s.runs {
		switch x.hdr.Status {
		case record.RunPlanning, record.RunAwaitingApproval, record.RunRunning:
			x.hdr.Status = record.RunInterrupted
			x.hdr.UpdatedAt = later(x.hdr.UpdatedAt)
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func copyStep(st record.StepResult) record.StepResult {
	st.Result = cloneRaw(st.Result)
	return st
}

// PutStepResult implements store.Runs.
func (s *Store) PutStepResult(ctx context.Context, st record.StepResult) error {
	if st.StepID == "" {
		return fmt.Errorf("memstore: run %q: step result with an empty step id", st.RunID)
	}
	if !record.ValidStepStatus(st.Status) {
		return fmt.Errorf("memstore: run %q step %q: unknown status %q", st.RunID, st.StepID, st.Status)
	}
	if err := checkJSON(fmt.Sprintf("run %q step %q result", st.RunID, st.StepID), st.Result); err != nil {
		return err
	}
	var err error
	if st.StartedAt, err = optStamp("step started_at", st.StartedAt); err != nil {
		return err
	}
	if st.FinishedAt, err = optStamp("step finished_at", st.FinishedAt); err != nil {
		return err
	}
	st = copyStep(st)
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	x := s.runs[st.RunID]
	if x == nil {
		return notFound("run", st.RunID)
	}
	x.steps[st.StepID] = st
	return nil
}

// steps returns copies of x's step results by Index, then StepID.
func (x *run) sortedSteps() []record.StepResult {
	out := make([]record.StepResult, 0, len(x.steps))
	for _, st := range x.steps {
		out = append(out, copyStep(st))
	}
	slices.SortFunc(out, func(a, b record.StepResult) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), strings.Compare(a.StepID, b.StepID))
	})
	return out
}

// StepResults implements store.Runs.
func (s *Store) StepResults(ctx context.Context, runID string) ([]record.StepResult, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	x := s.runs[runID]
	if x == nil {
		return nil, notFound("run", runID)
	}
	return x.sortedSteps(), nil
}

// DeleteStepResults implements store.Runs. keep sees copies, in order,
// with the store locked.
func (s *Store) DeleteStepResults(ctx context.Context, runID string, keep func(record.StepResult) bool) error {
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	x := s.runs[runID]
	if x == nil {
		return notFound("run", runID)
	}
	for _, st := range x.sortedSteps() {
		if keep == nil || !keep(st) {
			delete(x.steps, st.StepID)
		}
	}
	return nil
}

// RunEvents implements store.Runs: the runs' event log, which also
// implements store.BatchEvents.
func (s *Store) RunEvents() store.Events { return &s.runEvents }
