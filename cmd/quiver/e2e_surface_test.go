package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

func TestLeanSurface(t *testing.T) {
	h := startQuiver(t, exampleConfig("auto", ""), hostOptions{})
	names := h.waitTools("example__current_time")
	want := append(slices.Clone(builtins), "example__current_time")
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list = %v, want %v (builtins, then always-on, nothing else)", names, want)
	}
	res, err := h.c.ListTools(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Meta == nil || tool.Meta.AdditionalFields["anthropic/alwaysLoad"] != true {
			t.Errorf("%s lacks _meta[\"anthropic/alwaysLoad\"]: true", tool.Name)
		}
	}
	// The same state lists the same bytes.
	_, a := h.list()
	_, b := h.list()
	if !bytes.Equal(a, b) {
		t.Fatalf("two tools/list of one state differ:\n%s\n%s", a, b)
	}
}

func TestSearchBindsAndListChanges(t *testing.T) {
	h := startQuiver(t, exampleConfig("auto", ""), hostOptions{})
	h.waitTools("example__current_time")

	// Not bound yet: the gate refuses, and says what to do.
	wantRefusal(t, h.call("example__notes_add", map[string]any{"title": "a", "body": "b"}), "deny.not_bound")

	res := h.searchUntil("take a note", "example__notes_add")
	out := toolresult.Text(res)
	for _, want := range []string{`Matches for "take a note":`, "- example__notes_add [mcp] — ", "Bound for your next step: "} {
		if !strings.Contains(out, want) {
			t.Errorf("search answer lacks %q:\n%s", want, out)
		}
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if !bytes.Contains(sc, []byte(`"bound":[`)) || !bytes.Contains(sc, []byte(`"hits":[`)) {
		t.Errorf("structuredContent lacks hits/bound: %s", sc)
	}
	if !strings.Contains(out, "Input schemas") {
		t.Errorf("with call_tool on the surface, the answer should carry the bound tools' schemas:\n%s", out)
	}

	h.waitChanged()
	names, _ := h.list()
	if !slices.Equal(names[:5], append(slices.Clone(builtins), "example__current_time")) || !slices.Contains(names, "example__notes_add") {
		t.Fatalf("after the search, tools/list = %v; want always-on first, then the found tools", names)
	}

	add := h.call("example__notes_add", map[string]any{"title": "groceries", "body": "milk"})
	if add.IsError {
		t.Fatalf("bound tool refused: %s", toolresult.Text(add))
	}
	// call_tool reaches the same tool the same way.
	got := h.call("call_tool", map[string]any{"name": "example__notes_search", "arguments": map[string]any{"query": "milk"}})
	if got.IsError || !strings.Contains(toolresult.Text(got), "groceries") {
		t.Fatalf("call_tool notes_search: %s", toolresult.Text(got))
	}
}

// TestSearchDescribeAndListing: through the real proxy, a server alone
// lists its tools by name and binds none; describe gives one tool's full
// input schema, as the server sent it, and binds it.
func TestSearchDescribeAndListing(t *testing.T) {
	h := startQuiver(t, exampleConfig("auto", ""), hostOptions{})
	h.waitTools("example__current_time")
	list := toolresult.Text(h.call("search_tools", map[string]any{"server": "example"}))
	if !strings.HasPrefix(list, "example's ") || !strings.Contains(list, "notes_add") || !strings.Contains(list, "none bound") {
		t.Fatalf("listing example:\n%s", list)
	}
	wantRefusal(t, h.call("example__notes_add", map[string]any{"title": "a", "body": "b"}), "deny.not_bound")
	desc := toolresult.Text(h.call("search_tools", map[string]any{"describe": "example__notes_add"}))
	if !strings.HasPrefix(desc, "example__notes_add [mcp] — ") || !strings.Contains(desc, `Input schema (call with call_tool {"name": "example__notes_add"`) ||
		!strings.Contains(desc, `"required":[`) || !strings.Contains(desc, "Bound for your next step: example__notes_add") {
		t.Fatalf("describe:\n%s", desc)
	}
	if res := h.call("call_tool", map[string]any{"name": "example__notes_add", "arguments": map[string]any{"title": "a", "body": "b"}}); res.IsError {
		t.Fatalf("the described tool is not bound: %s", toolresult.Text(res))
	}
}

func TestBindingExpiresAfterThreeTurns(t *testing.T) {
	h := startQuiver(t, exampleConfig("auto", ""), hostOptions{})
	h.waitTools("example__current_time")
	h.drain()
	h.turn = 1
	h.searchUntil("take a note", "example__notes_add")
	h.waitChanged()
	for h.turn = 2; h.turn <= 3; h.turn++ {
		if res := h.call("example__notes_list", map[string]any{}); res.IsError {
			t.Fatalf("turn %d: a tool bound in turn 1 must still work: %s", h.turn, toolresult.Text(res))
		}
	}
	h.turn = 4
	wantRefusal(t, h.call("example__notes_list", map[string]any{}), "deny.not_bound")
	h.waitChanged() // the expired tools leave the list
	names, _ := h.list()
	if slices.Contains(names, "example__notes_list") {
		t.Fatalf("turn 4: expired binding still listed: %v", names)
	}
}

func TestCallModeKeepsTheListFixed(t *testing.T) {
	h := startQuiver(t, exampleConfig("call", ""), hostOptions{})
	before := h.waitTools("example__current_time")
	h.drain() // the example server coming up changed the list once
	h.searchUntil("take a note", "example__notes_add")
	h.noChange()
	after, _ := h.list()
	if !slices.Equal(before, after) {
		t.Fatalf("reveal: call must never change tools/list: %v -> %v", before, after)
	}
	res := h.call("call_tool", map[string]any{"name": "example__notes_add", "arguments": map[string]any{"title": "t", "body": "b"}})
	if res.IsError {
		t.Fatalf("call_tool: %s", toolresult.Text(res))
	}
	wantRefusal(t, h.call("call_tool", `{"name":"example__notes_add","arguments":"title=t"}`), "deny.args_shape")
	wantRefusal(t, h.call("call_tool", `{"name":"example__notes_add","arguments":[1,2]}`), "must be a JSON object")
	wantRefusal(t, h.call("call_tool", map[string]any{"name": "example__nope"}), "deny.unknown_tool")
}

func TestListModeHasNoCallTool(t *testing.T) {
	h := startQuiver(t, exampleConfig("list", ""), hostOptions{})
	names := h.waitTools("example__current_time")
	if slices.Contains(names, "call_tool") {
		t.Fatalf("reveal: list must not offer call_tool: %v", names)
	}
}

func TestModernClientListNeverChanges(t *testing.T) {
	h := startQuiver(t, exampleConfig("auto", ""), hostOptions{modern: true})
	before := h.waitTools("example__current_time")
	h.searchUntil("take a note", "example__notes_add")
	after, _ := h.list()
	if !slices.Equal(before, after) {
		t.Fatalf("a 2026-07-28 client's tools/list changed after a search: %v -> %v", before, after)
	}
	if res := h.call("call_tool", map[string]any{"name": "example__notes_list", "arguments": map[string]any{}}); res.IsError {
		t.Fatalf("call_tool: %s", toolresult.Text(res))
	}
}

func TestDirectModeListsEverything(t *testing.T) {
	h := startQuiver(t, exampleConfig("direct", ""), hostOptions{})
	names := h.waitTools("example__notes_add", "example__search_text", "example__echo")
	if !slices.Equal(names[:5], append(slices.Clone(builtins), "example__current_time")) {
		t.Fatalf("direct mode keeps builtins and always-on first: %v", names)
	}
	// Listed, so callable without a search.
	if res := h.call("example__notes_list", map[string]any{}); res.IsError {
		t.Fatalf("direct mode call: %s", toolresult.Text(res))
	}
}

func TestArgumentsPassThroughRaw(t *testing.T) {
	h := startQuiver(t, exampleConfig("direct", ""), hostOptions{})
	h.waitTools("example__echo")
	res := h.call("example__echo", `{"value":12345678901234567890,"nested":{"n":1.50}}`)
	if res.IsError || !strings.Contains(toolresult.Text(res), "12345678901234567890") {
		t.Fatalf("a 20-digit integer must survive the proxy: %s", toolresult.Text(res))
	}
	wantRefusal(t, h.call("example__echo", `"just a string"`), "deny.args_shape")
}

func TestFilesystemServerThroughQuiver(t *testing.T) {
	script := filesystemServer(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from disk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The server itself may touch all of /; quiver's fence allows only root.
	cfg := exampleConfig("auto", fmt.Sprintf(`
  filesystem:
    command: node
    args: [%q, "/"]
fence:
  allowed_dirs: [%q]
`, script, root))
	h := startQuiver(t, cfg, hostOptions{})
	h.waitTools("example__current_time")
	h.drain()
	res := h.searchUntil("read the contents of a text file", "filesystem__read_text_file")
	if !strings.Contains(toolresult.Text(res), "filesystem__read_text_file") {
		t.Fatalf("search: %s", toolresult.Text(res))
	}
	h.waitChanged()
	read := h.call("filesystem__read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt")})
	if read.IsError || !strings.Contains(toolresult.Text(read), "hello from disk") {
		t.Fatalf("read_text_file through quiver: %s", toolresult.Text(read))
	}
	outside := h.call("filesystem__read_text_file", map[string]any{"path": "/etc/hostname"})
	wantRefusal(t, outside, "deny.approval_unavailable")
	if !strings.Contains(toolresult.Text(outside), "read_outside_fence") || !strings.Contains(toolresult.Text(outside), "quiver approve") {
		t.Fatalf("the refusal must name the capability and how to approve: %s", toolresult.Text(outside))
	}
	sneaky := h.call("filesystem__read_text_file", map[string]any{"path": root + "/../../etc/hostname"})
	wantRefusal(t, sneaky, "outside_fence")

	// The schema reached the host as the server wrote it.
	lt, err := h.c.ListTools(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		if tool.Name == "filesystem__read_text_file" {
			b, _ := json.Marshal(tool.InputSchema)
			if !bytes.Contains(b, []byte(`"path"`)) {
				t.Fatalf("schema lost its properties: %s", b)
			}
		}
	}
}

