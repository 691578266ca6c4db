package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// TestHTTPTokenIsProtectedAndRedacted: the bearer token of "serve --http"
// lets anyone in, so no tool may read its file, even inside the fence,
// and a result that carries it (a server echoing what it was given) shows
// [redacted:QUIVER_AUTH_TOKEN] instead, also after servers.yaml reloads.
func TestHTTPTokenIsProtectedAndRedacted(t *testing.T) {
	const token = "e2e-token-0123456789abcdef"
	for _, tc := range []struct {
		name     string
		fromFile bool
	}{{"file", true}, {"env", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tokenFile := filepath.Join(dir, "token")
			if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := fencedExample(dir)
			var args, env []string
			if tc.fromFile {
				args = []string{"--auth-token-file", tokenFile}
			} else {
				env = []string{"QUIVER_AUTH_TOKEN=" + token}
			}
			q := startHTTPQuiver(t, "127.0.0.1", cfg, args, env)
			h := q.connect(t, map[string]string{"Authorization": "Bearer " + token})
			h.waitTools("example__echo")
			if tc.fromFile {
				wantRefusal(t, h.call("read_file", map[string]any{"path": tokenFile}), "deny.protected_path")
			} else {
				// Only the file named by --auth-token-file is quiver's.
				if res := h.call("read_file", map[string]any{"path": tokenFile}); res.IsError || strings.Contains(toolresult.Text(res), token) {
					t.Fatalf("read_file of a file that holds the token, inside the fence: %s", toolresult.Text(res))
				}
			}
			echoRedacted := func(when string) {
				t.Helper()
				res := h.call("example__echo", map[string]any{"said": "the token is " + token})
				if got := toolresult.Text(res); res.IsError || strings.Contains(got, token) || !strings.Contains(got, "[redacted:QUIVER_AUTH_TOKEN]") {
					t.Fatalf("%s, a result holding the token must show [redacted:QUIVER_AUTH_TOKEN]: %s", when, got)
				}
			}
			echoRedacted("at start")

			// A reload parses servers.yaml afresh; the token stays a secret.
			if err := os.WriteFile(q.config, []byte(cfg+"# reloaded\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(q.logs.String(), "config: reloaded") {
				if time.Now().After(deadline) {
					t.Fatalf("servers.yaml was never reloaded:\n%s", q.logs)
				}
				time.Sleep(50 * time.Millisecond)
			}
			h.waitTools("example__echo")
			echoRedacted("after a reload")
			if strings.Contains(q.logs.String(), token) {
				t.Errorf("the log shows the token:\n%s", q.logs)
			}
		})
	}
}
