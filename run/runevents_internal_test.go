package run

import (
	"errors"
	"testing"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
)

// Runs' events go to the store in one call per persist round when the
// store can take many runs' events at once, as sessions' events do.
func TestRunEventsPersistInBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, ":memory:", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es := newRunEventStore(db)
	b, ok := es.(store.BatchEvents)
	if !ok {
		t.Fatalf("%T does not batch over a store whose run events do", es)
	}
	for _, id := range []string{"r1", "r2"} {
		if _, err := db.CreateRun(ctx, record.Run{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	_, errs := b.AppendEventBatches(ctx, []store.EventBatch{
		{SessionID: "r1", Events: []event.Event{{Type: "a"}, {Type: "b"}}},
		{SessionID: "r2", Events: []event.Event{{Type: "c"}}},
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int64{"r1": 2, "r2": 1} {
		last, err := es.LastSeq(ctx, id)
		if err != nil || last != want {
			t.Errorf("run %s: last seq %d, %v; want %d", id, last, err, want)
		}
	}
	if _, ok := newRunEventStore(unbatched{db}).(store.BatchEvents); ok {
		t.Error("batches over a store that cannot")
	}
}

// unbatched hides the run event store's batching.
type unbatched struct{ *sqlite.DB }

func (u unbatched) RunEvents() store.Events { return struct{ store.Events }{u.DB.RunEvents()} }
