package session

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/record"
)

// Stats is what a session has used so far (seed 000's Session.Stats()),
// for GET /v1/sessions/{id}.
type Stats struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	// Turns counts the messages whose turn started (message_consumed),
	// finished or not.
	Turns int `json:"turns"`
	// Context is how full the window was after the last model call
	// (the last turn_end's); nil when no call reported it.
	Context *agent.ContextUsage `json:"context,omitempty"`
}

// statsScanPage is how many events one read of the event log takes.
const statsScanPage = 500

// statsCursor is what the event log has told about a session's stats so
// far: the log is append-only, so each call reads only the events after
// the last one it saw, and a long session costs one scan per in-memory
// state, not one per request.
type statsCursor struct {
	mu      sync.Mutex
	after   int64 // seq of the last event counted
	turns   int
	sums    Stats // the turn_end events' tokens and cost
	context *agent.ContextUsage
}

// Stats returns a session's totals. Tokens and cost come from the cost
// history (Config.Usage), which holds every model call the session's
// turns paid for; without one, from the turn_end events. Turns and the
// context come from the event log, so both survive a restart.
func (rt *Service) Stats(ctx context.Context, id string) (Stats, error) {
	l := rt.known(id)
	if l == nil {
		if _, err := rt.cfg.Store.GetSession(ctx, id); err != nil {
			return Stats{}, err
		}
		var err error
		if l, err = rt.session(id); err != nil {
			return Stats{}, err
		}
	}
	defer rt.release(l)
	c := &l.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		evs, err := rt.cfg.Store.ReadEvents(ctx, id, c.after, statsScanPage)
		if err != nil {
			return Stats{}, err
		}
		for _, ev := range evs {
			c.count(ev)
		}
		if len(evs) < statsScanPage {
			break
		}
	}
	st := c.sums
	st.Turns = c.turns
	if c.context != nil {
		cu := *c.context
		st.Context = &cu
	}
	if rt.cfg.Usage == nil {
		return st, nil
	}
	g, err := rt.cfg.Usage.QueryUsage(ctx, record.UsageQuery{SessionID: id})
	if err != nil {
		return Stats{}, err
	}
	st.InputTokens, st.OutputTokens, st.CacheReadTokens, st.CacheWriteTokens, st.CostUSD = 0, 0, 0, 0, 0
	for _, x := range g {
		st.InputTokens += x.InputTokens
		st.OutputTokens += x.OutputTokens
		st.CacheReadTokens += x.CacheReadTokens
		st.CacheWriteTokens += x.CacheWriteTokens
		st.CostUSD += x.CostUSD
	}
	return st, nil
}

// count adds one event of the log to the cursor.
func (c *statsCursor) count(ev event.Event) {
	c.after = ev.Seq
	switch ev.Type {
	case event.MessageConsumed:
		c.turns++
	case string(agent.EventTurnEnd):
		var d agent.TurnEndData
		if json.Unmarshal(ev.Data, &d) != nil {
			return // not ours to fail on: the log is the record
		}
		c.sums.InputTokens += int64(d.InputTokens)
		c.sums.OutputTokens += int64(d.OutputTokens)
		c.sums.CacheReadTokens += int64(d.CacheReadTokens)
		c.sums.CacheWriteTokens += int64(d.CacheWriteTokens)
		c.sums.CostUSD += d.CostUSD
		if d.Context != nil {
			c.context = d.Context
		}
	}
}
