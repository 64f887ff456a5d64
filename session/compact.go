package session

import (
	"context"
	"fmt"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
)

// The context window's management for stored sessions (issue 14): the
// agent compacts, and since agent.Session.Messages is an append-only
// history with a marker per compaction, saving it as after any turn keeps
// both the compacted state and the messages it replaced.

// CompactData is the answer to Compact: the compactions made (each also a
// compaction event in the session's log) and the history's length.
type CompactData struct {
	Compactions []agent.CompactionData `json:"compactions"`
	Messages    int                    `json:"messages"`
}

// contextConfig sets the context window's management of a turn's agent
// (agentFor).
func (rt *Service) contextConfig(cfg *agent.Config) error {
	cfg.Context = rt.cfg.Context
	cfg.ContextWindow, cfg.MaxContextMessages = rt.cfg.ContextWindow, rt.cfg.MaxContextMessages
	if rt.cfg.CompactModel == "" {
		return nil
	}
	p, info, err := rt.cfg.Models.Resolve(rt.cfg.CompactModel)
	if err != nil {
		return fmt.Errorf("compact model: %w", err)
	}
	cfg.CompactProvider, cfg.CompactModel = p, info.ID
	return nil
}

// Compact summarises the session's conversation now (POST
// /v1/sessions/{id}/compact), with instructions added to the summary's
// prompt, and saves the compacted history. Like Rewind, it fails with
// ErrBusy while a turn runs or messages wait, and ErrNotFound for an
// unknown session.
func (rt *Service) Compact(ctx context.Context, sessionID, instructions string) (CompactData, error) {
	if _, err := rt.cfg.Store.GetSession(ctx, sessionID); err != nil {
		return CompactData{}, err
	}
	l, done, err := rt.exclusive(ctx, sessionID)
	if err != nil {
		return CompactData{}, err
	}
	defer done()
	if err := rt.waitIdle(ctx, l); err != nil {
		return CompactData{}, err
	}
	if err := rt.loadHistory(ctx, l); err != nil {
		return CompactData{}, err
	}
	if err := rt.loadOverride(ctx, l); err != nil {
		return CompactData{}, err
	}
	a, err := rt.agentFor(l, TurnOptions{})
	if err != nil {
		return CompactData{}, &record.InvalidError{Err: err}
	}
	s := a.ResumeSessionWith(l.history, nil)
	cs, err := s.Compact(ctx, instructions)
	if err != nil {
		return CompactData{}, err
	}
	h := s.Messages()
	if len(cs) > 0 {
		if err := rt.saveHistory(ctx, l, h); err != nil {
			return CompactData{}, err
		}
		for _, c := range cs {
			if _, err := rt.appendTo(ctx, l, string(agent.EventCompaction), c); err != nil {
				return CompactData{}, err
			}
		}
	}
	if cs == nil {
		cs = []agent.CompactionData{}
	}
	return CompactData{Compactions: cs, Messages: len(h)}, nil
}

// waitIdle waits for a turn whose done is out to finish saving; ErrBusy
// while a turn runs or messages wait (as Rewind). l.sendMu held.
func (rt *Service) waitIdle(ctx context.Context, l *live) error {
	for {
		l.mu.Lock()
		busy := len(l.queue) > 0 || (l.running && !l.turnDone)
		idle, running := l.idle, l.running
		l.mu.Unlock()
		if busy {
			return ErrBusy
		}
		if !running {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ConversationView returns the session's conversation as the model sees it (every
// compaction applied), or with all the whole history: every message and a
// compaction marker (role compact.RoleMarker) where each compaction was.
func (rt *Service) ConversationView(ctx context.Context, sessionID string, all bool) ([]llm.Message, error) {
	if _, err := rt.cfg.Store.GetSession(ctx, sessionID); err != nil {
		return nil, err
	}
	h, err := rt.cfg.Store.LoadMessages(ctx, sessionID)
	if err != nil || all {
		return h, err
	}
	return compact.View(h), nil
}
