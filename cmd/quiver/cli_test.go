package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// runEnv runs quiver in process with args, no input and getenv as its
// environment, and returns its exit code and what it printed.
func runEnv(getenv func(string) string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: getenv}
	code = run(context.Background(), e, args)
	return code, out.String(), errOut.String()
}

// noEnv is an empty environment.
func noEnv(string) string { return "" }

// runIn runs quiver in process with args and an empty environment but
// for a private config home, and returns its exit code and output.
func runIn(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	home := t.TempDir()
	return runEnv(func(k string) string {
		switch k {
		case "XDG_CONFIG_HOME":
			return filepath.Join(home, "config")
		case "QUIVER_STATE_DIR":
			return filepath.Join(home, "state")
		}
		return ""
	}, args...)
}

func commandNamesForTest() []string { return slices.Sorted(maps.Keys(commands())) }

// TestFlagsAfterNamesAreFlags is the issue's report: "quiver tools
// disable everything__echo --config cfg/servers.yaml" wrote "--config"
// and the path as tool names into the wrong toggles file. A flag after
// the names is a flag, in both spellings; "--" ends the flags.
func TestFlagsAfterNamesAreFlags(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "cfg")
	os.MkdirAll(cfgDir, 0o755)
	cfg := filepath.Join(cfgDir, "servers.yaml")
	if err := os.WriteFile(cfg, []byte(exampleConfig("auto", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	for _, args := range [][]string{
		{"tools", "disable", "example__echo", "--config", cfg},
		{"tools", "disable", "example__sleep", "--config=" + cfg},
		{"tools", "enable", "--config", cfg, "example__sleep"},
	} {
		cmd := exec.Command(quiverBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+home, "QUIVER_STATE_DIR="+filepath.Join(dir, "state"))
		out, err := cmd.CombinedOutput()
		if code := exitCode(err); code != exitOK {
			t.Fatalf("quiver %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	got, err := os.ReadFile(filepath.Join(cfgDir, "tools.yaml"))
	if err != nil {
		t.Fatalf("the toggles file beside --config's servers.yaml: %v", err)
	}
	if s := string(got); !strings.Contains(s, "example__echo") || strings.Contains(s, "--config") || strings.Contains(s, "servers.yaml") {
		t.Fatalf("tools.yaml must name example__echo and no flag or path:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(home, "quiver", "tools.yaml")); err == nil {
		t.Fatal("the toggles file in the config home was written although --config named another folder")
	}
}

// TestApproveTakesFlagsAnywhere: the number and the flags in any order,
// one number only.
func TestApproveTakesFlagsAnywhere(t *testing.T) {
	lc := newLedgerCLI(t)
	id := lc.fileDecoy()
	// lc.run fails the test on a non-zero exit.
	if out := lc.run("approve", "--session", strconv.FormatInt(id, 10)); !strings.Contains(out, "session") {
		t.Fatalf("approve --session N must grant for the session: %s", out)
	}
	code, _, stderr := runIn(t, "approve", "1", "2", "--state-dir", lc.state)
	if code != exitUsage || !strings.Contains(stderr, `unexpected "2"`) {
		t.Fatalf("two numbers: exit %d, want 2 naming the second\n%s", code, stderr)
	}
}

// TestUnknownFlagsAreUsageErrors: on every command an unknown flag exits 2,
// names the flag, and shows the command's synopsis; it is never taken as
// a word.
func TestUnknownFlagsAreUsageErrors(t *testing.T) {
	for _, name := range commandNamesForTest() {
		args := []string{name, "--no-such-flag"}
		switch name {
		case "tools":
			args = []string{"tools", "disable", "example__echo", "--no-such-flag"}
		case "config":
			args = []string{"config", "effective", "--no-such-flag"}
		}
		code, stdout, stderr := runIn(t, args...)
		if name == "version" {
			// version takes no flags at all: the word is unexpected.
			if code != exitUsage {
				t.Errorf("quiver version --no-such-flag: exit %d, want 2", code)
			}
			continue
		}
		if code != exitUsage || !strings.Contains(stderr, "unknown flag: --no-such-flag") ||
			!strings.Contains(stderr, "usage: quiver "+name) {
			t.Errorf("quiver %s: exit %d, want 2 naming the flag with the usage\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	// A single-dash long flag is not quietly split into letters.
	if code, _, stderr := runIn(t, "doctor", "-config", "x.yaml"); code != exitUsage || !strings.Contains(stderr, "-config") {
		t.Errorf("doctor -config: exit %d, want 2\n%s", code, stderr)
	}
}

// TestHelpOnEveryCommand: "quiver CMD --help", "quiver CMD -h" and
// "quiver help CMD" print the command's help on stdout and exit 0, even
// after other words.
func TestHelpOnEveryCommand(t *testing.T) {
	for _, name := range commandNamesForTest() {
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}, {name, "something", "--help"}} {
			code, stdout, stderr := runIn(t, args...)
			if code != exitOK || !strings.HasPrefix(stdout, "usage: quiver "+name) {
				t.Errorf("quiver %s: exit %d, want 0 with the help\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
			}
		}
	}
	code, stdout, _ := runIn(t, "--help")
	if code != exitOK || !strings.Contains(stdout, "completion") || !strings.Contains(stdout, "tools") {
		t.Errorf("quiver --help: exit %d, want 0 listing the commands\n%s", code, stdout)
	}
	if code, _, stderr := runIn(t); code != exitUsage || !strings.Contains(stderr, "usage: quiver COMMAND") {
		t.Errorf("quiver alone: exit %d, want 2 with the commands on stderr\n%s", code, stderr)
	}
	if code, _, stderr := runIn(t, "help", "nope"); code != exitUsage || !strings.Contains(stderr, `no command "nope"`) {
		t.Errorf("quiver help nope: exit %d, want 2\n%s", code, stderr)
	}
}

// TestUnknownCommandSuggests: a misspelt command exits 2 and says what it
// may have meant.
func TestUnknownCommandSuggests(t *testing.T) {
	code, _, stderr := runIn(t, "tols", "list")
	if code != exitUsage || !strings.Contains(stderr, `unknown command "tols"`) || !strings.Contains(stderr, "tools") {
		t.Fatalf("quiver tols: exit %d, want 2 suggesting tools\n%s", code, stderr)
	}
}

// TestCompletionScripts: "quiver completion SHELL" prints a script the
// shell loads, and the hidden completer it calls offers quiver's
// commands, subcommands and flags.
func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash": "complete -o default -F __start_quiver quiver", "zsh": "#compdef quiver",
		"fish": "complete -c quiver", "powershell": "Register-ArgumentCompleter",
	} {
		code, stdout, stderr := runIn(t, "completion", shell)
		if code != exitOK || !strings.Contains(stdout, marker) {
			t.Errorf("quiver completion %s: exit %d, want 0 with %q\nstderr: %s", shell, code, marker, stderr)
		}
	}
	if code, _, _ := runIn(t, "completion"); code != exitUsage {
		t.Errorf("quiver completion without a shell: exit %d, want 2", code)
	}
	if code, _, _ := runIn(t, "completion", "tcsh"); code != exitUsage {
		t.Errorf("quiver completion tcsh: exit %d, want 2", code)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "to"}, []string{"tools", "tokens"}},
		{[]string{"__complete", "tools", ""}, []string{"list", "enable", "disable"}},
		{[]string{"__complete", "tools", "list", "--s"}, []string{"--server"}},
		{[]string{"__complete", "approve", "--"}, []string{"--once", "--session", "--persistent", "--expires"}},
		{[]string{"__complete", "help", "se"}, []string{"search", "serve"}},
	} {
		code, stdout, stderr := runIn(t, c.args...)
		lines := strings.Split(stdout, "\n")
		for _, w := range c.want {
			found := false
			for _, l := range lines {
				found = found || strings.HasPrefix(l, w+"\t") || l == w
			}
			if code != exitOK || !found {
				t.Errorf("quiver %s: exit %d, want %q offered\n%s%s", strings.Join(c.args, " "), code, w, stdout, stderr)
			}
		}
	}
}

// quiverIn runs the quiver binary in dir with a private config home and
// returns its exit code and combined output.
func quiverIn(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(quiverBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "home"), "QUIVER_STATE_DIR="+filepath.Join(dir, "state"))
	out, err := cmd.CombinedOutput()
	return exitCode(err), string(out)
}

// TestToolNamesAreCheckedAgainstTheCatalog is the typo
// "everthing__echo": a name no server offers is refused by tools
// enable/disable with the name meant, and nothing is written; --force
// writes it; doctor and config effective then name the line.
func TestToolNamesAreCheckedAgainstTheCatalog(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(exampleConfig("auto", "")), 0o600)
	toggles := filepath.Join(dir, "tools.yaml")
	for _, c := range []struct{ name, want string }{
		{"exmaple__echo", "exmaple__echo: no server offers such a tool (no server's prefix begins the name); did you mean example__echo?"},
		{"example__ecko", `example__ecko: server "example" offers no such tool; did you mean example__echo?`},
		{"example__nothing_*", "example__nothing_*: it matches no tool of any server"},
	} {
		code, out := quiverIn(t, dir, "tools", "disable", c.name, "--config", cfg, "--wait", "20s")
		if code != exitUsage || !strings.Contains(out, c.want) {
			t.Errorf("tools disable %s: exit %d, want 2 with %q\n%s", c.name, code, c.want, out)
		}
	}
	if code, out := quiverIn(t, dir, "tools", "disable", "--config", cfg, "--", "--json"); code != exitUsage || !strings.Contains(out, "--json: no server offers") {
		t.Errorf(`a name after "--" is a name, refused as one: exit %d\n%s`, code, out)
	}
	if _, err := os.Stat(toggles); err == nil {
		b, _ := os.ReadFile(toggles)
		t.Fatalf("refused names were written:\n%s", b)
	}
	if code, out := quiverIn(t, dir, "tools", "disable", "example__echo", "--config", cfg); code != exitOK {
		t.Fatalf("a real name: exit %d\n%s", code, out)
	}
	if code, out := quiverIn(t, dir, "tools", "disable", "exmaple__echo", "--force", "--config", cfg); code != exitOK {
		t.Fatalf("--force: exit %d\n%s", code, out)
	}
	want := `tools.yaml:3 disabled names exmaple__echo, but no server offers such a tool (no server's prefix begins the name); did you mean example__echo?`
	code, out := quiverIn(t, dir, "doctor", "--config", cfg, "--wait", "20s")
	if code != exitFailure || !strings.Contains(out, "problem: "+want) {
		t.Errorf("doctor with a misspelt toggle: exit %d, want 1 with %q\n%s", code, want, out)
	}
	code, out = quiverIn(t, dir, "config", "effective", "--config", cfg, "--wait", "20s")
	if code != exitOK || !strings.Contains(out, want) {
		t.Errorf("config effective with a misspelt toggle: exit %d, want %q in its problems\n%s", code, want, out)
	}
}

// TestToolNamesAreCheckedAgainstTheRunningQuiver: with a quiver serve
// running on the same servers.yaml, names are checked against its
// catalog; the command does not need the servers to start again (its
// --wait of 1ms would not let them).
func TestToolNamesAreCheckedAgainstTheRunningQuiver(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	os.WriteFile(cfg, []byte(exampleConfig("auto", "")), 0o600)
	state := filepath.Join(dir, "state")
	// The later --config and --state-dir win: this quiver runs on cfg.
	h := startQuiver(t, exampleConfig("auto", ""), hostOptions{args: []string{"--config", cfg, "--state-dir", state}})
	h.searchUntil("echo a value back", "example__echo")
	code, out := quiverIn(t, dir, "tools", "disable", "example__ecko", "--config", cfg, "--state-dir", state, "--wait", "1ms")
	if code != exitUsage || !strings.Contains(out, "did you mean example__echo?") {
		t.Fatalf("against the running quiver: exit %d, want 2 with the name meant\n%s", code, out)
	}
	if code, out := quiverIn(t, dir, "tools", "disable", "example__echo", "--config", cfg, "--state-dir", state, "--wait", "1ms"); code != exitOK || strings.Contains(out, "could not be checked") {
		t.Fatalf("a real name against the running quiver: exit %d\n%s", code, out)
	}
	// Completion offers the running quiver's tool names.
	if code, out := quiverIn(t, dir, "__complete", "tools", "enable", "--config", cfg, "--state-dir", state, "example__ec"); code != exitOK || !strings.Contains(out, "example__echo\n") || strings.Contains(out, "example__sleep") {
		t.Errorf("completing a tool name: exit %d, want example__echo offered\n%s", code, out)
	}
}

// TestPathBaseKeywords: config effective shows each server's path_base,
// and a word that looks like one of its keywords ("root" for roots) is
// refused with the keyword it resembles, not taken as a folder (issue 29).
func TestPathBaseKeywords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	entry := "servers:\n  example:\n    command: quiver\n    args: [example-server]\n    path_base: %s\n"
	os.WriteFile(cfg, []byte(strings.ReplaceAll(entry, "%s", "roots")), 0o600)
	code, out := quiverIn(t, dir, "config", "effective", "--config", cfg, "--wait", "20s")
	if code != exitOK || !strings.Contains(out, "path_base: roots") {
		t.Fatalf("config effective must show path_base: exit %d\n%s", code, out)
	}
	os.WriteFile(cfg, []byte(strings.ReplaceAll(entry, "%s", "root")), 0o600)
	code, out = quiverIn(t, dir, "config", "effective", "--config", cfg)
	if code == exitOK || !strings.Contains(out, `servers.yaml:5: servers.example.path_base: "root" is not a path_base keyword: did you mean roots?`) {
		t.Fatalf("path_base: root must be refused with did you mean roots: exit %d\n%s", code, out)
	}
}

// TestAFlagTypoIsOneShortAnswer: a misspelt flag is answered with the
// flag meant, the synopsis once and where the rest is, not the whole help
// (issue 29).
func TestAFlagTypoIsOneShortAnswer(t *testing.T) {
	code, stdout, stderr := runIn(t, "audit", "--sinc", "1h")
	want := "quiver audit: unknown flag: --sinc; did you mean --since?\n" +
		"usage: quiver audit [--since 1h|7d] [--session S] [--tool GLOB] [--limit N] [--json] [--state-dir DIR] [--config PATH]\n" +
		"Run \"quiver audit --help\" for its flags.\n"
	if code != exitUsage || stdout != "" || stderr != want {
		t.Errorf("quiver audit --sinc 1h: exit %d\nstdout %q\nstderr %q\nwant   %q", code, stdout, stderr, want)
	}
}
