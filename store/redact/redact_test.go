package redact_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/redact"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/store/storetest"
)

const value = "zqKp2WmXv4Rt8LnB"

func secrets(t *testing.T) *secret.Set {
	t.Helper()
	set := secret.NewSet()
	if err := set.Set("TOKEN", value); err != nil {
		t.Fatal(err)
	}
	return set
}

// TestConformance: the wrapper keeps the store contract (the suite's data
// holds no secret, so it must come back byte for byte).
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "weft.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return redact.Store(db, secrets(t))
	})
}

// TestNoTableHoldsTheValue writes the value, raw and JSON-escaped, into
// every field of every kind of row through the wrapper, then reads every
// row of every table and every byte of the database's files.
func TestNoTableHoldsTheValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "weft.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := redact.Store(db, secrets(t))
	if _, ok := s.(store.BatchEvents); !ok {
		t.Fatal("the wrapper hides the store's batching")
	}
	if _, ok := s.RunEvents().(store.BatchEvents); !ok {
		t.Fatal("the wrapper hides the run events' batching")
	}
	if redact.Unwrap(s) != store.Store(db) {
		t.Fatal("Unwrap does not return the store")
	}
	esc := `zqKp2WmXv4Rt8Ln\u0042` // the value as JSON may spell it
	raw := json.RawMessage(`{"a":"` + value + `","b":"` + esc + `"}`)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.CreateSession(ctx, record.Session{ID: "s", Title: "t " + value, Metadata: raw})
	must(err)
	must(s.UpdateSession(ctx, record.Session{ID: "s", Title: "u " + value, Metadata: raw}))
	_, err = s.CreateSession(ctx, record.Session{ID: "s2"})
	must(err)
	msg := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
		llm.Text("text " + value),
		{Type: llm.BlockToolUse, ToolUseID: "c", ToolName: "Bash", Input: json.RawMessage(`{"command":"echo ` + value + `"}`)},
		{Type: llm.BlockThinking, Text: "thinking " + value, Meta: map[string]string{"x.signature": "sig " + value}},
	}}
	result := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("c", false, llm.Text("out "+value))}}
	must(s.AppendMessages(ctx, "s", llm.UserText("prompt "+value), msg, result))
	must(s.ReplaceMessages(ctx, "s2", []llm.Message{llm.UserText("replaced " + value)}))
	_, err = s.AppendEvents(ctx, "s", event.Event{Type: "permission_request", Data: raw})
	must(err)
	out, errs := s.(store.BatchEvents).AppendEventBatches(ctx, []store.EventBatch{{SessionID: "s2", Events: []event.Event{{Type: "x", Data: raw}}}})
	if len(out) != 1 || errs[0] != nil {
		t.Fatal(errs)
	}
	run := record.Run{ID: "r", Status: record.RunRunning, Goal: "goal " + value, Plan: raw, Config: raw, Inputs: raw, Files: raw, Posture: raw,
		Summary: "summary " + value, Error: "error " + value}
	_, err = s.CreateRun(ctx, run)
	must(err)
	must(s.UpdateRun(ctx, run))
	must(s.PutStepResult(ctx, record.StepResult{RunID: "r", StepID: "st", Status: record.StepCompleted, Result: raw, Error: "e " + value}))
	_, err = s.RunEvents().AppendEvents(ctx, "r", event.Event{Type: "plan_ready", Data: raw})
	must(err)
	_, errs = s.RunEvents().(store.BatchEvents).AppendEventBatches(ctx, []store.EventBatch{{SessionID: "r", Events: []event.Event{{Type: "step_complete", Data: raw}}}})
	must(errs[0])
	w, err := s.CreateWorkflow(ctx, record.Workflow{ID: "w", Name: "n " + value, Description: "d " + value, InputSchema: raw, Plan: raw, Canvas: raw})
	must(err)
	_, err = s.UpdateWorkflow(ctx, w, w.Revision)
	must(err)
	sch := record.Schedule{ID: "sc", WorkflowID: "w", Inputs: raw, IntervalSeconds: 60, NextRunAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour),
		LastTaskID: "task " + value}
	_, err = s.CreateSchedule(ctx, sch)
	must(err)
	must(s.UpdateSchedule(ctx, sch))
	_, err = s.AddMemory(ctx, record.Memory{UserID: "u", Text: "memory " + value, Tags: []string{value}})
	must(err)
	must(s.AppendAudit(ctx, record.AuditEntry{SessionID: "s", ToolName: "Bash", Operation: "execute", Resource: "r " + value,
		Outcome: "allowed", Reason: "why " + value, Extra: map[string]string{"by": "Bash(echo " + value + ")"}}))
	must(s.AppendUsage(ctx, record.UsageRecord{SessionID: "s " + value, RunID: "r " + value, Provider: "p " + value, Model: "m " + value,
		InputTokens: 1, CostUSD: 0.5}))

	// Read back through the store: redacted, and still valid.
	msgs, err := s.LoadMessages(ctx, "s")
	must(err)
	if got := msgs[1].Content[1].Input; string(got) != `{"command":"echo [SECRET:TOKEN]"}` {
		t.Fatalf("tool input stored as %s", got)
	}
	must(db.Close())
	dump(t, path)
}

