package store

import (
	"context"
	"errors"
	"time"

	"github.com/weft-run/weft/record"
)

// ErrLeaseLost is returned by Leases.RenewLease when the lease expired or
// passed to another holder: whatever the holder was doing under it may now
// be done by someone else, and it must stop.
var ErrLeaseLost = errors.New("store: lease lost")

// Leases is implemented by stores shared by several nodes
// (store/postgres): named pieces of work (a session's turns, a run, the
// scheduler) held by one node at a time, by the database's clock, so that
// a node that dies without a word loses them when they expire.
type Leases interface {
	// AcquireLease takes name for holder for ttl if it is free, expired or
	// holder's already (then it is extended, same epoch). ok is false, with
	// the current holder's lease, when another holder's lease is live.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (l record.Lease, ok bool, err error)
	// RenewLease extends l for ttl from now; ErrLeaseLost when it is no
	// longer l's.
	RenewLease(ctx context.Context, l record.Lease, ttl time.Duration) (record.Lease, error)
	// ReleaseLease gives l back if it is still l's, and says whether it was.
	ReleaseLease(ctx context.Context, l record.Lease) (bool, error)
	// ListLeases returns the live leases, by name.
	ListLeases(ctx context.Context) ([]record.Lease, error)
}
