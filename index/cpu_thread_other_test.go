//go:build !linux

package index

import "time"

// threadCPU is not measured here; benchmarks report 0.
func threadCPU() time.Duration { return 0 }
