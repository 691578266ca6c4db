package main

import (
	"errors"
	"os"
	"syscall"
)

// processAlive reports whether a process with this pid exists, on every
// OS: on unix signal 0 probes it (EPERM: it exists, someone else's); on
// Windows finding it opens it, which fails once it is gone, and Signal
// then refuses any signal but Kill, which still means it exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	switch {
	case err == nil:
		return true
	case errors.Is(err, os.ErrProcessDone), errors.Is(err, syscall.ESRCH):
		return false
	}
	return true
}
