//go:build unix

package registry

import (
	"os"
	"syscall"
)

// A tree is a stdio server and every process it started, as one unit
// quiver can kill: on unix the process group childAttrs made the server
// the leader of. npx starts node, which may start more; killing the
// server alone would leave them running.
type tree struct{ pgid int }

// superviseTree takes charge of p's tree, right after p started. On unix
// the group already exists (Setpgid), so nothing can fail here.
func superviseTree(p *os.Process) (*tree, error) {
	return &tree{pgid: p.Pid}, nil
}

// kill kills every process left in the tree: what the server started and
// left behind once the server itself has been reaped. The group's id
// cannot have been reused while a member still lives, and a group with
// no member left answers ESRCH, which is no failure.
func (t *tree) kill() error {
	if err := syscall.Kill(-t.pgid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}
