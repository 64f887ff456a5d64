package memstore

import (
	"context"
	"encoding/json"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
)

// ListOpenTurns implements store.Turns by reading the sessions' event
// logs, which are in memory anyway; it runs once per start of a runtime.
func (s *Store) ListOpenTurns(ctx context.Context) ([]record.OpenTurns, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []record.OpenTurns{}
	for id, sess := range s.sessions {
		t := record.OpenTurns{SessionID: id}
		for _, e := range sess.events {
			switch e.Type {
			case event.UserMessage:
				t.Accepted = e.Seq
			case event.MessageConsumed, event.MessageDropped:
				var d struct {
					MessageSeq int64 `json:"message_seq"`
				}
				if json.Unmarshal(e.Data, &d) != nil || d.MessageSeq <= 0 {
					continue
				}
				t.Answered = d.MessageSeq
				if e.Type == event.MessageConsumed {
					t.Running = d.MessageSeq
				}
			case event.Done:
				t.Running = 0
			}
		}
		if t.Accepted > t.Answered || t.Running != 0 {
			out = append(out, t)
		}
	}
	return out, nil
}
