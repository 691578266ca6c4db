package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/proxy"
)

// TestOverlongRequestLineIsAnswered: a request line of 64 MiB on stdio is
// answered at once with a JSON-RPC error for its id (which the TypeScript
// SDK writes last), without quiver holding it in memory, and the next
// request is served (issue 22: one of two tries was never answered, and
// quiver peaked at 289 MiB).
func TestOverlongRequestLineIsAnswered(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(exampleConfig("auto", "")), 0o600)
	cmd := exec.Command(quiverBin, "serve", "--config", cfg, "--state-dir", dir, "--log-level", "error")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	answers := make(chan map[string]any, 16)
	go func() {
		r := bufio.NewReader(stdout)
		for {
			l, err := r.ReadBytes('\n')
			if err != nil {
				close(answers)
				return
			}
			var m map[string]any
			if json.Unmarshal(l, &m) == nil {
				if _, isNote := m["method"]; !isNote {
					answers <- m
				}
			}
		}
	}()
	answer := func(what string) map[string]any {
		t.Helper()
		select {
		case m, ok := <-answers:
			if !ok {
				t.Fatalf("%s: quiver closed stdout", what)
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer in 30 s", what)
		}
		return nil
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	if m := answer("initialize"); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")

	// 64 MiB of arguments, the id after them, written as it streams.
	const size = 64 << 20
	io.WriteString(stdin, `{"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"`)
	chunk := strings.Repeat("a", 1<<20)
	for range size >> 20 {
		if _, err := io.WriteString(stdin, chunk); err != nil {
			t.Fatalf("quiver stopped reading: %v", err)
		}
	}
	io.WriteString(stdin, `"}},"jsonrpc":"2.0","id":42}`+"\n")
	m := answer("the 64 MiB request")
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32600) || m["id"] != float64(42) ||
		!strings.Contains(fmt.Sprint(e["message"]), strconv.Itoa(proxy.MaxRequestLine)) || !strings.Contains(fmt.Sprint(e["message"]), "Send less") {
		t.Fatalf("want a -32600 error for id 42 saying the limit and what to do, got %v", m)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":43,"method":"tools/list"}`+"\n")
	if m := answer("tools/list after it"); m["result"] == nil || m["id"] != float64(43) {
		t.Fatalf("tools/list after the long line: %v", m)
	}
	if runtime.GOOS == "linux" {
		// Bounded memory: quiver's peak stays far below the line's size.
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(status), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
				kb, _ := strconv.Atoi(f[1])
				if kb > 128<<10 {
					t.Errorf("quiver's peak memory was %d MiB reading a 64 MiB line", kb>>10)
				}
			}
		}
	}
}
