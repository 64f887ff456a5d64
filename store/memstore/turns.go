package memstore

import (
	"context"
	"encoding/json"

	"github.com/weft-run/weft/store"
)

// ListOpenTurns implements store.Turns by reading the sessions' event
// logs, which are in memory anyway; it runs once per start of a runtime.
func (s *Store) ListOpenTurns(ctx context.Context) ([]store.OpenTurns, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []store.OpenTurns{}
	for id, sess := range s.sessions {
		t := store.OpenTurns{SessionID: id}
		for _, e := range sess.events {
			switch e.Type {
			case store.EventUserMessage:
				t.Accepted = e.Seq
			case store.EventMessageConsumed, store.EventMessageDropped:
				var d struct {
					MessageSeq int64 `json:"message_seq"`
				}
				if json.Unmarshal(e.Data, &d) != nil || d.MessageSeq <= 0 {
					continue
				}
				t.Answered = d.MessageSeq
				if e.Type == store.EventMessageConsumed {
					t.Running = d.MessageSeq
				}
			case store.EventDone:
				t.Running = 0
			}
		}
		if t.Accepted > t.Answered || t.Running != 0 {
			out = append(out, t)
		}
	}
	return out, nil
}
