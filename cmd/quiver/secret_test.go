package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/internal/secretstore"
	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// TestKeyringSecrets: "quiver secret set NAME" stores a secret read from
// stdin without printing it; ${keyring:NAME} in servers.yaml brings it to
// the server, and it is redacted like any secret; config effective shows
// the reference; a name never set is a config error that says how to set
// it. (This box has no OS keychain; QUIVER_SECRET_STORE=file makes every
// machine use the file, which is what a box without one does.)
func TestKeyringSecrets(t *testing.T) {
	t.Setenv("QUIVER_SECRET_STORE", "file")
	const secret = "kr-secret-0123456789abcdef"
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	set := exec.Command(quiverBin, "secret", "set", "example-token", "--state-dir", state)
	set.Stdin = strings.NewReader(secret + "\n")
	out, err := set.CombinedOutput()
	if code := exitCode(err); code != exitOK || strings.Contains(string(out), secret) || !strings.Contains(string(out), "${keyring:example-token}") {
		t.Fatalf("secret set: exit %d, want 0, the value never shown\n%s", code, out)
	}
	file := filepath.Join(state, secretstore.FileName)
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the secrets file: %v; want mode 0600", err)
	}

	cfg := filepath.Join(dir, "servers.yaml")
	text := strings.Replace(fencedExample(dir), "args: [example-server, --test-tools]",
		"args: [example-server, --test-tools]\n    env:\n      EXAMPLE_TOKEN: ${keyring:example-token}", 1)
	os.WriteFile(cfg, []byte(text), 0o600)
	h := startQuiver(t, text, hostOptions{args: []string{"--config", cfg, "--state-dir", state}})
	h.waitTools("example__echo")
	res := h.call("example__echo", map[string]any{"said": "the token is " + secret})
	if got := toolresult.Text(res); res.IsError || strings.Contains(got, secret) || !strings.Contains(got, "[redacted:keyring:example-token]") {
		t.Fatalf("a result holding the stored secret must show [redacted:keyring:example-token]: %s", got)
	}

	code, eff := quiverIn(t, dir, "config", "effective", "--config", cfg, "--state-dir", state, "--wait", "10s")
	if code != exitOK || strings.Contains(eff, secret) || !strings.Contains(eff, "${keyring:example-token}") {
		t.Fatalf("config effective: exit %d, want the reference, never the value\n%s", code, eff)
	}

	os.WriteFile(cfg, []byte(strings.Replace(text, "keyring:example-token", "keyring:never-set", 1)), 0o600)
	code, doc := quiverIn(t, dir, "doctor", "--config", cfg, "--state-dir", state)
	if code != exitFailure || !strings.Contains(doc, "keyring secret never-set is not set; run: quiver secret set never-set") {
		t.Fatalf("doctor with a secret never set: exit %d, want 1 saying how to set it\n%s", code, doc)
	}
}

// TestSecretSetUsage: a missing or bad name, or nothing on stdin, exits 2
// and stores nothing.
func TestSecretSetUsage(t *testing.T) {
	for _, c := range []struct {
		args  []string
		stdin string
	}{
		{[]string{"secret", "set"}, "x"},
		{[]string{"secret", "set", "a b"}, "x"},
		{[]string{"secret", "set", "ok"}, "\n"},
		{[]string{"secret", "get", "ok"}, "x"},
	} {
		state := t.TempDir()
		cmd := exec.Command(quiverBin, append(c.args, "--state-dir", state)...)
		cmd.Stdin = strings.NewReader(c.stdin)
		cmd.Env = append(os.Environ(), "QUIVER_SECRET_STORE=file")
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != exitUsage {
			t.Errorf("quiver %s: exit %d, want 2\n%s", strings.Join(c.args, " "), code, out)
		}
		if _, err := os.Stat(filepath.Join(state, secretstore.FileName)); err == nil {
			t.Errorf("quiver %s stored something", strings.Join(c.args, " "))
		}
	}
}

// TestSecretListAndDelete: secret list shows every secret servers.yaml
// names and every stored one, with where it is, never a value; secret
// delete removes one, and says so when there is none (issue 29).
func TestSecretListAndDelete(t *testing.T) {
	t.Parallel()
	const value = "kr-list-0123456789abcdef"
	dir := t.TempDir()
	state, cfg := filepath.Join(dir, "state"), filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte("servers:\n  gh:\n    url: https://example.com/mcp\n    headers: {Authorization: \"Bearer ${keyring:github}\", X-Other: \"${keyring:never-set}\"}\n"), 0o600)
	secret := func(stdin string, args ...string) (int, string) {
		cmd := exec.Command(quiverBin, append(append([]string{"secret"}, args...), "--state-dir", state, "--config", cfg)...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "QUIVER_SECRET_STORE=file")
		out, err := cmd.CombinedOutput()
		return exitCode(err), string(out)
	}
	for _, name := range []string{"github", "spare"} {
		if code, out := secret(value, "set", name); code != exitOK {
			t.Fatalf("secret set %s: exit %d\n%s", name, code, out)
		}
	}
	code, out := secret("", "list")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^github\s+file\s+yes$`),
		regexp.MustCompile(`(?m)^never-set\s+not set \(quiver secret set never-set\)\s+yes$`),
		regexp.MustCompile(`(?m)^spare\s+file\s+no$`),
	} {
		if code != exitOK || !want.MatchString(out) || strings.Contains(out, value) {
			t.Errorf("secret list: exit %d, want a line matching %s and no value\n%s", code, want, out)
		}
	}
	if code, out := secret("", "delete", "spare"); code != exitOK || !strings.Contains(out, "Deleted secret spare.") {
		t.Errorf("secret delete spare: exit %d\n%s", code, out)
	}
	if _, out := secret("", "list"); strings.Contains(out, "spare") {
		t.Errorf("after delete, secret list still shows it:\n%s", out)
	}
	if code, out := secret("", "delete", "spare"); code != exitFailure || !strings.Contains(out, "no secret spare is stored (quiver secret list shows the ones that are)") {
		t.Errorf("secret delete of a secret stored nowhere: exit %d\n%s", code, out)
	}
}
