package eventlog_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/sqlite"
)

// TestRedactOption: with Options.Redact, an event's data is redacted
// before anything sees it: the appender's returned events, live readers,
// the store, and readers that catch up from the store. The caller's own
// events are left alone.
func TestRedactOption(t *testing.T) {
	t.Parallel()
	const value = "zqKp2WmXv4Rt8LnB"
	set := secret.NewSet()
	if err := set.Set("TOKEN", value); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "w.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateSession(ctx, record.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	l := eventlog.New(sessionEvents(db), eventlog.Options{Redact: set.RedactJSON})
	live := l.Subscribe("s", 0)
	defer live.Close()

	in := []event.Event{
		{Type: "tool_use", Data: json.RawMessage(`{"input":{"command":"echo ` + value + `"}}`)},
		{Type: "plain", Data: json.RawMessage(`{"n":1}`)},
		{Type: "escaped", Data: json.RawMessage(`{"t":"zqKp2WmXv4Rt8Ln\u0042"}`)},
		{Type: "empty"},
	}
	orig := string(in[0].Data)
	published, err := l.Publish(ctx, "s", in...)
	if err != nil {
		t.Fatal(err)
	}
	appended, err := l.Append(ctx, "s", event.Event{Type: "permission_request", Data: json.RawMessage(`{"input":"` + value + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(in[0].Data) != orig {
		t.Fatalf("the caller's event changed: %s", in[0].Data)
	}
	want := []string{`{"input":{"command":"echo [SECRET:TOKEN]"}}`, `{"n":1}`, `{"t":"[SECRET:TOKEN]"}`, ``, `{"input":"[SECRET:TOKEN]"}`}
	check := func(where string, evs []event.Event) {
		t.Helper()
		if len(evs) != len(want) {
			t.Fatalf("%s: %d events", where, len(evs))
		}
		for i, e := range evs {
			if string(e.Data) != want[i] || strings.Contains(string(e.Data), value) {
				t.Errorf("%s: event %d data %s, want %s", where, i+1, e.Data, want[i])
			}
		}
	}
	check("returned", append(published, appended...))
	var got []event.Event
	for range want {
		e, err := live.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	check("live reader", got)
	stored, err := db.ReadEvents(ctx, "s", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	check("store", stored)
	// A fresh log over the same store: every read comes from the store.
	r := eventlog.New(sessionEvents(db), eventlog.Options{}).Subscribe("s", 0)
	defer r.Close()
	got = got[:0]
	for range want {
		e, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	check("reader from the store", got)
}
