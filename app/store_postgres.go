//go:build !nopostgres

package app

import (
	"context"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres"
)

// openPostgres opens a PostgreSQL store; `-tags nopostgres` builds weft
// without it (and without pgx, about 6 MB).
func openPostgres(ctx context.Context, dsn string) (store.Store, error) {
	// Notify: other nodes' readers follow this node's appends.
	return postgres.Open(ctx, dsn, postgres.Options{Notify: true})
}

// isPostgres says whether st is a PostgreSQL store.
func isPostgres(st store.Store) bool {
	_, ok := st.(*postgres.DB)
	return ok
}
