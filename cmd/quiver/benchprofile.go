//go:build benchprofile

package main

import (
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
)

// A quiver built with -tags benchprofile profiles itself for the
// benchmarks (bench_test.go): with QUIVER_PROFILE_PREFIX set it records
// CPU from the start, and on SIGUSR1 writes PREFIX.cpu.pprof and
// PREFIX.allocs.pprof, then PREFIX.done. Release builds have none of it.
func init() {
	prefix := os.Getenv("QUIVER_PROFILE_PREFIX")
	if prefix == "" {
		return
	}
	cpu, err := os.Create(prefix + ".cpu.pprof")
	if err != nil || pprof.StartCPUProfile(cpu) != nil {
		return
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		pprof.StopCPUProfile()
		cpu.Close()
		if f, err := os.Create(prefix + ".allocs.pprof"); err == nil {
			runtime.GC()
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		os.WriteFile(prefix+".done", nil, 0o600)
	}()
}
