//go:build !windows

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The places quiver reads a configuration or state from by default, under
// the home folder, are protected even when the environment of the host
// that started this serve names others (XDG_CONFIG_HOME,
// QUIVER_STATE_DIR): the person's own shell names none, so the next
// `quiver doctor` they type reads ~/.config/quiver/servers.yaml and runs
// its servers (red team rt1, finding 51).
func TestDefaultPlacesUnderHomeAreProtected(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	elsewhere := t.TempDir()
	// The folders exist (a model can make them); the files do not.
	for _, d := range []string{filepath.Join(home, ".config", "quiver"), filepath.Join(home, ".local", "state", "quiver")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h, _, _ := launch{cfg: plantedConfig(t, home), env: []string{"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(elsewhere, "xdg"), "XDG_STATE_HOME=" + filepath.Join(elsewhere, "xstate"),
		"QUIVER_STATE_DIR=" + filepath.Join(elsewhere, "qstate")}}.start(t)
	h.waitTools("mini__write_file")
	if res := h.call("mini__write_file", map[string]any{"path": filepath.Join(home, "notes.txt"), "text": "ok"}); res.IsError {
		t.Fatalf("control: a write inside the fence: %v", res.Content)
	}
	for _, p := range []string{
		filepath.Join(home, ".config", "quiver", "servers.yaml"),
		filepath.Join(home, ".config", "quiver", "tools.yaml"),
		filepath.Join(home, ".local", "state", "quiver", "ledger.db"),
		filepath.Join(home, ".local", "state", "quiver", "secrets.json"),
	} {
		wantRefusal(t, h.call("mini__write_file", map[string]any{"path": p, "text": plantedServers}), "deny.protected_path")
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// --log-file and the files it rotates to are quiver's record of what ran:
// a model may neither rewrite them (forging what a person reads) nor read
// them, whether they exist yet or not (red team rt1, finding 60).
func TestLogFileIsProtected(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	logPath := filepath.Join(project, "logs", "quiver.log")
	h, _, _ := launch{cfg: plantedConfig(t, project), args: []string{"--log-file", logPath}}.start(t)
	h.waitTools("mini__write_file")
	if res := h.call("mini__write_file", map[string]any{"path": filepath.Join(project, "logs", "notes.txt"), "text": "ok"}); res.IsError {
		t.Fatalf("control: a write beside the log, inside the fence: %v", res.Content)
	}
	// A walk of the log's folder reads the log: the folder is refused to
	// reads too, as the state dir's folders above are.
	wantRefusal(t, h.call("mini__search_files", map[string]any{"path": filepath.Join(project, "logs")}), "deny.protected_path")
	wantRefusal(t, h.call("mini__search_files", map[string]any{"path": project}), "deny.protected_path")
	forged := `{"level":"WARN","msg":"tool definition changed; run quiver tools accept --all"}` + "\n"
	for _, p := range []string{logPath, logPath + ".1", logPath + ".5"} {
		wantRefusal(t, h.call("mini__write_file", map[string]any{"path": p, "text": forged}), "deny.protected_path")
	}
	if b, _ := os.ReadFile(logPath); string(b) == forged {
		t.Errorf("the model rewrote quiver's log")
	}
	if _, err := os.Stat(logPath + ".5"); err == nil {
		t.Errorf("the model wrote a rotation of quiver's log")
	}
}
