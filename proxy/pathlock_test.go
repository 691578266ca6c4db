package proxy

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A move through quiver never runs between another call's path check and
// its downstream open: a read of a judged path holds the path lock until
// its server answers, and a move (a write) waits for it. Reads share it.
func TestPathLockKeepsMovesOutOfAReadsWindow(t *testing.T) {
	dir := t.TempDir()
	readStarted, finishRead := make(chan struct{}, 4), make(chan struct{})
	var reading, movedDuringRead atomic.Int32
	fs := server.NewMCPServer("fs", "1.0.0", server.WithToolCapabilities(false))
	fs.AddTool(mcp.NewTool("read_text", mcp.WithString("path"), mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			reading.Add(1)
			defer reading.Add(-1)
			readStarted <- struct{}{}
			<-finishRead
			return mcp.NewToolResultText("read"), nil
		})
	fs.AddTool(mcp.NewTool("move", mcp.WithString("source"), mcp.WithString("destination"),
		mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if reading.Load() > 0 {
				movedDuringRead.Add(1)
			}
			return mcp.NewToolResultText("moved"), nil
		})
	_, c := newInProcessServer(t, fmt.Sprintf(`
surface:
  reveal: direct
servers:
  fs:
    command: in-process
fence:
  allowed_dirs: [%q]
policy:
  defaults: {read: allow, write: allow, destructive: allow}
`, dir), Options{}, map[string]*server.MCPServer{"fs": fs})
	call := func(c *client.Client, name string, args map[string]any) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := c.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			t.Errorf("%s: %v %+v", name, err, res)
		}
	}
	path := filepath.Join(dir, "A", "f.txt")
	reads := make(chan struct{})
	for range 2 {
		go func() {
			call(c, "fs__read_text", map[string]any{"path": path})
			reads <- struct{}{}
		}()
	}
	for range 2 { // both reads are in flight at once: reads share the lock
		select {
		case <-readStarted:
		case <-time.After(10 * time.Second):
			t.Fatal("two reads of judged paths did not run side by side")
		}
	}
	moved := make(chan struct{})
	go func() {
		call(c, "fs__move", map[string]any{"source": filepath.Join(dir, "A"), "destination": filepath.Join(dir, "C")})
		close(moved)
	}()
	select {
	case <-moved:
		t.Fatal("a move ran while reads were between their check and their server's answer")
	case <-time.After(300 * time.Millisecond):
	}
	close(finishRead)
	<-reads
	<-reads
	select {
	case <-moved:
	case <-time.After(10 * time.Second):
		t.Fatal("the move did not run after the reads ended")
	}
	if n := movedDuringRead.Load(); n != 0 {
		t.Fatalf("%d moves ran during a read", n)
	}
}
