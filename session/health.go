package session

import (
	"context"
	"fmt"
)

// pinger is implemented by stores that can check their connection
// cheaply (store/sqlite).
type pinger interface {
	Ping(ctx context.Context) error
}

// Health reports whether the runtime can serve requests: ErrClosed once
// it is shutting down, an error when its store does not answer (through
// the store's Ping, or else a one-row read) within ctx.
func (rt *Service) Health(ctx context.Context) error {
	rt.mu.Lock()
	closed := rt.closed
	rt.mu.Unlock()
	if closed {
		return ErrClosed
	}
	var err error
	if p, ok := rt.cfg.Store.(pinger); ok {
		err = p.Ping(ctx)
	} else {
		_, err = rt.cfg.Store.ListSessions(ctx, ListOptions{Limit: 1})
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}
