package sqlite

import (
	"context"
	"fmt"
)

// Ping checks that the database answers: a read of the schema through the
// read pool (so the file itself is read, not only a connection's state),
// and the write connection, which must come free within ctx (a writer
// stuck for longer is as good as unavailable). After Close it fails.
func (db *DB) Ping(ctx context.Context) error {
	var n int
	if err := db.r.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
		return fmt.Errorf("sqlite: %s: %w", db.path, err)
	}
	if err := db.w.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: %s: %w", db.path, err)
	}
	return nil
}
