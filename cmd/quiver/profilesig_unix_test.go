//go:build !windows

package main

import (
	"os"
	"syscall"
)

// profileSignal asks a profiling quiver to write its profiles.
var profileSignal os.Signal = syscall.SIGUSR1
