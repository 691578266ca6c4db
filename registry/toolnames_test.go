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
