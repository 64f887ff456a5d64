package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// Lease is a named piece of work held by one holder; see record.Lease.
type Lease = record.Lease

// ErrLeaseLost is store.ErrLeaseLost.
var ErrLeaseLost = store.ErrLeaseLost

var _ store.Leases = (*DB)(nil)

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("postgres: lease ttl %v is below 1ms", ttl)
	}
	return nil
}

// AcquireLease takes the lease name for holder for ttl, if it is free,
// expired, or holder's already (then it is extended, same epoch). ok is
// false, with the current holder's lease, when another holder's lease is
// live. One statement: of several nodes racing for a free lease, exactly
// one gets it.
func (db *DB) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (l Lease, ok bool, err error) {
	if name == "" || holder == "" {
		return Lease{}, false, errors.New("postgres: acquire lease: empty name or holder")
	}
	if err := checkTTL(ttl); err != nil {
		return Lease{}, false, err
	}
	row := db.pool.QueryRow(ctx, `INSERT INTO leases AS l (name, holder, epoch, acquired_at, expires_at)
		VALUES ($1, $2, 1, clock_timestamp(), clock_timestamp() + $3 * interval '1 microsecond')
		ON CONFLICT (name) DO UPDATE SET
			holder = excluded.holder,
			expires_at = excluded.expires_at,
			acquired_at = CASE WHEN l.holder = excluded.holder AND l.expires_at > clock_timestamp()
				THEN l.acquired_at ELSE excluded.acquired_at END,
			epoch = CASE WHEN l.holder = excluded.holder AND l.expires_at > clock_timestamp()
				THEN l.epoch ELSE l.epoch + 1 END
		WHERE l.holder = excluded.holder OR l.expires_at <= clock_timestamp()
		RETURNING name, holder, epoch, acquired_at, expires_at`, name, holder, ttl.Microseconds())
	l, err = scanLease(row)
	if err == nil {
		return l, true, nil
	}
	if !noRows(err) {
		return Lease{}, false, fmt.Errorf("postgres: acquire lease %q: %w", name, err)
	}
	l, err = scanLease(db.pool.QueryRow(ctx, `SELECT name, holder, epoch, acquired_at, expires_at FROM leases WHERE name = $1`, name))
	if noRows(err) {
		// Released between the two statements: try again, once is enough
		// to be correct (the caller polls anyway).
		return db.AcquireLease(ctx, name, holder, ttl)
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("postgres: acquire lease %q: %w", name, err)
	}
	return l, false, nil
}

// RenewLease extends l (its holder, at its epoch) for ttl from now, by
// the database's clock; ErrLeaseLost when it is no longer l's.
func (db *DB) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := checkTTL(ttl); err != nil {
		return Lease{}, err
	}
	out, err := scanLease(db.pool.QueryRow(ctx, `UPDATE leases SET expires_at = clock_timestamp() + $4 * interval '1 microsecond'
		WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > clock_timestamp()
		RETURNING name, holder, epoch, acquired_at, expires_at`, l.Name, l.Holder, l.Epoch, ttl.Microseconds()))
	if noRows(err) {
		return Lease{}, fmt.Errorf("lease %q of %q (epoch %d): %w", l.Name, l.Holder, l.Epoch, ErrLeaseLost)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("postgres: renew lease %q: %w", l.Name, err)
	}
	return out, nil
}

// ReleaseLease gives l back, if it is still l's (a lease that passed to
// another holder is left alone). It reports whether it released it.
func (db *DB) ReleaseLease(ctx context.Context, l Lease) (bool, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2 AND epoch = $3`, l.Name, l.Holder, l.Epoch)
	if err != nil {
		return false, fmt.Errorf("postgres: release lease %q: %w", l.Name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ListLeases returns the live leases, by name.
func (db *DB) ListLeases(ctx context.Context) ([]Lease, error) {
	rows, err := db.pool.Query(ctx, `SELECT name, holder, epoch, acquired_at, expires_at FROM leases
		WHERE expires_at > clock_timestamp() ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("postgres: list leases: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) { return scanLease(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list leases: %w", err)
	}
	if out == nil {
		out = []Lease{}
	}
	return out, nil
}

func scanLease(row pgx.Row) (Lease, error) {
	var l Lease
	if err := row.Scan(&l.Name, &l.Holder, &l.Epoch, &l.AcquiredAt, &l.ExpiresAt); err != nil {
		return Lease{}, err
	}
	l.AcquiredAt, l.ExpiresAt = l.AcquiredAt.UTC(), l.ExpiresAt.UTC()
	return l, nil
}
