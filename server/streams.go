package server

// StreamsActive is how many event streams (SSE responses and WebSocket
// connections) the server is serving now: the weft_streams_active gauge.
func (s *Server) StreamsActive() int64 { return s.streamsActive.Load() }
