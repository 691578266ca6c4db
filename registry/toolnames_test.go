package registry

import (
	"strings"
	"testing"
)

// TestCheckToolName: a name no server offers is a problem with the name
// meant, whether the server's prefix or the tool's name is misspelt; a
// name of a server that is not up is not known yet; globs and builtins
// are checked as such.
func TestCheckToolName(t *testing.T) {
	cfg, err := ConfigOptions{Lookup: testLookup(nil), Reserved: []string{"search_tools"}}.Parse("test.yaml", []byte("servers:\n  everything:\n    command: x\n  slow:\n    command: y\n"))
	if err != nil {
		t.Fatal(err)
	}
	cat := NewCatalog(1, Tool{Server: "everything", Exposed: "everything__echo"}, Tool{Server: "everything", Exposed: "everything__add"})
	cat.Servers = []ServerStatus{{Name: "everything", State: StateUp}, {Name: "slow", State: StateStarting}}
	for _, tc := range []struct {
		name, problem, waiting string
	}{
		{"everything__echo", "", ""},
		{"everything__*", "", ""},
		{"search_tools", "", ""},
		{"everthing__echo", "no server offers such a tool (no server's prefix begins the name); did you mean everything__echo?", ""},
		{"everything__ecko", `server "everything" offers no such tool; did you mean everything__echo?`, ""},
		{"everything__launch_rockets", `server "everything" offers no such tool`, ""},
		{"slow__anything", "", "slow"},
		{"nothing__*", "", "slow"}, // slow may still offer it
		{"--config", "no server offers such a tool (no server's prefix begins the name)", ""},
	} {
		got := CheckToolName(cfg, cat, tc.name)
		if got.Problem != tc.problem || got.Waiting != tc.waiting {
			t.Errorf("CheckToolName(%q) = %+v, want problem %q, waiting %q", tc.name, got, tc.problem, tc.waiting)
		}
	}
	cat.Servers[1].State = StateUp
	if got := CheckToolName(cfg, cat, "nothing__*"); got.Problem != "it matches no tool of any server" {
		t.Errorf("a glob that matches nothing once every server is up: %+v", got)
	}
}

// TestTypoInTogglesIsAProblem: a toggles line that names no tool is a
// catalog problem, with its file and line, which doctor and config
// effective print.
func TestTypoInTogglesIsAProblem(t *testing.T) {
	cfg, err := ParseConfig("test.yaml", []byte("servers:\n  a:\n    command: x\n"), testLookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	tg, err := ParseToggles("/x/tools.yaml", []byte("disabled:\n  - a__echo\n  - a__ecko\n  - b__echo\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Toggles = tg
	cat := NewCatalog(1, Tool{Server: "a", Exposed: "a__echo"})
	cat.Servers = []ServerStatus{{Name: "a", State: StateUp}}
	got := strings.Join(missingTools(cfg, cat), "\n")
	for _, want := range []string{
		`tools.yaml:3 disabled names a__ecko, but server "a" offers no such tool; did you mean a__echo?`,
		`tools.yaml:4 disabled names b__echo, but no server offers such a tool (no server's prefix begins the name); did you mean a__echo?`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "a__echo,") {
		t.Errorf("a__echo exists:\n%s", got)
	}
}

// TestCheckToolNameWithoutPrefix: a tool's own name, without the prefix
// quiver gives it, is answered with the prefixed names (issue 29:
// "tools disable write_file" suggested nothing).
func TestCheckToolNameWithoutPrefix(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig("servers.yaml", []byte("servers:\n  files:\n    command: x\n  backup:\n    command: y\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cat := NewCatalog(1,
		Tool{Server: "files", Name: "write_file", Exposed: "files__write_file"},
		Tool{Server: "files", Name: "read_file", Exposed: "files__read_file"},
		Tool{Server: "backup", Name: "write_file", Exposed: "backup__write_file"},
	)
	got := CheckToolName(cfg, cat, "write_file").Problem
	want := "; did you mean backup__write_file or files__write_file? (quiver names each tool with its server's prefix)"
	if !strings.HasSuffix(got, want) {
		t.Errorf("write_file: %q; want it to end %q", got, want)
	}
}
