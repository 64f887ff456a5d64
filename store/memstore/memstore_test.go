package memstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/memstore"
	"github.com/weft-run/weft/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return memstore.New() })
}

// TestCopies: nothing a caller passes in or gets back aliases the stored
// state, so changing it afterwards changes nothing stored.
func TestCopies(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memstore.New()
	defer s.Close()

	type check struct {
		name   string
		mutate func() // changes what a caller holds
		verify func() error
	}
	var checks []check
	add := func(name string, mutate func(), verify func() error) {
		checks = append(checks, check{name, mutate, verify})
	}
	same := func(what string, got, want []byte) error {
		if string(got) != string(want) {
			return fmt.Errorf("%s is %s, want %s", what, got, want)
		}
		return nil
	}

	// Session metadata, in and out.
	meta := json.RawMessage(`{"a":1}`)
	created, err := s.CreateSession(ctx, record.Session{ID: "s", Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetSession(ctx, "s")
	add("session metadata", func() { copy(meta, `{"b":2}`); copy(created.Metadata, `{"c":3}`); copy(got.Metadata, `{"d":4}`) },
		func() error {
			g, _ := s.GetSession(ctx, "s")
			return same("metadata", g.Metadata, []byte(`{"a":1}`))
		})

	// Messages: image bytes, tool input and provider metadata.
	img := []byte{1, 2, 3}
	input := json.RawMessage(`{"x":1}`)
	msg := llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		llm.Image("image/png", img),
		llm.ToolUse("t", "Bash", input),
		{Type: llm.BlockThinking, Meta: map[string]string{"k": "v"}},
	}}
	if err := s.AppendMessages(ctx, "s", msg); err != nil {
		t.Fatal(err)
	}
	loaded, _ := s.LoadMessages(ctx, "s")
	add("messages", func() {
		img[0] = 9
		copy(input, `{"y":2}`)
		msg.Content[2].Meta["k"] = "changed"
		loaded[0].Content[0].Data[0] = 9
		loaded[0].Content[2].Meta["k"] = "changed"
		loaded[0].Content[1].Input[2] = 'z'
	}, func() error {
		m, _ := s.LoadMessages(ctx, "s")
		if b := m[0].Content; b[0].Data[0] != 1 || string(b[1].Input) != `{"x":1}` || b[2].Meta["k"] != "v" {
			return fmt.Errorf("stored message changed: %+v", m[0])
		}
		return nil
	})

	// Event data, in, returned and read.
	data := json.RawMessage(`{"e":1}`)
	appended, _ := s.AppendEvents(ctx, "s", event.Event{Type: "t", Data: data})
	read, _ := s.ReadEvents(ctx, "s", 0, 0)
	add("event data", func() { copy(data, `{"f":2}`); copy(appended[0].Data, `{"g":3}`); copy(read[0].Data, `{"h":4}`) },
		func() error {
			r, _ := s.ReadEvents(ctx, "s", 0, 0)
			return same("event data", r[0].Data, []byte(`{"e":1}`))
		})

	// Batched events.
	bdata := json.RawMessage(`{"b":1}`)
	out, errs := s.AppendEventBatches(ctx, []store.EventBatch{{SessionID: "s", Events: []event.Event{{Type: "b", Data: bdata}}}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	add("batched event data", func() { copy(bdata, `{"c":2}`); copy(out[0][0].Data, `{"d":3}`) },
		func() error {
			r, _ := s.ReadEvents(ctx, "s", 1, 0)
			return same("batched event data", r[0].Data, []byte(`{"b":1}`))
		})

	// Run JSON, step results, run events.
	plan := json.RawMessage(`{"steps":[]}`)
	rn, _ := s.CreateRun(ctx, record.Run{ID: "r", Plan: plan})
	result := json.RawMessage(`"ok"`)
	if err := s.PutStepResult(ctx, record.StepResult{RunID: "r", StepID: "a", Status: record.StepCompleted, Result: result}); err != nil {
		t.Fatal(err)
	}
	steps, _ := s.StepResults(ctx, "r")
	rev := json.RawMessage(`1`)
	rout, _ := s.RunEvents().AppendEvents(ctx, "r", event.Event{Type: "x", Data: rev})
	add("run values", func() {
		copy(plan, `{"steps":{}}`)
		copy(rn.Plan, `{"steps":{}}`)
		copy(result, `"no"`)
		copy(steps[0].Result, `"no"`)
		copy(rev, `2`)
		copy(rout[0].Data, `3`)
	}, func() error {
		r, _ := s.GetRun(ctx, "r")
		st, _ := s.StepResults(ctx, "r")
		ev, _ := s.RunEvents().ReadEvents(ctx, "r", 0, 0)
		return errors.Join(same("plan", r.Plan, []byte(`{"steps":[]}`)), same("step result", st[0].Result, []byte(`"ok"`)), same("run event", ev[0].Data, []byte(`1`)))
	})
	// keep sees copies too.
	if err := s.DeleteStepResults(ctx, "r", func(st record.StepResult) bool { copy(st.Result, `"no"`); return true }); err != nil {
		t.Fatal(err)
	}

	// Workflow canvas, schedule inputs, memory tags, audit extras.
	canvas := json.RawMessage(`{"nodes":[]}`)
	wf, _ := s.CreateWorkflow(ctx, record.Workflow{ID: "w", Name: "w", Canvas: canvas})
	inputs := json.RawMessage(`{"i":1}`)
	sc, _ := s.CreateSchedule(ctx, record.Schedule{ID: "sc", WorkflowID: "w", Inputs: inputs})
	tags := []string{"a", "b"}
	mem, _ := s.AddMemory(ctx, record.Memory{ID: "m", Text: "t", Tags: tags})
	extra := map[string]string{"k": "v"}
	if err := s.AppendAudit(ctx, record.AuditEntry{SessionID: "s", Outcome: record.AuditAllowed, Extra: extra}); err != nil {
		t.Fatal(err)
	}
	audit, _ := s.ListAudit(ctx, record.AuditQuery{})
	add("other values", func() {
		copy(canvas, `{"nodes":{}}`)
		copy(wf.Canvas, `{"nodes":{}}`)
		copy(inputs, `{"i":2}`)
		copy(sc.Inputs, `{"i":3}`)
		tags[0] = "x"
		mem.Tags[1] = "y"
		extra["k"] = "changed"
		audit[0].Extra["k"] = "changed"
	}, func() error {
		w, _ := s.GetWorkflow(ctx, "w")
		sch, _ := s.GetSchedule(ctx, "sc")
		ms, _ := s.ListMemories(ctx, "")
		au, _ := s.ListAudit(ctx, record.AuditQuery{})
		var errs []error
		errs = append(errs, same("canvas", w.Canvas, []byte(`{"nodes":[]}`)), same("inputs", sch.Inputs, []byte(`{"i":1}`)))
		if strings.Join(ms[0].Tags, ",") != "a,b" {
			errs = append(errs, fmt.Errorf("tags %v", ms[0].Tags))
		}
		if au[0].Extra["k"] != "v" {
			errs = append(errs, fmt.Errorf("audit extra %v", au[0].Extra))
		}
		return errors.Join(errs...)
	})

	for _, c := range checks {
		c.mutate()
	}
	for _, c := range checks {
		if err := c.verify(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if st, _ := s.StepResults(ctx, "r"); string(st[0].Result) != `"ok"` {
		t.Errorf("DeleteStepResults' keep changed the stored result: %s", st[0].Result)
	}
}

// TestClose: after Close every call fails with ErrClosed.
func TestClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	if _, err := s.CreateSession(ctx, record.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	calls := map[string]error{}
	_, calls["GetSession"] = s.GetSession(ctx, "s")
	_, calls["CreateSession"] = s.CreateSession(ctx, record.Session{ID: "t"})
	_, calls["ListSessions"] = s.ListSessions(ctx, record.ListOptions{})
	_, calls["ReadEvents"] = s.ReadEvents(ctx, "s", 0, 0)
	_, calls["AppendEvents"] = s.AppendEvents(ctx, "s", event.Event{Type: "x"})
	_, calls["RunEvents.ReadEvents"] = s.RunEvents().ReadEvents(ctx, "r", 0, 0)
	_, calls["LoadMessages"] = s.LoadMessages(ctx, "s")
	_, calls["ListRuns"] = s.ListRuns(ctx, record.RunQuery{})
	_, calls["ListWorkflows"] = s.ListWorkflows(ctx, false)
	_, calls["ListSchedules"] = s.ListSchedules(ctx, false)
	_, calls["ListMemories"] = s.ListMemories(ctx, "")
	_, calls["ListAudit"] = s.ListAudit(ctx, record.AuditQuery{})
	calls["AppendAudit"] = s.AppendAudit(ctx, record.AuditEntry{})
	_, errs := s.AppendEventBatches(ctx, []store.EventBatch{{SessionID: "s"}})
	calls["AppendEventBatches"] = errs[0]
	for name, err := range calls {
		if !errors.Is(err, memstore.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestTimes: times are kept as SQLite keeps them: UTC, nanoseconds, and
// only within the range its integers hold, so a test against memstore
// sees the errors the database would give.
func TestTimes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memstore.New()
	defer s.Close()
	zone := time.FixedZone("X", 3*3600)
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, zone)
	got, err := s.CreateSession(ctx, record.Session{ID: "a", CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(at) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt %v, want %v in UTC", got.CreatedAt, at)
	}
	for name, tm := range map[string]time.Time{
		"before 1678": time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		"after 2262":  time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		if _, err := s.CreateSession(ctx, record.Session{ID: name, CreatedAt: tm}); err == nil {
			t.Errorf("CreateSession with a time %s succeeded", name)
		}
		if _, err := s.AppendEvents(ctx, "a", event.Event{Type: "x", CreatedAt: tm}); err == nil {
			t.Errorf("AppendEvents with a time %s succeeded", name)
		}
		if err := s.AppendAudit(ctx, record.AuditEntry{Timestamp: tm}); err == nil {
			t.Errorf("AppendAudit with a time %s succeeded", name)
		}
	}
	if ev, _ := s.ReadEvents(ctx, "a", 0, 0); len(ev) != 0 {
		t.Errorf("refused appends stored %d events", len(ev))
	}
	// An AfterID at the top of the range pages past everything.
	if err := s.AppendAudit(ctx, record.AuditEntry{SessionID: "a"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ListAudit(ctx, record.AuditQuery{AfterID: math.MaxInt64}); len(got) != 0 {
		t.Errorf("ListAudit after the last possible id = %d entries", len(got))
	}
}

// TestBatchEvents: AppendEventBatches appends each batch as AppendEvents
// would, and one batch's failure does not fail the others, on both logs.
func TestBatchEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memstore.New()
	defer s.Close()
	for _, id := range []string{"a", "b"} {
		if _, err := s.CreateSession(ctx, record.Session{ID: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateRun(ctx, record.Run{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(data string) event.Event { return event.Event{Type: "t", Data: json.RawMessage(data)} }
	for name, log := range map[string]store.BatchEvents{"sessions": s, "runs": s.RunEvents().(store.BatchEvents)} {
		out, errs := log.AppendEventBatches(ctx, []store.EventBatch{
			{SessionID: "a", Events: []event.Event{ev(`1`), ev(`2`)}},
			{SessionID: "missing", Events: []event.Event{ev(`1`)}},
			{SessionID: "b", Events: []event.Event{ev(`{`)}},
			{SessionID: "b", Events: []event.Event{ev(`3`)}},
			{SessionID: "a", Events: []event.Event{ev(`4`)}},
		})
		wantSeqs := [][]int64{{1, 2}, nil, nil, {1}, {3}}
		wantErr := []error{nil, record.ErrNotFound, errors.New("invalid"), nil, nil}
		for i := range wantSeqs {
			var seqs []int64
			for _, e := range out[i] {
				seqs = append(seqs, e.Seq)
			}
			if fmt.Sprint(seqs) != fmt.Sprint(wantSeqs[i]) {
				t.Errorf("%s batch %d: seqs %v, want %v", name, i, seqs, wantSeqs[i])
			}
			switch {
			case wantErr[i] == nil && errs[i] != nil:
				t.Errorf("%s batch %d: %v", name, i, errs[i])
			case wantErr[i] != nil && errs[i] == nil:
				t.Errorf("%s batch %d succeeded, want an error", name, i)
			case errors.Is(wantErr[i], record.ErrNotFound) && !errors.Is(errs[i], record.ErrNotFound):
				t.Errorf("%s batch %d: %v, want ErrNotFound", name, i, errs[i])
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, errs := log.AppendEventBatches(cctx, []store.EventBatch{{SessionID: "a", Events: []event.Event{ev(`5`)}}}); errs[0] == nil {
			t.Errorf("%s: a batch with a canceled context succeeded", name)
		}
	}
}

// TestConcurrentMixed hammers one store from many goroutines with every
// kind of call; run with -race it checks the locking.
func TestConcurrentMixed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := memstore.New()
	defer s.Close()
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			id := fmt.Sprint("s", w)
			if _, err := s.CreateSession(ctx, record.Session{ID: id}); err != nil {
				t.Error(err)
				return
			}
			if _, err := s.CreateRun(ctx, record.Run{ID: id}); err != nil {
				t.Error(err)
				return
			}
			for i := range 50 {
				_, err := s.AppendEvents(ctx, id, event.Event{Type: "e"})
				err = errors.Join(err, s.AppendMessages(ctx, id, llm.UserText(fmt.Sprint(i))))
				_, err2 := s.RunEvents().AppendEvents(ctx, id, event.Event{Type: "r"})
				err = errors.Join(err, err2, s.PutStepResult(ctx, record.StepResult{RunID: id, StepID: fmt.Sprint(i % 5), Status: record.StepRunning}))
				err = errors.Join(err, s.AppendAudit(ctx, record.AuditEntry{SessionID: id}))
				_, err3 := s.ListSessions(ctx, record.ListOptions{Limit: 3})
				_, err4 := s.ListRuns(ctx, record.RunQuery{Q: "x"})
				_, err5 := s.ReadEvents(ctx, fmt.Sprint("s", (w+1)%workers), 0, 0)
				if errors.Is(err5, record.ErrNotFound) {
					err5 = nil // the neighbour may not have started
				}
				if err := errors.Join(err, err3, err4, err5); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for w := range workers {
		id := fmt.Sprint("s", w)
		sess, err := s.GetSession(ctx, id)
		if err != nil || sess.LastSeq != 50 || sess.MessageCount != 50 {
			t.Errorf("%s: %+v, %v", id, sess, err)
		}
		r, err := s.GetRun(ctx, id)
		if err != nil || r.LastSeq != 50 {
			t.Errorf("run %s: %+v, %v", id, r, err)
		}
	}
	if au, _ := s.ListAudit(ctx, record.AuditQuery{Limit: 1000}); len(au) != workers*50 {
		t.Errorf("%d audit entries, want %d", len(au), workers*50)
	}
}
