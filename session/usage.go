package session

import (
	"context"
	"log/slog"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/record"
)

// UsageStore keeps the cost history: every model call of every turn
// (store.Usage satisfies it).
type UsageStore interface {
	AppendUsage(ctx context.Context, recs ...record.UsageRecord) error
	QueryUsage(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error)
}

// usageRecorder is agent.Config.OnUsage appending each model call to
// the store's cost history under sessionID and runID. A failure is
// logged, never the run's: the call was made and paid for either way.
func usageRecorder(u UsageStore, sessionID, runID string, log *slog.Logger) func(context.Context, agent.CallUsage) {
	return func(ctx context.Context, c agent.CallUsage) {
		rec := record.UsageRecord{Time: c.Time.UTC(), SessionID: sessionID, RunID: runID, Provider: c.Provider, Model: c.Model,
			InputTokens: int64(c.Usage.InputTokens), OutputTokens: int64(c.Usage.OutputTokens),
			CacheReadTokens: int64(c.Usage.CacheReadTokens), CacheWriteTokens: int64(c.Usage.CacheWriteTokens), CostUSD: c.CostUSD}
		// A cancelled run's last call still cost what it cost.
		if err := u.AppendUsage(context.WithoutCancel(ctx), rec); err != nil {
			log.Warn("the cost history could not be written", "session", sessionID, "run", runID, "error", err)
		}
	}
}

// restoreTotals gives a resumed conversation what the session has cost so
// far (from the cost history), so that cost thresholds already crossed in
// earlier turns do not fire again.
func (rt *Service) restoreTotals(ctx context.Context, s *agent.Session, sessionID string) {
	if rt.cfg.Usage == nil {
		return
	}
	g, err := rt.cfg.Usage.QueryUsage(ctx, record.UsageQuery{SessionID: sessionID})
	if err != nil || len(g) != 1 {
		if err != nil {
			rt.log.Warn("reading the session's cost history failed", "session", sessionID, "error", err)
		}
		return
	}
	t := s.Totals()
	t.CostUSD = g[0].CostUSD
	t.Usage.InputTokens, t.Usage.OutputTokens = int(g[0].InputTokens), int(g[0].OutputTokens)
	t.Usage.CacheReadTokens, t.Usage.CacheWriteTokens = int(g[0].CacheReadTokens), int(g[0].CacheWriteTokens)
	s.SetTotals(t)
}

// budget is the turn's budget: the server's default with the request's
// limits in place of its own where the request set them.
func (rt *Service) budget(opt TurnOptions) agent.Budget {
	b := rt.cfg.Budget
	if opt.MaxBudgetUSD != nil {
		b.MaxUSD = *opt.MaxBudgetUSD
	}
	if opt.MaxTokensTotal != nil {
		b.MaxTokens = *opt.MaxTokensTotal
	}
	return b
}
