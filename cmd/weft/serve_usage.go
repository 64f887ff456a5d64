package main

import (
	"context"
	"log/slog"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// The cost history of weft serve: what the composition root wires (the
// app package once the restructure lands; weft serve's wiring is being
// replaced, so these are apart from it). The session service gives every
// agent it builds OnUsage = storeUsageRecorder(db, session, run), and the
// server Config.Usage = db (a store.Usage is a server.UsageSource).

// storeUsageRecorder is agent.Config.OnUsage appending each model call to
// the store's cost history under sessionID and runID. A failure is
// logged, never the run's: the call was made and paid for either way.
func storeUsageRecorder(u store.Usage, sessionID, runID string, log *slog.Logger) func(context.Context, agent.CallUsage) {
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
