//go:build windows

package registry

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// A tree is a stdio server and every process it started, as one unit
// quiver can kill: on Windows a Job Object. npx starts cmd.exe, which
// starts node, which may start more; every process a member creates joins
// the job. The job is made with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and its
// handle is quiver's alone (not inheritable), so when quiver dies, however
// it dies, Windows closes the handle and kills the tree: what Pdeathsig
// does on Linux.
type tree struct{ job windows.Handle }

// superviseTree puts p, just started, into a new job. What p started
// before it joined escapes the job; the window is the few microseconds
// between CreateProcess and here, far shorter than any interpreter's
// start.
func superviseTree(p *os.Process) (*tree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("job object limits: %w", err)
	}
	// p is not reaped yet (its os.Process holds a handle), so its pid is
	// still its own.
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("open process %d: %w", p.Pid, err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("assign process %d to its job: %w", p.Pid, err)
	}
	return &tree{job: job}, nil
}

// kill kills every process left in the job, then closes it.
func (t *tree) kill() error {
	err := windows.TerminateJobObject(t.job, 1)
	if cerr := windows.CloseHandle(t.job); err == nil {
		err = cerr
	}
	return err
}
