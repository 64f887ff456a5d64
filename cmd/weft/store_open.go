package main

import (
	"net/url"
	"strings"
)

// isPostgresDSN reports whether dsn names a PostgreSQL database.
func isPostgresDSN(dsn string) bool {
	scheme, _, ok := strings.Cut(dsn, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// storeDisplay is dsn as it may be printed: a PostgreSQL URL without its
// password (which may be in the URL itself or in its query), a SQLite
// path as it is.
func storeDisplay(dsn string) string {
	if !isPostgresDSN(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}