const slashConfig = `
slash:
  jot:
    description: Take a note.
    arguments:
      - name: title
        description: The note's title.
    tools: [example__notes_add]
    activity: run
  probe:
    description: Echo with a pinned value.
    tools: [example__echo]
    activity: review
    pins:
      example__echo: {value: pinned}
    gated: true
`

func (h *host) prompt(name string, args map[string]string) string {
	h.t.Helper()
	req := mcp.GetPromptRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := h.c.GetPrompt(h.ctx(), req)
	if err != nil {
		h.t.Fatalf("prompts/get %s: %v", name, err)
	}
	var parts []string
	for _, m := range res.Messages {
		if tc, ok := m.Content.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestSlashCommandsOverStdio(t *testing.T) {
	h := startQuiver(t, exampleConfig("auto", slashConfig), hostOptions{})
	always := h.waitTools("example__current_time")
	lp, err := h.c.ListPrompts(h.ctx(), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var prompts []string
	for _, p := range lp.Prompts {
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(prompts, "jot") || !slices.Contains(prompts, "probe") {
		t.Fatalf("prompts/list = %v", prompts)
	}
	h.drain()
	h.turn = 1

	// Slash-gated: found and marked, never bound, refused outside its turn.
	res := h.searchUntil("echo arguments back", "example__echo")
	if !strings.Contains(toolresult.Text(res), "example__echo [mcp] [slash: /probe]") || strings.Contains(toolresult.Text(res), "Bound for your next step: example__echo") {
		t.Fatalf("search answer for a slash-gated tool:\n%s", toolresult.Text(res))
	}
	wantRefusal(t, h.call("example__echo", map[string]any{"value": 1}), "deny.slash_gated")
	h.drain()

	// A prompts/get is a new turn by itself (no meta): the forced tool
	// joins the list after the always-on ones, with one list_changed.
	text := h.prompt("jot", map[string]string{"title": "groceries"})
	if !strings.Contains(text, "- example__notes_add — Save a new note") || !strings.Contains(text, "call_tool") {
		t.Fatalf("the prompt must name the forced tool and call_tool:\n%s", text)
	}
	h.waitChanged()
	names, _ := h.list()
	if !slices.Equal(names, append(slices.Clone(always), "example__notes_add")) {
		t.Fatalf("in the jot turn tools/list = %v", names)
	}
	if r := h.call("call_tool", map[string]any{"name": "example__notes_add", "arguments": map[string]any{"title": "groceries", "body": "milk"}}); r.IsError {
		t.Fatalf("the forced tool through call_tool: %s", toolresult.Text(r))
	}
	// The next turn: gone again.
	h.turn = 2
	wantRefusal(t, h.call("example__notes_add", map[string]any{"title": "a", "body": "b"}), "deny.not_bound")
	h.waitChanged()
	if names, _ := h.list(); slices.Contains(names, "example__notes_add") {
		t.Fatalf("a forced tool outlived its turn: %v", names)
	}

	// The gated command: its tool runs in its turn, with its pins applied.
	h.drain()
	h.prompt("probe", nil)
	h.waitChanged()
	echo := h.call("example__echo", map[string]any{"value": "mine"})
	if echo.IsError || !strings.Contains(toolresult.Text(echo), `"pinned"`) || strings.Contains(toolresult.Text(echo), "mine") {
		t.Fatalf("the pinned value must reach the tool: %s", toolresult.Text(echo))
	}
	h.turn = 3
	wantRefusal(t, h.call("example__echo", map[string]any{"value": 1}), "deny.slash_gated")
}

func TestLoopGuardOverStdio(t *testing.T) {
	h := startQuiver(t, exampleConfig("auto", ""), hostOptions{})
	h.waitTools("example__current_time")
	h.turn = 1
	h.searchUntil("take a note", "example__notes_add")
	for i := 1; i <= 3; i++ {
		res := h.search("NOTE take a")
		wantRefusal(t, res, "deny.repeated_search")
		if !strings.Contains(toolresult.Text(res), "example__notes_add") {
			t.Fatalf("repeat %d must name the bound tools: %s", i, toolresult.Text(res))
		}
	}
	wantRefusal(t, h.search("take a note"), "deny.search_loop")
	h.turn = 2
	if res := h.search("take a note"); res.IsError {
		t.Fatalf("a new turn resets the guard: %s", toolresult.Text(res))
	}
}

func TestTokensCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.yaml")
	if err := os.WriteFile(cfg, []byte(exampleConfig("auto", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(quiverBin, "tokens", "--config", cfg, "--state-dir", filepath.Join(dir, "state")).CombinedOutput()
	if err != nil {
		t.Fatalf("quiver tokens: %v\n%s", err, out)
	}
	for _, want := range []string{"SERVER", "quiver", "example", "total", "% saved"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("quiver tokens lacks %q:\n%s", want, out)
		}
	}
}
