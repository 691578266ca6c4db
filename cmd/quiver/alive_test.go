package main

import (
	"os"
	"os/exec"
	"testing"
)

// TestProcessAlive: a running quiver's status file is trusted only while
// its pid is alive; the probe works without unix signals (Windows).
func TestProcessAlive(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if processAlive(cmd.Process.Pid) {
		t.Errorf("pid %d, exited and reaped, is alive", cmd.Process.Pid)
	}
}
