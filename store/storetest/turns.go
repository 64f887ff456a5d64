package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/weft-run/weft/store"
)

// testTurns: ListOpenTurns follows the turn framing of session event logs
// (store.EventUserMessage and the rest), whether the events arrive one by
// one, several per append or in a batch (store.BatchEvents), and forgets
// a deleted session.
func testTurns(t *testing.T, s store.Store) {
	ctx := t.Context()
	msg := func(typ string, seq int64) store.Event {
		return ev(typ, fmt.Sprintf(`{"message_seq":%d}`, seq))
	}
	delta := ev("text_delta", `{"text":"x"}`)
	steps := []struct {
		name   string
		events []store.Event
		want   *store.OpenTurns // nil: not listed
	}{
		{"nothing yet", nil, nil},
		{"a message accepted", []store.Event{ev(store.EventUserMessage, `{"text":"a"}`)}, &store.OpenTurns{Accepted: 1}},
		{"its turn starts", []store.Event{msg(store.EventMessageConsumed, 1), delta}, &store.OpenTurns{Accepted: 1, Answered: 1, Running: 1}},
		{"a second message queued", []store.Event{ev(store.EventUserMessage, `{"text":"b"}`), delta}, &store.OpenTurns{Accepted: 4, Answered: 1, Running: 1}},
		{"the first turn ends", []store.Event{delta, ev(store.EventDone, `{}`)}, &store.OpenTurns{Accepted: 4, Answered: 1}},
		{"the second starts and ends in one append", []store.Event{msg(store.EventMessageConsumed, 4), delta, ev(store.EventDone, `{}`)}, nil},
		{"a third message is dropped", []store.Event{ev(store.EventUserMessage, `{"text":"c"}`), msg(store.EventMessageDropped, 11)}, nil},
		{"framing without a message_seq is ignored", []store.Event{ev(store.EventMessageDropped, `{}`)}, nil},
	}
	for i := range 3 {
		mustCreate(t, s, store.Session{ID: fmt.Sprintf("t%d", i)})
	}
	mustCreate(t, s, store.Session{ID: "quiet"})
	mustAppend(t, s, "quiet", delta, delta)
	for _, st := range steps {
		// Session t0 gets one append per step, t1 one append per event,
		// t2 the step's events as a batch when the store batches.
		if len(st.events) > 0 {
			mustAppend(t, s, "t0", st.events...)
			for _, e := range st.events {
				mustAppend(t, s, "t1", e)
			}
			if b, ok := s.(store.BatchEvents); ok {
				_, errs := b.AppendEventBatches(ctx, []store.EventBatch{{SessionID: "t2", Events: st.events}, {SessionID: "quiet", Events: []store.Event{delta}}})
				for _, err := range errs {
					if err != nil {
						t.Fatalf("%s: AppendEventBatches: %v", st.name, err)
					}
				}
			} else {
				mustAppend(t, s, "t2", st.events...)
				mustAppend(t, s, "quiet", delta)
			}
		}
		open, err := s.ListOpenTurns(ctx)
		if err != nil {
			t.Fatalf("%s: ListOpenTurns: %v", st.name, err)
		}
		slices.SortFunc(open, func(a, b store.OpenTurns) int {
			if a.SessionID < b.SessionID {
				return -1
			}
			return 1
		})
		want := []store.OpenTurns{}
		if st.want != nil {
			for i := range 3 {
				w := *st.want
				w.SessionID = fmt.Sprintf("t%d", i)
				want = append(want, w)
			}
		}
		if !slices.Equal(open, want) {
			t.Fatalf("%s: ListOpenTurns = %+v, want %+v", st.name, open, want)
		}
	}
	mustAppend(t, s, "t0", ev(store.EventUserMessage, `{"text":"d"}`))
	if err := s.DeleteSession(ctx, "t0"); err != nil {
		t.Fatal(err)
	}
	if open, err := s.ListOpenTurns(ctx); err != nil || len(open) != 0 {
		t.Fatalf("after deleting the session with an open message: %+v, %v", open, err)
	}
}