// dump fails on any piece of the value in any row of any table or any
// byte of the database's files, and on a table the test left empty.
func dump(t *testing.T, path string) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'schema_version'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 10 {
		t.Fatalf("tables %v", tables)
	}
	for _, table := range tables {
		rs, err := conn.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		n := 0
		for rs.Next() {
			n++
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				s := ""
				switch x := v.(type) {
				case string:
					s = x
				case []byte:
					s = string(x)
				}
				if strings.Contains(s, value[:8]) || strings.Contains(s, value[8:]) {
					t.Errorf("%s.%s holds the value: %s", table, cols[i], s)
				}
			}
		}
		rs.Close()
		if n == 0 {
			t.Errorf("table %s is empty: the test did not write it", table)
		}
	}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(b), value[:8]) || strings.Contains(string(b), value[8:]) {
			t.Errorf("%s holds the value", filepath.Base(path+suffix))
		}
	}
}

// TestEveryWriteIsWrapped: each method of store.Store either only reads
// or deletes, or the wrapper defines it itself. A method added to the
// interface must be placed here, so that a new way to write cannot bypass
// the redaction.
func TestEveryWriteIsWrapped(t *testing.T) {
	t.Parallel()
	passThrough := map[string]bool{
		"GetSession": true, "ListSessions": true, "DeleteSession": true, "LoadMessages": true, "ReadEvents": true, "ListOpenTurns": true,
		"GetRun": true, "ListRuns": true, "DeleteRun": true, "StepResults": true, "DeleteStepResults": true, "InterruptRuns": true,
		"GetWorkflow": true, "DeleteWorkflow": true, "ListWorkflows": true,
		"GetSchedule": true, "DeleteSchedule": true, "ListSchedules": true,
		"ListMemories": true, "DeleteMemory": true, "ListAudit": true, "QueryUsage": true, "Close": true,
	}
	wrapped := map[string]bool{
		"CreateSession": true, "UpdateSession": true, "AppendMessages": true, "ReplaceMessages": true, "AppendEvents": true,
		"CreateRun": true, "UpdateRun": true, "PutStepResult": true, "RunEvents": true,
		"CreateWorkflow": true, "UpdateWorkflow": true, "CreateSchedule": true, "UpdateSchedule": true,
		"AddMemory": true, "AppendAudit": true, "AppendUsage": true,
	}
	it := reflect.TypeFor[store.Store]()
	for i := range it.NumMethod() {
		name := it.Method(i).Name
		if !passThrough[name] && !wrapped[name] {
			t.Errorf("store.Store.%s is new: decide whether it writes, and if so redact it in package redact", name)
		}
	}
	// The wrapped ones really are overridden: called on a wrapper over a
	// store that records what it is given, they pass on redacted data.
	rec := &recorder{}
	s := redact.Store(rec, secrets(t))
	ctx := context.Background()
	_, _ = s.CreateSession(ctx, record.Session{Title: value})
	_ = s.UpdateSession(ctx, record.Session{Title: value})
	_ = s.AppendMessages(ctx, "", llm.UserText(value))
	_ = s.ReplaceMessages(ctx, "", []llm.Message{llm.UserText(value)})
	_, _ = s.AppendEvents(ctx, "", event.Event{Type: value})
	_, _ = s.CreateRun(ctx, record.Run{Goal: value})
	_ = s.UpdateRun(ctx, record.Run{Goal: value})
	_ = s.PutStepResult(ctx, record.StepResult{Error: value})
	_, _ = s.RunEvents().AppendEvents(ctx, "", event.Event{Type: value})
	_, _ = s.CreateWorkflow(ctx, record.Workflow{Name: value})
	_, _ = s.UpdateWorkflow(ctx, record.Workflow{Name: value}, 0)
	_, _ = s.CreateSchedule(ctx, record.Schedule{LastTaskID: value})
	_ = s.UpdateSchedule(ctx, record.Schedule{LastTaskID: value})
	_, _ = s.AddMemory(ctx, record.Memory{Text: value})
	_ = s.AppendAudit(ctx, record.AuditEntry{Reason: value})
	_ = s.AppendUsage(ctx, record.UsageRecord{SessionID: value, Model: value})
	if len(rec.got) != len(wrapped) {
		t.Fatalf("%d writes recorded, want %d", len(rec.got), len(wrapped))
	}
	for _, g := range rec.got {
		if b, _ := json.Marshal(g); strings.Contains(string(b), value) {
			t.Errorf("a write passed the value on: %s", b)
		}
	}
}

