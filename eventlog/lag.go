package eventlog

// Lag is how many events are published but not yet durable, over every
// session in memory: the events readers cannot see yet (the
// weft_eventlog_lag_events gauge). A store that falls behind shows here
// before Publish starts to block.
func (l *Log) Lag() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.sessions {
		s.mu.RLock()
		if s.last > s.durable {
			n += s.last - s.durable
		}
		s.mu.RUnlock()
	}
	return n
}
