package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weft-run/weft/record"
)

const (
	defaultListLimit = 50
	maxListLimit     = 500
)

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos converts t to its stored form; what refuses is a time UnixNano
// cannot represent, which would otherwise be stored as garbage.
func nanos(what string, t time.Time) (int64, error) {
	if t.Before(minTime) || t.After(maxTime) {
		return 0, fmt.Errorf("postgres: %s %s is outside the storable range (years 1678 to 2262)", what, t.Format(time.RFC3339))
	}
	return t.UnixNano(), nil
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// now is the store's clock, rounded to what it stores.
func now() time.Time { return fromNanos(time.Now().UnixNano()) }

// jsonText validates raw JSON for a nullable TEXT column: nil stays NULL.
func jsonText(what string, raw json.RawMessage) (*string, error) {
	if raw == nil {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("postgres: %s is not valid JSON", what)
	}
	s := string(raw)
	return &s, nil
}

// rawOrNil reads a nullable JSON TEXT column back byte for byte.
func rawOrNil(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// cloneRaw keeps a returned value from aliasing the caller's buffer.
func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// optNanos stores an optional time: zero is NULL.
func optNanos(what string, t time.Time) (*int64, error) {
	if t.IsZero() {
		return nil, nil
	}
	n, err := nanos(what, t)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// fromOptNanos reads an optional time back: NULL is zero.
func fromOptNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return fromNanos(*n)
}

// utcOrZero is t as it will read back: UTC without a monotonic reading.
func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return fromNanos(t.UnixNano())
}

func notFound(id string) error { return notFoundErr("session", id) }

func notFoundErr(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, record.ErrNotFound)
}

func existsErr(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, record.ErrExists)
}

// affected turns a write's tag into none when it changed no row.
func affected(tag pgconn.CommandTag, none error) error {
	if tag.RowsAffected() == 0 {
		return none
	}
	return nil
}

func requireID(kind, id string) error {
	if id == "" {
		return errors.New("postgres: " + kind + ": empty id")
	}
	return nil
}

func createdUpdated(created, updated *time.Time) (int64, int64, error) {
	if created.IsZero() {
		*created = now()
	}
	if updated.IsZero() {
		*updated = *created
	}
	c, err := nanos("created_at", *created)
	if err != nil {
		return 0, 0, err
	}
	u, err := nanos("updated_at", *updated)
	if err != nil {
		return 0, 0, err
	}
	*created, *updated = fromNanos(c), fromNanos(u)
	return c, u, nil
}

// octets is s for a BYTEA column (see migration 0001): never nil, which
// pgx would send as NULL.
func octets(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}

func noRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// retryable reports a transaction PostgreSQL aborted to break a deadlock
// or a serialization conflict: running it again is correct.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