// recorder is a store.Store that records every write's argument.
type recorder struct {
	store.Store // nil: the reads are never called
	got         []any
}

func (r *recorder) CreateSession(_ context.Context, s record.Session) (record.Session, error) {
	r.got = append(r.got, s)
	return s, nil
}
func (r *recorder) UpdateSession(_ context.Context, s record.Session) error {
	r.got = append(r.got, s)
	return nil
}
func (r *recorder) AppendMessages(_ context.Context, _ string, m ...llm.Message) error {
	r.got = append(r.got, m)
	return nil
}
func (r *recorder) ReplaceMessages(_ context.Context, _ string, m []llm.Message) error {
	r.got = append(r.got, m)
	return nil
}
func (r *recorder) AppendEvents(_ context.Context, _ string, e ...event.Event) ([]event.Event, error) {
	r.got = append(r.got, e)
	return e, nil
}
func (r *recorder) CreateRun(_ context.Context, x record.Run) (record.Run, error) {
	r.got = append(r.got, x)
	return x, nil
}
func (r *recorder) UpdateRun(_ context.Context, x record.Run) error {
	r.got = append(r.got, x)
	return nil
}
func (r *recorder) PutStepResult(_ context.Context, x record.StepResult) error {
	r.got = append(r.got, x)
	return nil
}
func (r *recorder) RunEvents() store.Events { return runEventsRecorder{r} }
func (r *recorder) CreateWorkflow(_ context.Context, x record.Workflow) (record.Workflow, error) {
	r.got = append(r.got, x)
	return x, nil
}
func (r *recorder) UpdateWorkflow(_ context.Context, x record.Workflow, _ int) (record.Workflow, error) {
	r.got = append(r.got, x)
	return x, nil
}
func (r *recorder) CreateSchedule(_ context.Context, x record.Schedule) (record.Schedule, error) {
	r.got = append(r.got, x)
	return x, nil
}
func (r *recorder) UpdateSchedule(_ context.Context, x record.Schedule) error {
	r.got = append(r.got, x)
	return nil
}
func (r *recorder) AddMemory(_ context.Context, x record.Memory) (record.Memory, error) {
	r.got = append(r.got, x)
	return x, nil
}
func (r *recorder) AppendAudit(_ context.Context, x ...record.AuditEntry) error {
	r.got = append(r.got, x)
	return nil
}
func (r *recorder) AppendUsage(_ context.Context, x ...record.UsageRecord) error {
	r.got = append(r.got, x)
	return nil
}

type runEventsRecorder struct{ r *recorder }

func (e runEventsRecorder) AppendEvents(_ context.Context, _ string, evs ...event.Event) ([]event.Event, error) {
	e.r.got = append(e.r.got, evs)
	return evs, nil
}
func (e runEventsRecorder) ReadEvents(context.Context, string, int64, int) ([]event.Event, error) {
	return nil, nil
}
