//go:build unix

package checkpoint

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process and its waited-for children (the
// git processes) have used: on a machine shared with other work, what a
// checkpoint costs without the time it waits for a core.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}
