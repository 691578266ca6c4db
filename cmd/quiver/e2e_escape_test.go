package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/escapecorpus"
	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// TestPathEscapesEndToEnd sends every attempt of the gate's corpus through
// quiver to the published filesystem server, started with root "/" so that
// quiver's fence is the only thing between the model and the disk. Every
// attempt must be refused by quiver itself: the server never sees it.
func TestPathEscapesEndToEnd(t *testing.T) {
	script := filesystemServer(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "fenced")
	outside := root + "-evil"
	corpus, sub, err := escapecorpus.Load("../../gate/testdata/escapes.json", root, outside)
	if err != nil {
		t.Fatal(err)
	}
	const secret = "TOP-SECRET-OUTSIDE"
	os.WriteFile(filepath.Join(outside, "x"), []byte(secret), 0o600)
	os.WriteFile(filepath.Join(outside, "sub", "x"), []byte(secret), 0o600)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
surface:
  reveal: direct
servers:
  filesystem:
    command: node
    args: [%q, "/"]
    cwd: %q
    # server-filesystem resolves a relative path against its allowed
    # folders (here "/"), not its working directory.
    path_base: roots
fence:
  allowed_dirs: [%q]
# write_file says it is destructive; allow that class here so that only
# the fence stands between an attempt and the disk.
policy:
  defaults: {destructive: allow}
`, script, root, root)), 0o600)
	// "~" must point outside the fence, as in the corpus.
	tr := transport.NewStdioWithOptions(quiverBin, []string{"HOME=" + outside},
		[]string{"serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--log-level", "error"})
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := &host{t: t, c: c, changed: make(chan struct{}, 64)}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(h.ctx(), init); err != nil {
		t.Fatal(err)
	}
	h.waitTools("filesystem__read_text_file", "filesystem__write_file")

	send := func(tool string, a escapecorpus.Attempt) *mcp.CallToolResult {
		raw := a.Arguments(sub)
		if tool == "filesystem__write_file" {
			raw = strings.TrimSuffix(strings.TrimSpace(raw), "}") + `,"content":"escaped"}`
		}
		return h.call(tool, raw)
	}
	escapes := 0
	for _, tool := range []string{"filesystem__read_text_file", "filesystem__write_file"} {
		for _, a := range corpus.Attempts {
			res := send(tool, a)
			out := toolresult.Text(res)
			refusedByQuiver := res.IsError && (strings.HasPrefix(out, "deny.") || strings.HasPrefix(out, "ask."))
			if !refusedByQuiver || strings.Contains(out, secret) {
				escapes++
				t.Errorf("%s %s: reached the server: %s", tool, a.Name, out)
			}
		}
	}
	// Controls keep the test honest: inside paths do reach the server.
	// Two of the gate's controls are inside only in a frame this server
	// does not have: it resolves "sub/../file.txt" against its allowed
	// folder "/", and reads "file:///..." as a relative name. In its frame
	// they lead outside, and quiver, judging there, must refuse them.
	outsideHere := map[string]bool{"inside_relative": true, "inside_file_uri": true}
	for _, tool := range []string{"filesystem__read_text_file", "filesystem__write_file"} {
		for _, a := range corpus.Controls {
			out := toolresult.Text(send(tool, a))
			refused := strings.HasPrefix(out, "deny.") || strings.HasPrefix(out, "ask.")
			if outsideHere[a.Name] {
				if !refused {
					t.Errorf("%s %s leads outside in the server's frame, yet reached it: %s", tool, a.Name, out)
				}
				continue
			}
			if refused {
				t.Errorf("%s control %s was refused by quiver: %s", tool, a.Name, out)
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "sub", "a.txt")); err != nil || string(b) != "escaped" {
		t.Errorf("the inside write control did not reach the disk: %q %v", b, err)
	}
	t.Logf("%d attempts x 2 tools, %d escapes", len(corpus.Attempts), escapes)
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a write through a dangling link created a file outside the fence")
	}
}
