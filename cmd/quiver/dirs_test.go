package main

import (
	"os"
	"path/filepath"
	"testing"

	quiver "github.com/quiver-mcp/quiver"
)

// TestDirsPerOS: the config and state folders are where each OS keeps
// them, and the variables that move them are honored. The OS and the
// environment are injected, so every case runs on every machine (the
// separators are this machine's: filepath.Join builds both sides).
func TestDirsPerOS(t *testing.T) {
	j := filepath.Join
	for _, tc := range []struct {
		name, goos        string
		env               map[string]string
		config, stateWant string
	}{
		{"linux", "linux", map[string]string{"HOME": "/home/me"},
			j("/home/me", ".config"), j("/home/me", ".local", "state", "quiver")},
		{"linux XDG", "linux", map[string]string{"HOME": "/home/me", "XDG_CONFIG_HOME": "/xdg/c", "XDG_STATE_HOME": "/xdg/s"},
			"/xdg/c", j("/xdg/s", "quiver")},
		{"freebsd", "freebsd", map[string]string{"HOME": "/usr/home/me"},
			j("/usr/home/me", ".config"), j("/usr/home/me", ".local", "state", "quiver")},
		{"macOS", "darwin", map[string]string{"HOME": "/Users/me"},
			j("/Users/me", "Library", "Application Support"), j("/Users/me", "Library", "Application Support", "quiver", "state")},
		{"macOS XDG set", "darwin", map[string]string{"HOME": "/Users/me", "XDG_CONFIG_HOME": "/Users/me/.config", "XDG_STATE_HOME": "/Users/me/.local/state"},
			"/Users/me/.config", j("/Users/me/.local/state", "quiver")},
		{"windows", "windows", map[string]string{
			"USERPROFILE": `C:\Users\me`, "HOME": "/wrong", "AppData": `C:\Users\me\AppData\Roaming`, "LocalAppData": `C:\Users\me\AppData\Local`},
			`C:\Users\me\AppData\Roaming`, j(`C:\Users\me\AppData\Local`, "quiver", "state")},
		{"windows without AppData", "windows", map[string]string{"USERPROFILE": `C:\Users\me`},
			j(`C:\Users\me`, "AppData", "Roaming"), j(`C:\Users\me`, "AppData", "Local", "quiver", "state")},
		{"QUIVER_STATE_DIR wins", "windows", map[string]string{"QUIVER_STATE_DIR": `D:\q`, "XDG_STATE_HOME": "/xdg/s", "LocalAppData": `C:\L`, "AppData": `C:\R`},
			`C:\R`, `D:\q`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			if got := quiverConfigHome(tc.goos, getenv); got != tc.config {
				t.Errorf("config dir %q, want %q", got, tc.config)
			}
			if got := stateDir(tc.goos, getenv); got != tc.stateWant {
				t.Errorf("state dir %q, want %q", got, tc.stateWant)
			}
		})
	}
}

// TestClaudeDesktopConfigPerOS: import's default file is where Claude
// Desktop keeps it on each OS.
func TestClaudeDesktopConfigPerOS(t *testing.T) {
	j := filepath.Join
	for goos, want := range map[string]string{
		"darwin":  j("/Users/me", "Library", "Application Support", "Claude", "claude_desktop_config.json"),
		"windows": j(`C:\Users\me\AppData\Roaming`, "Claude", "claude_desktop_config.json"),
		"linux":   j("/home/me", ".config", "Claude", "claude_desktop_config.json"),
	} {
		env := map[string]string{"HOME": "/home/me", "AppData": `C:\Users\me\AppData\Roaming`}
		if goos == "darwin" {
			env["HOME"] = "/Users/me"
		}
		if got := claudeDesktopConfig(goos, func(k string) string { return env[k] }); got != want {
			t.Errorf("%s: %q, want %q", goos, got, want)
		}
	}
}

// TestNoNoteForTheShippedDefault: in a clone of quiver, ./servers.yaml is
// the built-in default, and the note that it is not read would only
// confuse a newcomer running the README's first command; any other file
// there still gets it.
func TestNoNoteForTheShippedDefault(t *testing.T) {
	dir := t.TempDir()
	shipped, planted := filepath.Join(dir, "shipped.yaml"), filepath.Join(dir, "planted.yaml")
	if err := os.WriteFile(shipped, quiver.DefaultConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, []byte("servers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !sameAsDefault(shipped, "") {
		t.Error("the shipped servers.yaml is the default in use")
	}
	if sameAsDefault(planted, "") || sameAsDefault(shipped, "/elsewhere/servers.yaml") {
		t.Error("a planted file, or the default beside another config in use, must still be noted")
	}
}
