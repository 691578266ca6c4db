package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// Red team 3, the path lock across an approval.

// approveAll is the person at the host, who allows each card once.
type approveAll struct{ shown atomic.Int32 }

func (a *approveAll) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.shown.Add(1)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "allow_once"}}}, nil
}

// TestRedTeam3SwapAfterApproval: the path lock is given back before the
// card is shown, and taken again only after the approved call has been
// evaluated again and its start recorded in the ledger. The model reads
// fenced/A/x/servers.yaml while its own move_file calls (each inside the
// fence) keep swapping A with B: when A/x links to a harmless folder
// outside the fence the read asks, and the person allows it; when it
// links to quiver's configuration folder the read is refused outright. A
// swap that lands between the re-evaluation and the retake sends the
// approved call to the server with A/x leading to quiver's folder, and
// the server opens quiver's own servers.yaml.
func TestRedTeam3SwapAfterApproval(t *testing.T) {
	script := filesystemServer(t)
	node := needTool(t, "node")
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inside, public, qdir := filepath.Join(base, "fenced"), filepath.Join(base, "public"), filepath.Join(base, "quiver")
	canary := "CANARY-" + randomWord(t)
	for _, d := range []string{filepath.Join(inside, "A"), filepath.Join(inside, "B"), public, qdir} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(public, "servers.yaml"), []byte("public: decoy\n"), 0o600)
	os.Symlink(public, filepath.Join(inside, "A", "x"))
	os.Symlink(qdir, filepath.Join(inside, "B", "x"))
	cfg := fmt.Sprintf(`# %s
surface:
  reveal: direct
servers:
  fs:
    command: %q
    args: [%q, "/"]
    path_base: roots
fence:
  allowed_dirs: [%q]
%s`, canary, node, script, inside, allowAll)
	cfgPath := filepath.Join(qdir, "servers.yaml")
	os.WriteFile(cfgPath, []byte(cfg), 0o600)
	card := &approveAll{}
	h := startQuiver(t, cfg, hostOptions{
		args:   []string{"--config", cfgPath, "--state-dir", filepath.Join(qdir, "state")},
		client: []client.ClientOption{client.WithElicitationHandler(card)},
	})
	h.waitTools("fs__move_file", "fs__read_text_file")
	if out := toolresult.Text(h.call("fs__read_text_file", map[string]any{"path": filepath.Join(inside, "B", "x", "servers.yaml")})); strings.Contains(out, canary) {
		t.Fatalf("control: reading quiver's servers.yaml through the link must be refused: %s", out)
	}
	f := swapFixture{inside: inside, canary: canary}
	leaked, n := f.raceRead(h, 45*time.Second, "fs__read_text_file", "servers.yaml")
	t.Logf("%d reads, %d cards", n, card.shown.Load())
	if card.shown.Load() == 0 {
		t.Fatalf("control: no card was shown")
	}
	if leaked != "" {
		t.Errorf("an approved read of a harmless file outside the fence returned quiver's own servers.yaml (a protected file no approval reaches): a move_file swap landed between the approved call's re-evaluation and the retake of the path lock: %.300s", leaked)
	}
}

// TestRedTeam3LogNotificationManySmallParts: a notification is bounded at
// the exit by cutting long strings; a log message whose data is 40,000
// one-character records (about 200 KB) reaches the host whole, over
