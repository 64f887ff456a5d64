//go:build !unix

package server

// fdLimit is unknown here: DefaultMaxConns falls back to a fixed bound.
func fdLimit() int { return 0 }
