package run

// EventLogLag is how many of the runs' events are published but not yet
// in the store (weft_eventlog_lag_events).
func (m *Service) EventLogLag() int64 { return m.elog.Lag() }
