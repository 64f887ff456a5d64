// Package leasetest has what tests of several nodes share about leases.
package leasetest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// ErrKilled is what a killed node's lease store answers.
var ErrKilled = errors.New("node killed")

// Mortal is a node's lease store that dies on Kill: every lease call fails
// from then on, as for a node killed with SIGKILL. Its leases are neither
// renewed nor handed back: they expire, and another node may take them.
type Mortal struct {
	store.Leases
	dead atomic.Bool
}

// Kill makes every later lease call fail.
func (m *Mortal) Kill() { m.dead.Store(true) }

func (m *Mortal) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (record.Lease, bool, error) {
	if m.dead.Load() {
		return record.Lease{}, false, ErrKilled
	}
	return m.Leases.AcquireLease(ctx, name, holder, ttl)
}

func (m *Mortal) RenewLease(ctx context.Context, l record.Lease, ttl time.Duration) (record.Lease, error) {
	if m.dead.Load() {
		return record.Lease{}, ErrKilled
	}
	return m.Leases.RenewLease(ctx, l, ttl)
}

func (m *Mortal) ReleaseLease(ctx context.Context, l record.Lease) (bool, error) {
	if m.dead.Load() {
		return false, ErrKilled
	}
	return m.Leases.ReleaseLease(ctx, l)
}
