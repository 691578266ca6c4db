package main

import "os"

// profileSignal is nil on Windows, which has no SIGUSR1: benchmarks there
// leave no profiles.
var profileSignal os.Signal
