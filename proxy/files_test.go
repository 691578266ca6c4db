package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// read_file opens the path the gate resolved, so what it reads is the file
// the fence judged: a link swapped after the decision cannot redirect it.
func TestReadFileOpensWhatTheGateResolved(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "sub"), 0o700)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the notes"), 0o600)
	os.Symlink(filepath.Join(root, "notes.txt"), filepath.Join(root, "link"))
	c := inProcess(t, "fence:\n  allowed_dirs: ["+root+"]\n", mcp.InitializeRequest{})
	ctx := context.Background()
	for _, p := range []string{
		filepath.Join(root, "notes.txt"),
		filepath.Join(root, "link"),
		filepath.Join(root, "sub", "..", "notes.txt"),
	} {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "read_file", map[string]any{"path": p}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); res.IsError || !strings.Contains(got, "the notes") {
			t.Errorf("read_file %q: %s", p, got)
		}
	}
}

// read_file does not open what is not a file: opening a FIFO waits for a
// writer that may never come (red team: the call hung).
func TestReadFileRefusesAFIFO(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(root, "pipe")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	c := inProcess(t, "fence:\n  allowed_dirs: ["+root+"]\n", mcp.InitializeRequest{})
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "read_file", map[string]any{"path": fifo}
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := c.CallTool(context.Background(), req)
		done <- res
	}()
	select {
	case res := <-done:
		if res == nil || !res.IsError || !strings.Contains(text(res), "not a regular file") {
			t.Fatalf("read_file of a FIFO: %v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("read_file of a FIFO hung")
	}
}
