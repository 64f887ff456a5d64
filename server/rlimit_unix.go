//go:build unix

package server

import "syscall"

// fdLimit is the process's file descriptor limit (the soft one, which the
// Go runtime raises to the hard one at start), 0 when unknown.
func fdLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}
