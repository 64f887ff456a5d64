//go:build nopostgres

package app

import (
	"context"
	"errors"

	"github.com/weft-run/weft/store"
)

func openPostgres(context.Context, string) (store.Store, error) {
	return nil, errors.New("this weft was built with -tags nopostgres: no PostgreSQL store")
}

// isPostgres says whether st is a PostgreSQL store: never without it.
func isPostgres(store.Store) bool { return false }
