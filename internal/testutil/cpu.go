package testutil

import (
	"syscall"
	"time"
)

// OwnCPU is the CPU time this process has used so far, user and system: a benchmark's
// cost that other work on a shared machine does not inflate as it does the time per
// operation.
func OwnCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
