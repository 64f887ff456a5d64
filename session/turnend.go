package session

import (
	"context"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/turnend"
)

// turnEnded hands a finished turn to the turn-end pipeline
// (Config.TurnEnd): memory extraction, the consolidation check and
// follow-up suggestions, in the background. It runs after the turn's
// events are in the store, so a suggestions event always follows the
// turn's done.
func (rt *Service) turnEnded(l *live, a *agent.Agent, s *agent.Session, stop string) {
	p := rt.cfg.TurnEnd
	if !p.Enabled() || a == nil || s == nil {
		return
	}
	cfg := a.Config()
	t := turnend.Turn{Session: l.id, Messages: s.Messages(), Provider: cfg.Provider, Model: cfg.Model, StopReason: stop}
	if p.Suggests() {
		t.Suggest = func(d event.SuggestionsData) { rt.suggest(l, d) }
	}
	p.TurnEnded(t)
}

// suggest appends a suggestions event, unless the session moved on
// meanwhile: a next turn started or waits (the suggestions were for the
// turn before it), or the session was deleted.
func (rt *Service) suggest(l *live, d event.SuggestionsData) {
	if len(d.Suggestions) == 0 || l.gone.Load() {
		return
	}
	cur, err := rt.session(l.id)
	if err != nil {
		return
	}
	defer rt.release(cur)
	cur.mu.Lock()
	busy := cur.writer != nil || len(cur.queue) > 0
	cur.mu.Unlock()
	if busy || cur.gone.Load() {
		return
	}
	if _, err := rt.appendTo(context.Background(), cur, event.Suggestions, d); err != nil {
		rt.log.Warn("appending suggestions failed", "session", l.id, "error", err)
	}
}
