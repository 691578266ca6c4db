package gate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// ProcessAlive reports whether a process with this pid is running: on
// unix signal 0 probes it (EPERM: it exists, someone else's); on Windows
// finding it opens it, which fails once it is gone, and Signal then
// refuses any signal but Kill, which still means it exists. A zombie (it
// exited, its parent has not waited for it yet) is not running.
func ProcessAlive(pid int) bool { return processAlive(pid, 0) }

// processAlive is ProcessAlive for the process that had pid when start
// was its start time (processStart; 0 when the OS did not say): a pid
// reused by a later process is not the one recorded.
func processAlive(pid int, start int64) bool {
	if pid <= 0 {
		return false // 0 and -1 would probe a process group
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	if errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH) {
		return false
	}
	st, err := readProcStat(pid)
	if err != nil {
		return true // no /proc: the signal is all there is to know
	}
	return !st.zombie && (start == 0 || st.start == start)
}

// processStart is pid's start time as processAlive compares it, or 0 where
// the OS does not give it.
func processStart(pid int) int64 {
	st, err := readProcStat(pid)
	if err != nil {
		return 0
	}
	return st.start
}

type procStat struct {
	zombie bool
	start  int64 // clock ticks after boot
}

// readProcStat reads Linux's /proc/<pid>/stat: the state (field 3) and
// the start time (field 22). The command name (field 2) is in parentheses
// and may hold spaces and parentheses itself: fields are counted after
// the last ')'.
func readProcStat(pid int) (procStat, error) {
	if runtime.GOOS != "linux" {
		return procStat{}, errors.ErrUnsupported
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err := strconv.ParseInt(string(f[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return procStat{zombie: string(f[0]) == "Z" || string(f[0]) == "X", start: start}, nil
}
