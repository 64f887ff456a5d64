package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// testTurns: ListOpenTurns follows the turn framing of session event logs
// (event.UserMessage and the rest), whether the events arrive one by
// one, several per append or in a batch (store.BatchEvents), and forgets
// a deleted session.
func testTurns(t *testing.T, s store.Store) {
	ctx := t.Context()
	msg := func(typ string, seq int64) event.Event {
		return ev(typ, fmt.Sprintf(`{"message_seq":%d}`, seq))
	}
	delta := ev("text_delta", `{"text":"x"}`)
	steps := []struct {
		name   string
		events []event.Event
		want   *record.OpenTurns // nil: not listed
	}{
		{"nothing yet", nil, nil},
		{"a message accepted", []event.Event{ev(event.UserMessage, `{"text":"a"}`)}, &record.OpenTurns{Accepted: 1}},
		{"its turn starts", []event.Event{msg(event.MessageConsumed, 1), delta}, &record.OpenTurns{Accepted: 1, Answered: 1, Running: 1}},
		{"a second message queued", []event.Event{ev(event.UserMessage, `{"text":"b"}`), delta}, &record.OpenTurns{Accepted: 4, Answered: 1, Running: 1}},
		{"the first turn ends", []event.Event{delta, ev(event.Done, `{}`)}, &record.OpenTurns{Accepted: 4, Answered: 1}},
		{"the second starts and ends in one append", []event.Event{msg(event.MessageConsumed, 4), delta, ev(event.Done, `{}`)}, nil},
		{"a third message is dropped", []event.Event{ev(event.UserMessage, `{"text":"c"}`), msg(event.MessageDropped, 11)}, nil},
		{"framing without a message_seq is ignored", []event.Event{ev(event.MessageDropped, `{}`)}, nil},
	}
	for i := range 3 {
		mustCreate(t, s, record.Session{ID: fmt.Sprintf("t%d", i)})
	}
	mustCreate(t, s, record.Session{ID: "quiet"})
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
				_, errs := b.AppendEventBatches(ctx, []store.EventBatch{{SessionID: "t2", Events: st.events}, {SessionID: "quiet", Events: []event.Event{delta}}})
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
		slices.SortFunc(open, func(a, b record.OpenTurns) int {
			if a.SessionID < b.SessionID {
				return -1
			}
			return 1
		})
		want := []record.OpenTurns{}
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
	mustAppend(t, s, "t0", ev(event.UserMessage, `{"text":"d"}`))
	if err := s.DeleteSession(ctx, "t0"); err != nil {
		t.Fatal(err)
	}
	if open, err := s.ListOpenTurns(ctx); err != nil || len(open) != 0 {
		t.Fatalf("after deleting the session with an open message: %+v, %v", open, err)
	}
}
