package proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// TestReloadUpdatesSlashCommands: a slash command added to servers.yaml is
// offered after the reload, one removed is gone, and the downstream
// server is left alone.
func TestReloadUpdatesSlashCommands(t *testing.T) {
	withSlash := func(name string) string {
		return fmt.Sprintf("slash:\n  %s:\n    description: Look at the notes.\n    tools: [example__notes_list]\n    activity: review\n", name)
	}
	s, c := newInProcessServer(t, exampleConfig(withSlash("review")), Options{}, nil)
	prompts := func() []string {
		t.Helper()
		res, err := c.ListPrompts(context.Background(), mcp.ListPromptsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range res.Prompts {
			names = append(names, p.Name)
		}
		return names
	}
	if got := prompts(); !slices.Contains(got, "review") {
		t.Fatalf("prompts before the reload = %v", got)
	}
	// The same server entry, so only the slash commands change.
	cfg, err := registry.ParseConfig("servers.yaml", []byte(exampleConfig(withSlash("audit"))), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	got := prompts()
	if !slices.Contains(got, "audit") || slices.Contains(got, "review") {
		t.Fatalf("prompts after the reload = %v, want audit and not review", got)
	}
	res, err := c.GetPrompt(context.Background(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "audit"}})
	if err != nil || len(res.Messages) == 0 {
		t.Fatalf("prompts/get of the new command: %v %v", res, err)
	}
}

// TestReloadReadsSkillFolders: a skill folder added to servers.yaml is
// searched and readable after the reload, without a restart.
func TestReloadReadsSkillFolders(t *testing.T) {
	s, c := newInProcessServer(t, exampleConfig(""), Options{}, nil)
	dir := t.TempDir()
	doc := "---\nname: release-checklist\ndescription: The steps to ship a release of the billing service.\nkind: skill\n---\n# Ship it\nTag, build, canary, promote.\n"
	if err := os.WriteFile(dir+"/release.md", []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	search := func() string {
		t.Helper()
		return callText(t, c, "search_tools", map[string]any{"query": "release checklist for billing", "kind": "skill"})
	}
	if got := search(); strings.Contains(got, "release-checklist") {
		t.Fatalf("found before its folder was configured:\n%s", got)
	}
	cfg, err := registry.ParseConfig("servers.yaml", []byte(exampleConfig(fmt.Sprintf("skills:\n  dirs: [%q]\n", dir))), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := search(); !strings.Contains(got, "release-checklist") {
		t.Fatalf("not found after the reload:\n%s", got)
	}
	if got := callText(t, c, "read_file", map[string]any{"path": dir + "/release.md"}); !strings.Contains(got, "Tag, build, canary, promote.") {
		t.Fatalf("read_file of the new skill:\n%s", got)
	}
}

// callText calls a tool through c and returns its text; a transport error
// fails the test.
func callText(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return text(res)
}

// TestBadPolicyValueNamesItsLine: a fence or policy value the gate cannot
// take is a config error with the file, the line and the key as written.
func TestBadPolicyValueNamesItsLine(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"servers: {}\nfence:\n  outside_fence: maybe\n", `servers.yaml:3: fence.outside_fence: "maybe" is not ask or deny`},
		{"fence:\n  allowed_dirs:\n    - /tmp\n    - relative/dir\n", `servers.yaml:4: fence.allowed_dirs[1]: "relative/dir" is not an absolute path`},
		{"policy:\n  defaults:\n    write: perhaps\n", `servers.yaml:3: policy.defaults.write: "perhaps" is not allow, deny, ask or allow_inside`},
		{"policy:\n  rules:\n    - {tool: \"a__*\", action: allow}\n    - {tool: \"b__*\", action: maybe}\n", `servers.yaml:4: policy.rules[1]: (b__*) action:`},
	} {
		cfg, err := registry.ParseConfig("servers.yaml", []byte(tc.yaml), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = newSettings(cfg, "", "")
		if !errors.Is(err, registry.ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%q: error %v; want ErrInvalidConfig with %q", tc.yaml, err, tc.want)
		}
	}
}
