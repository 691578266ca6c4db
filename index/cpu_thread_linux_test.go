package index

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling thread's CPU time. Around a call made with the
// goroutine locked to its thread, it is the call's own work: what a
// shared machine's other processes take from it is not counted, as it is
// in wall time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
