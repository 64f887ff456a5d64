package run

import (
	"context"

	"github.com/weft-run/weft/store"
)

// FollowStore makes the runs' event streams of this node follow the run
// events other nodes commit, until ctx ends: n (a store shared by several
// nodes, store/postgres) announces every append, and the event log of a
// run written elsewhere wakes its readers, who read the new events from
// the store (eventlog.Observe, as the session service does for
// sessions). A Resync re-reads every followed run's last seq.
func (m *Service) FollowStore(ctx context.Context, n store.Notifier) error {
	ch, err := n.Notifications(ctx)
	if err != nil {
		return err
	}
	go func() {
		for x := range ch {
			switch {
			case x.Resync:
				if err := m.elog.Resync(ctx); err != nil && ctx.Err() == nil {
					m.log.Warn("re-reading followed runs after missed announcements failed", "error", err)
				}
			case x.Kind == "run":
				m.elog.Observe(x.ID, x.Seq)
			}
		}
	}()
	return nil
}
