package cputime

import (
	"time"

	"golang.org/x/sys/unix"
)

// Thread is the calling thread's CPU time. Around a call made with the
// goroutine locked to its thread (runtime.LockOSThread), it is the call's
// own work.
func Thread() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
