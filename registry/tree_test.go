package registry

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// startTreeChild starts this test binary as an idle child set up the way
// conn.transport sets up a stdio server, and takes charge of its tree.
func startTreeChild(t *testing.T, pids string, grandchild bool) (*exec.Cmd, *tree) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=idle", childPidDirEnv+"="+pids)
	if grandchild {
		cmd.Env = append(cmd.Env, childGrandchildEnv+"=1")
	}
	cmd.SysProcAttr = childAttrs()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tr, err := superviseTree(cmd.Process)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("superviseTree: %v", err)
	}
	return cmd, tr
}

// TestTreeKillTakesWhatTheServerLeftBehind: a server that exits (or is
// killed) leaves its own child running; killing the tree ends it.
func TestTreeKillTakesWhatTheServerLeftBehind(t *testing.T) {
	t.Parallel()
	needProc(t)
	pids := t.TempDir()
	cmd, tr := startTreeChild(t, pids, true)
	eventually(t, 5*time.Second, "the child's and the grandchild's pids", func() bool { return len(pidsIn(t, pids)) == 2 })
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	var orphan int
	for _, pid := range pidsIn(t, pids) {
		if pid != cmd.Process.Pid {
			orphan = pid
		}
	}
	if !running(orphan) {
		t.Fatalf("the grandchild %d died with its parent; the test proves nothing", orphan)
	}
	if err := tr.kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	eventually(t, 5*time.Second, "the grandchild gone", func() bool { return !running(orphan) })
}

// TestTreeKillOfAnEmptyTreeIsNoError: the sweep after a clean stop finds
// nothing left, which is the usual case and no failure to report.
func TestTreeKillOfAnEmptyTreeIsNoError(t *testing.T) {
	t.Parallel()
	cmd, tr := startTreeChild(t, t.TempDir(), false)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := tr.kill(); err != nil {
		t.Errorf("kill of a tree with nothing left: %v", err)
	}
}
