package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
)

// EventSessionRewound is the event a rewind appends: the event log itself
// is append-only (seqs keep increasing); what a rewind cuts is the
// conversation the model sees.
const EventSessionRewound = event.SessionRewound

// RewindTo says where to cut a session's conversation back to: exactly
// one of its fields is set.
type RewindTo struct {
	// ToSeq undoes every turn that started after event seq ToSeq: the
	// conversation becomes what it was then (less what earlier rewinds
	// already removed).
	ToSeq *int64 `json:"to_seq,omitempty"`
	// Messages keeps the first Messages messages of the conversation. The
	// cut must not leave a user message last (it would be merged into the
	// next prompt).
	Messages *int `json:"messages,omitempty"`
}

// RewindData is the payload of session_rewound, and what Rewind returns.
type RewindData struct {
	ToSeq *int64 `json:"to_seq,omitempty"`
	// Messages is how many conversation messages are left, Removed how
	// many were cut.
	Messages int `json:"messages"`
	Removed  int `json:"removed"`
	// Seq is the session_rewound event's seq (not part of its payload).
	Seq int64 `json:"-"`
}

// Rewind cuts the session's conversation back (to a seq or a message
// count) and records a session_rewound event. It fails with ErrBusy while
// a turn runs or messages wait, with ErrNotFound for an unknown session,
// and with an *record.InvalidError for a position that does not exist or a cut
// that would leave the conversation invalid. Cutting nothing is not an
// error: the event records Removed 0.
func (rt *Service) Rewind(ctx context.Context, sessionID string, to RewindTo) (RewindData, error) {
	if (to.ToSeq == nil) == (to.Messages == nil) {
		return RewindData{}, &record.InvalidError{Err: errors.New("give exactly one of to_seq and messages")}
	}
	sess, err := rt.cfg.Store.GetSession(ctx, sessionID)
	if err != nil {
		return RewindData{}, err
	}
	// No message starts while the conversation is cut.
	l, done, err := rt.exclusive(ctx, sessionID)
	if err != nil {
		return RewindData{}, err
	}
	defer done()
	// A turn whose done is out is only saving and flushing: a client that
	// read done and rewinds at once waits for that, rather than a 409.
	for {
		l.mu.Lock()
		busy := len(l.queue) > 0 || (l.running && !l.turnDone)
		idle := l.idle
		running := l.running
		l.mu.Unlock()
		if busy {
			return RewindData{}, ErrBusy
		}
		if !running {
			break
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return RewindData{}, ctx.Err()
		}
	}
	if err := rt.loadHistory(ctx, l); err != nil {
		return RewindData{}, err
	}
	h := l.history
	keep := len(h)
	switch {
	case to.Messages != nil:
		keep = *to.Messages
		if keep < 0 || keep > len(h) {
			return RewindData{}, &record.InvalidError{Err: fmt.Errorf("messages %d: the conversation has %d", keep, len(h))}
		}
		if keep > 0 && h[keep-1].Role == llm.RoleUser {
			return RewindData{}, &record.InvalidError{Err: fmt.Errorf("messages %d would end the conversation with a user message (it would be merged into the next prompt); keep %d or %d", keep, keep-1, keep+1)}
		}
	default:
		n := *to.ToSeq
		if n < 0 || n > sess.LastSeq {
			return RewindData{}, &record.InvalidError{Err: fmt.Errorf("to_seq %d: the session's events are 1 to %d", n, sess.LastSeq)}
		}
		if keep, err = rt.lengthAt(ctx, sessionID, n, len(h)); err != nil {
			return RewindData{}, err
		}
	}
	if err := rt.saveHistory(ctx, l, h[:keep:keep]); err != nil {
		return RewindData{}, err
	}
	d := RewindData{ToSeq: to.ToSeq, Messages: keep, Removed: len(h) - keep}
	evs, err := rt.appendTo(ctx, l, EventSessionRewound, d)
	if err != nil {
		return RewindData{}, err
	}
	d.Seq = evs[0].Seq
	return d, nil
}

// lengthAt is how much of the current conversation (n messages long) was
// there at event seq `at`: the smallest of the lengths recorded after it,
// each turn's messages_before and each rewind's messages. A turn appends
// to the conversation and a rewind truncates it, so a prefix that
// existed at `at` is intact now up to the shortest length it was cut to
// since, and the first turn after `at` started from it.
func (rt *Service) lengthAt(ctx context.Context, sessionID string, at int64, n int) (int, error) {
	keep := n
	for after := at; ; {
		evs, err := rt.cfg.Store.ReadEvents(ctx, sessionID, after, 512)
		if err != nil {
			return 0, err
		}
		for _, e := range evs {
			switch e.Type {
			case event.MessageConsumed:
				var d MessageData
				if json.Unmarshal(e.Data, &d) == nil && d.MessagesBefore != nil {
					keep = min(keep, *d.MessagesBefore)
				}
			case EventSessionRewound:
				var d RewindData
				if json.Unmarshal(e.Data, &d) == nil {
					keep = min(keep, d.Messages)
				}
			}
		}
		if len(evs) < 512 {
			return max(keep, 0), nil
		}
		after = evs[len(evs)-1].Seq
	}
}
