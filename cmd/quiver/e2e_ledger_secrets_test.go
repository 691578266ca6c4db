package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLedgerFileHoldsNoSecretE2E: calls refused for arguments that hold a
// configured secret leave no trace of it in the ledger's files, read as
// bytes while quiver runs (the database, its WAL, the start journal):
// quiver's output was redacted, the SQLite file was not (issue 22).
func TestLedgerFileHoldsNoSecretE2E(t *testing.T) {
	const secret = "Zq8xV2kLw9pTledger"
	home := t.TempDir()
	h, _, state := launch{env: []string{"RT_SECRET=" + secret}, home: home, cfg: fmt.Sprintf(`
surface:
  reveal: direct
servers:
  mini:
    command: %q
    env: {%s: "1", RT_SECRET: "${RT_SECRET}"}
policy:
  rules:
    - {tool: "mini__spell", action: deny}
`, testBinary(t), spellingsEnv)}.start(t)
	h.waitTools("mini__spell")
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"mini__spell", map[string]any{"how": "key " + secret}},
		{"call_tool", map[string]any{"name": "mini__" + secret, "arguments": map[string]any{}}},
		{"request_capability", map[string]any{"capability": "read_outside_fence", "path": "/outside/" + secret, "reason": "to read " + secret}},
	} {
		h.call(call.name, call.args)
	}
	// The refusals are written in the background: wait until the audit
	// shows them, then read the files as they are.
	deadline := time.Now().Add(20 * time.Second)
	for {
		entries, _ := auditEntries(t, state)
		if refusals(entries) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refusals never reached the ledger: %v", entries)
		}
		time.Sleep(100 * time.Millisecond)
	}
	files := 0
	err := filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("kLw9pT")) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "ledger.db-wal")); err != nil {
		t.Fatalf("control: no WAL to read while quiver runs: %v (%d files read)", err, files)
	}
}
