package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

var _ store.Commands = (*DB)(nil)

// Command kinds announced besides "session" and "run": a command added
// for a session, and one done (both with the command's id as the seq).
const (
	NotifyCommand = "command"
	NotifyResult  = "result"
)

// AddCommand implements store.Commands: the insert and its announcement
// commit together, so the owner hears of a command only once it can read
// it, and a command that is stored is announced (a node killed between
// the two is not a case: there is no between).
func (db *DB) AddCommand(ctx context.Context, sessionID, kind string, data json.RawMessage) (int64, error) {
	if kind == "" || !json.Valid(data) {
		return 0, errors.New("postgres: add command: empty kind or invalid data")
	}
	var id int64
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO session_commands (session_id, kind, data, created_at)
			SELECT id, $2, $3, $4 FROM sessions WHERE id = $1 RETURNING id`,
			sessionID, kind, string(data), time.Now().UnixNano()).Scan(&id)
		if noRows(err) {
			return notFound(sessionID)
		}
		if err != nil {
			return err
		}
		return db.announce(ctx, tx, NotifyCommand, id, sessionID)
	})
	if err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return 0, err
		}
		return 0, fmt.Errorf("postgres: add command to session %q: %w", sessionID, err)
	}
	return id, nil
}

func (db *DB) announce(ctx context.Context, tx pgx.Tx, kind string, seq int64, id string) error {
	if len(id) > maxNotifyID {
		return nil // followed by polling only, as appends
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', $1)`, kind+" "+strconv.FormatInt(seq, 10)+" "+id)
	return err
}

const commandColumns = `id, session_id, kind, data, created_at, done_at, result`

func scanCommand(row pgx.Row) (store.Command, error) {
	var (
		c       store.Command
		data    string
		created int64
		done    *int64
		result  *string
	)
	if err := row.Scan(&c.ID, &c.SessionID, &c.Kind, &data, &created, &done, &result); err != nil {
		return store.Command{}, err
	}
	c.Data, c.CreatedAt, c.Done = json.RawMessage(data), fromNanos(created), done != nil
	if result != nil {
		c.Result = json.RawMessage(*result)
	}
	return c, nil
}

// PendingCommands implements store.Commands.
func (db *DB) PendingCommands(ctx context.Context, sessionID string) ([]store.Command, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+commandColumns+` FROM session_commands
		WHERE session_id = $1 AND done_at IS NULL ORDER BY id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending commands of %q: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Command, error) { return scanCommand(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: pending commands of %q: %w", sessionID, err)
	}
	return out, nil
}

// FinishCommand implements store.Commands, announcing the result.
func (db *DB) FinishCommand(ctx context.Context, id int64, result json.RawMessage) (bool, error) {
	if result == nil {
		result = json.RawMessage("null")
	}
	var done bool
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var sessionID string
		err := tx.QueryRow(ctx, `UPDATE session_commands SET done_at = $2, result = $3
			WHERE id = $1 AND done_at IS NULL RETURNING session_id`, id, time.Now().UnixNano(), string(result)).Scan(&sessionID)
		if noRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		done = true
		return db.announce(ctx, tx, NotifyResult, id, sessionID)
	})
	if err != nil {
		return false, fmt.Errorf("postgres: finish command %d: %w", id, err)
	}
	return done, nil
}

// GetCommand implements store.Commands.
func (db *DB) GetCommand(ctx context.Context, id int64) (store.Command, error) {
	c, err := scanCommand(db.pool.QueryRow(ctx, `SELECT `+commandColumns+` FROM session_commands WHERE id = $1`, id))
	if noRows(err) {
		return store.Command{}, notFoundErr("command", strconv.FormatInt(id, 10))
	}
	if err != nil {
		return store.Command{}, fmt.Errorf("postgres: get command %d: %w", id, err)
	}
	return c, nil
}

// PruneCommands implements store.Commands. Commands not done are never
// deleted.
func (db *DB) PruneCommands(ctx context.Context, before time.Time) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM session_commands WHERE done_at IS NOT NULL AND done_at < $1`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("postgres: prune commands: %w", err)
	}
	return tag.RowsAffected(), nil
}

// OrphanSessions implements store.Commands. The lease's liveness is by
// the database's clock, as the leases themselves.
func (db *DB) OrphanSessions(ctx context.Context, prefix string, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.pool.Query(ctx, `SELECT id FROM (
			SELECT id FROM sessions WHERE turn_accepted > turn_answered OR turn_running <> 0
			UNION
			SELECT DISTINCT session_id FROM session_commands WHERE done_at IS NULL) w
		WHERE NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = $1 || w.id AND l.expires_at > clock_timestamp())
		ORDER BY id LIMIT $2`, prefix, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: orphan sessions: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: orphan sessions: %w", err)
	}
	return out, nil
}
