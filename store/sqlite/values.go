package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weft-run/weft/record"
)

// notFoundErr is the error for an unknown id of the given kind ("run",
// "workflow", ...).
func notFoundErr(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, record.ErrNotFound)
}

// existsErr is the error for a taken id of the given kind.
func existsErr(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, record.ErrExists)
}

// affected turns a write's result into ErrNotFound (op changed no row) or
// ErrExists (a create changed no row), according to none.
func affected(res sql.Result, none error) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	if n == 0 {
		return none
	}
	return nil
}

// optNanos stores an optional time: zero is NULL.
func optNanos(what string, t time.Time) (any, error) {
	if t.IsZero() {
		return nil, nil
	}
	return nanos(what, t)
}

// fromOptNanos reads an optional time back: NULL is zero.
func fromOptNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

// rawOrNil reads a nullable JSON TEXT column back byte for byte.
func rawOrNil(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// requireID refuses an empty id, which no lookup could find again.
func requireID(kind, id string) error {
	if id == "" {
		return errors.New("sqlite: " + kind + ": empty id")
	}
	return nil
}

// createdUpdated fills a new record's CreatedAt and UpdatedAt (when zero)
// and returns their stored forms.
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
