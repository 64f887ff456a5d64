package storetest

import (
	"fmt"
	"testing"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// testTextBytes: the free text the store keeps (what models, tools and
// users write: a session's title, a run's goal, summary and error, a
// step's error, a memory, an audit entry's resource and reason, a
// schedule's last error) comes back byte for byte, NUL bytes and invalid
// UTF-8 included. A model can put either in its output and a file name can
// hold invalid UTF-8, and a store that refused them would lose the run's
// outcome or an audit entry.
func testTextBytes(t *testing.T, s store.Store) {
	ctx := t.Context()
	for i, text := range []string{"nul\x00byte", "bad \xff\xfe utf-8", "\x00", "plain"} {
		sess := mustCreate(t, s, record.Session{ID: fmt.Sprint("t", i), Title: text})
		same(t, "session title", mustGet(t, s, sess.ID).Title, text)

		r := mustCreateRun(t, s, record.Run{ID: sess.ID, Goal: text})
		r.Summary, r.Error = text, text
		if err := s.UpdateRun(ctx, r); err != nil {
			t.Fatalf("UpdateRun with %q: %v", text, err)
		}
		got := mustGetRun(t, s, r.ID)
		same(t, "run goal", got.Goal, text)
		same(t, "run summary", got.Summary, text)
		same(t, "run error", got.Error, text)
		if err := s.PutStepResult(ctx, record.StepResult{RunID: r.ID, StepID: "a", Status: record.StepFailed, Error: text}); err != nil {
			t.Fatalf("PutStepResult with %q: %v", text, err)
		}
		same(t, "step error", mustSteps(t, s, r.ID)[0].Error, text)

		m, err := s.AddMemory(ctx, record.Memory{UserID: sess.ID, Text: text})
		if err != nil {
			t.Fatalf("AddMemory with %q: %v", text, err)
		}
		ms, err := s.ListMemories(ctx, sess.ID)
		if err != nil || len(ms) != 1 {
			t.Fatalf("ListMemories: %v %v", ms, err)
		}
		same(t, "memory text", ms[0].Text, m.Text)
		same(t, "memory text", ms[0].Text, text)

		if err := s.AppendAudit(ctx, record.AuditEntry{SessionID: sess.ID, ToolName: "Bash", Operation: "execute",
			Resource: text, Outcome: record.AuditBlocked, Reason: text}); err != nil {
			t.Fatalf("AppendAudit with %q: %v", text, err)
		}
		es := mustListAudit(t, s, record.AuditQuery{SessionID: sess.ID})
		if len(es) != 1 {
			t.Fatalf("audit entries %v", es)
		}
		same(t, "audit resource", es[0].Resource, text)
		same(t, "audit reason", es[0].Reason, text)

		sc, err := s.CreateSchedule(ctx, record.Schedule{ID: sess.ID, WorkflowID: "w", IntervalSeconds: 60, LastError: text})
		if err != nil {
			t.Fatalf("CreateSchedule with %q: %v", text, err)
		}
		same(t, "schedule last error", mustGetSchedule(t, s, sc.ID).LastError, text)
	}
}
