//go:build !linux

package cputime

import "time"

// Thread is not measured here: benchmarks report 0.
func Thread() time.Duration { return 0 }
