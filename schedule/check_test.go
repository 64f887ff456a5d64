package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/schedule"
)

// TestCreateChecksTheWorkflow: a schedule whose workflow could not run
// (unknown, unpublished, inputs it refuses) is refused at Create with the
// checker's own error, and nothing is stored or fired.
func TestCreateChecksTheWorkflow(t *testing.T) {
	t.Parallel()
	errUnpublished := errors.New(`workflow "draft" is not published`)
	errInputs := errors.New(`missing required input "word"`)
	var checked []string
	check := func(_ context.Context, wf string, inputs json.RawMessage) error {
		checked = append(checked, wf+" "+string(inputs))
		switch {
		case wf == "draft":
			return errUnpublished
		case wf == "grep" && string(inputs) != `{"word":"x"}`:
			return errInputs
		}
		return nil
	}
	s, _, subs := newTest(t, schedule.Options{Check: check})
	tests := []struct {
		req     schedule.Request
		wantErr error
	}{
		{schedule.Request{WorkflowID: "draft", IntervalSeconds: 60, RunImmediately: true}, errUnpublished},
		{schedule.Request{WorkflowID: "grep", IntervalSeconds: 60}, errInputs},
		{schedule.Request{WorkflowID: "grep", Inputs: json.RawMessage(` {"word":"x"} `), IntervalSeconds: 60}, nil},
		// The request's own checks come first: the checker is not asked.
		{schedule.Request{WorkflowID: "grep", IntervalSeconds: 1}, schedule.ErrInvalid},
	}
	for i, tc := range tests {
		_, err := s.Create(context.Background(), tc.req)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Fatalf("case %d: Create(%+v) = %v, want %v", i, tc.req, err, tc.wantErr)
		}
	}
	if got := fmt.Sprint(checked); got != `[draft  grep  grep {"word":"x"}]` {
		t.Fatalf("checker asked %s", got)
	}
	list, err := s.List(context.Background(), false)
	if err != nil || len(list) != 1 || list[0].WorkflowID != "grep" {
		t.Fatalf("stored %+v, %v: want only the valid schedule", list, err)
	}
	if subs.count() != 0 {
		t.Fatal("a refused schedule fired")
	}
}

// TestFailedFiringIsRecorded: a firing that fails is recorded on the
// schedule (lastError, lastErrorAt, in the store) and the schedule moves
// on; the next successful firing clears them.
func TestFailedFiringIsRecorded(t *testing.T) {
	t.Parallel()
	s, clock, subs := newTest(t, schedule.Options{})
	sch := mustCreate(t, s, schedule.Request{WorkflowID: "wf", IntervalSeconds: 60})
	subs.mu.Lock()
	subs.fail["wf"] = errors.New(`workflow "wf" is not published: publish it to run it in the background`)
	subs.mu.Unlock()
	clock.Advance(time.Minute)
	failedAt := clock.Now()
	if fired, err := s.FireDue(context.Background()); err != nil || len(fired) != 0 {
		t.Fatalf("FireDue = %v, %v", fired, err)
	}
	got, err := s.Get(context.Background(), sch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastError != `workflow "wf" is not published: publish it to run it in the background` || !got.LastErrorAt.Equal(failedAt) ||
		got.RunCount != 0 || !got.NextRunAt.Equal(failedAt.Add(time.Minute)) || !got.Active {
		t.Fatalf("after a failed firing: %+v", got)
	}
	b, _ := json.Marshal(got)
	if want := `"lastError":"workflow \"wf\" is not published`; !json.Valid(b) || !strings.Contains(string(b), want) || !strings.Contains(string(b), `"lastErrorAt":"`) {
		t.Fatalf("JSON %s lacks lastError/lastErrorAt", b)
	}

	subs.mu.Lock()
	delete(subs.fail, "wf")
	subs.mu.Unlock()
	clock.Advance(time.Minute)
	if fired, err := s.FireDue(context.Background()); err != nil || len(fired) != 1 {
		t.Fatalf("FireDue = %v, %v", fired, err)
	}
	if got, _ = s.Get(context.Background(), sch.ID); got.LastError != "" || !got.LastErrorAt.IsZero() || got.RunCount != 1 {
		t.Fatalf("after a successful firing: %+v", got)
	}
}
