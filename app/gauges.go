package app

// registerGauges registers the gauges of the server and the event logs,
// which exist only once New has built them (weft_sessions_active is
// registered where the session service is built).
func (a *App) registerGauges(g interface {
	GaugeFunc(name, help string, fn func() float64) error
}) error {
	if g == nil {
		return nil
	}
	srv, sessions, runs := a.Server, a.Sessions, a.Runs
	if err := g.GaugeFunc("streams_active", "Event streams (SSE responses and WebSocket connections) open now.",
		func() float64 { return float64(srv.StreamsActive()) }); err != nil {
		return err
	}
	return g.GaugeFunc("eventlog_lag_events", "Events of sessions and runs published but not yet in the store (not yet visible to readers).",
		func() float64 { return float64(sessions.EventLogLag() + runs.EventLogLag()) })
}
