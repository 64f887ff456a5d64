package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/memstore"
)

// A store for a test or an embedding program: the same calls as on
// store/sqlite, nothing written to disk.
func Example() {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	if _, err := s.CreateSession(ctx, record.Session{ID: "demo", Title: "first"}); err != nil {
		panic(err)
	}
	stored, _ := s.AppendEvents(ctx, "demo",
		event.Event{Type: "user_message", Data: json.RawMessage(`{"text":"hi"}`)},
		event.Event{Type: "done", Data: json.RawMessage(`{}`)},
	)
	sess, _ := s.GetSession(ctx, "demo")
	fmt.Println(stored[0].Seq, stored[1].Seq, sess.LastSeq)

	_, err := s.GetSession(ctx, "nope")
	fmt.Println(err)
	// Output:
	// 1 2 2
	// session "nope": not found
}
