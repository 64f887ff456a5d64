package eventlog

// Readers is how many Readers of the session are open now: whether anyone
// follows its stream (a run with a client on its events can ask that
// client a question; one without cannot).
func (l *Log) Readers(sessionID string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if s := l.sessions[sessionID]; s != nil {
		return int(s.readers.Load())
	}
	return 0
}
