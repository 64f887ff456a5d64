//go:build !unix

package sqlite

import "os"

// tryLock: no flock on this platform; the one-writer rule is not enforced
// here (documented in docs/architecture.md).
func tryLock(*os.File) (bool, error) { return true, nil }
