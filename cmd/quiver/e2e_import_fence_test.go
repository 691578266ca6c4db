package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// TestImportedFilesystemReadsWithoutACard: after quiver import of a
// Claude Desktop config, a read inside the folder the host gave
// server-filesystem runs as it did in the host, without a card (issue 29).
func TestImportedFilesystemReadsWithoutACard(t *testing.T) {
	t.Parallel()
	script := filesystemServer(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "projects")
	os.Mkdir(work, 0o700)
	os.WriteFile(filepath.Join(work, "notes.txt"), []byte("the imported folder\n"), 0o600)
	host, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"filesystem": map[string]any{"command": "node", "args": []string{script, work}},
	}})
	hostFile, cfg := filepath.Join(dir, "claude_desktop_config.json"), filepath.Join(dir, "quiver", "servers.yaml")
	os.WriteFile(hostFile, host, 0o600)
	if code, out, errOut := runEnv(noEnv, "import", "--from", hostFile, "--write", "--config", cfg); code != exitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out, errOut)
	}
	written, _ := os.ReadFile(cfg)
	h := startQuiver(t, "", hostOptions{args: []string{"--config", cfg}})
	h.searchUntil("read a text file", "filesystem__read_text_file")
	res := h.call("filesystem__read_text_file", map[string]any{"path": filepath.Join(work, "notes.txt")})
	if res.IsError || !strings.Contains(toolresult.Text(res), "the imported folder") {
		t.Fatalf("a read inside the imported folder must run without a card:\n%s\n(servers.yaml:\n%s)", toolresult.Text(res), written)
	}
}
