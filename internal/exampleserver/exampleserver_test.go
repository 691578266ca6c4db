package exampleserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// childEnv makes the test binary run Serve on its stdin and stdout instead of
// the tests, so a test can watch a real process die (the crash tool).
const childEnv = "EXAMPLESERVER_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := Serve(context.Background(), Options{TestTools: true}, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// start connects an initialized client to c's transport.
func start(t *testing.T, c *client.Client) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "exampleserver-test", Version: "1"}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// connect returns an initialized in-process client of New(opts).
func connect(t *testing.T, opts Options) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(New(opts))
	if err != nil {
		t.Fatal(err)
	}
	return start(t, c)
}

// call calls a tool with arguments given as JSON text and fails the test on
// a protocol error.
func call(t *testing.T, c *client.Client, tool, args string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: tool, RawArguments: json.RawMessage(args),
	}})
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	return res
}

// text returns a result's text content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	for _, c := range res.Content {
		if _, ok := c.(mcp.TextContent); !ok {
			t.Fatalf("content %T, want text", c)
		}
	}
	return toolresult.Text(res)
}

// ok calls a tool that must succeed and returns its text.
func ok(t *testing.T, c *client.Client, tool, args string) string {
	t.Helper()
	res := call(t, c, tool, args)
	if res.IsError {
		t.Fatalf("%s %s: error result %q", tool, args, text(t, res))
	}
	return text(t, res)
}

// fails calls a tool that must answer with an error result and returns its text.
func fails(t *testing.T, c *client.Client, tool, args string) string {
	t.Helper()
	res := call(t, c, tool, args)
	if !res.IsError {
		t.Fatalf("%s %s: got success %q, want an error result", tool, args, text(t, res))
	}
	return text(t, res)
}

func contains(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("got %q\nwant it to contain %q", got, w)
		}
	}
}

func TestToolsList(t *testing.T) {
	type annotations struct{ readOnly, destructive, idempotent, openWorld bool }
	want := map[string]annotations{
		"notes_add":    {},
		"notes_list":   {readOnly: true, idempotent: true},
		"notes_read":   {readOnly: true, idempotent: true},
		"notes_search": {readOnly: true, idempotent: true},
		"notes_delete": {destructive: true, idempotent: true},
		"search_text":  {readOnly: true, idempotent: true},
		"current_time": {readOnly: true, idempotent: true},
		"echo":         {readOnly: true, idempotent: true},
		"sleep":        {readOnly: true, idempotent: true},
		"crash":        {destructive: true},
		"big":          {readOnly: true, idempotent: true},
	}
	testTools := []string{"echo", "sleep", "crash", "big"}

	for _, tc := range []struct {
		name      string
		testTools bool
	}{
		{"user_tools_only_by_default", false},
		{"test_tools_on_request", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connect(t, Options{TestTools: tc.testTools})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// A raw tools/list: the typed one drops schema keywords.
			resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
				JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("raw-list"),
				Method: string(mcp.MethodToolsList),
			})
			if err != nil {
				t.Fatal(err)
			}
			var page struct {
				Tools []struct {
					Name        string `json:"name"`
					Title       string `json:"title"`
					Description string `json:"description"`
					InputSchema struct {
						Type                 string                    `json:"type"`
						Properties           map[string]map[string]any `json:"properties"`
						Required             []string                  `json:"required"`
						AdditionalProperties *bool                     `json:"additionalProperties"`
					} `json:"inputSchema"`
					Annotations map[string]any `json:"annotations"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(resp.Result, &page); err != nil {
				t.Fatalf("decode tools/list: %v\n%s", err, resp.Result)
			}
			var names []string
			for _, tool := range page.Tools {
				names = append(names, tool.Name)
				w, known := want[tool.Name]
				if !known {
					t.Errorf("unexpected tool %q", tool.Name)
					continue
				}
				if n := strings.Count(tool.Description, ". ") + 1; tool.Description == "" || n > 2 || !strings.HasSuffix(tool.Description, ".") {
					t.Errorf("%s: description %q: want one or two sentences", tool.Name, tool.Description)
				}
				if tool.Title == "" || tool.Annotations["title"] != tool.Title {
					t.Errorf("%s: title %q, annotation title %v", tool.Name, tool.Title, tool.Annotations["title"])
				}
				s := tool.InputSchema
				if s.Type != "object" || s.AdditionalProperties == nil {
					t.Errorf("%s: schema type %q, additionalProperties %v", tool.Name, s.Type, s.AdditionalProperties)
				} else if *s.AdditionalProperties != (tool.Name == "echo") {
					t.Errorf("%s: additionalProperties = %v", tool.Name, *s.AdditionalProperties)
				}
				for prop, schema := range s.Properties {
					if d, _ := schema["description"].(string); d == "" {
						t.Errorf("%s: property %q has no description", tool.Name, prop)
					}
				}
				for _, r := range s.Required {
					if _, ok := s.Properties[r]; !ok {
						t.Errorf("%s: required %q is not a property", tool.Name, r)
					}
				}
				got := annotations{
					readOnly:    tool.Annotations["readOnlyHint"] == true,
					destructive: tool.Annotations["destructiveHint"] == true,
					idempotent:  tool.Annotations["idempotentHint"] == true,
					openWorld:   tool.Annotations["openWorldHint"] == true,
				}
				if got != w {
					t.Errorf("%s: annotations %+v, want %+v", tool.Name, got, w)
				}
				for _, hint := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
					if _, set := tool.Annotations[hint]; !set {
						t.Errorf("%s: %s not set", tool.Name, hint)
					}
				}
			}
			var wantNames []string
			for name := range want {
				if tc.testTools || !slices.Contains(testTools, name) {
					wantNames = append(wantNames, name)
				}
			}
			slices.Sort(names)
			slices.Sort(wantNames)
			if !slices.Equal(names, wantNames) {
				t.Errorf("tools %v, want %v", names, wantNames)
			}
		})
	}
}

func TestNotes(t *testing.T) {
	c := connect(t, Options{NotesFile: filepath.Join(t.TempDir(), "notes.json")})

	t.Run("empty_store_says_so", func(t *testing.T) {
		contains(t, ok(t, c, "notes_list", `{}`), "no notes yet")
	})
	t.Run("add_returns_sequential_ids", func(t *testing.T) {
		contains(t, ok(t, c, "notes_add", `{"title":"Groceries","body":"Eggs, milk and COFFEE beans.","tags":["home"," errands ","HOME"]}`), "n1", "Groceries")
		contains(t, ok(t, c, "notes_add", `{"title":"Standup","body":"Ship the proxy.","tags":["work"]}`), "n2")
		contains(t, ok(t, c, "notes_add", `{"title":"Coffee shop","body":""}`), "n3")
	})
	t.Run("list_shows_id_created_title_tags", func(t *testing.T) {
		got := ok(t, c, "notes_list", `{}`)
		line := regexp.MustCompile(`(?m)^n1  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  Groceries  \[home, errands\]$`)
		if !line.MatchString(got) {
			t.Errorf("list:\n%s\nwant a line matching %s", got, line)
		}
		contains(t, got, "3 notes", "n2", "Standup", "n3")
	})
	t.Run("list_filters_by_tag_ignoring_case", func(t *testing.T) {
		got := ok(t, c, "notes_list", `{"tag":"WORK"}`)
		contains(t, got, "1 note tagged", "n2")
		if strings.Contains(got, "n1") {
			t.Errorf("tag filter leaked n1: %q", got)
		}
		contains(t, ok(t, c, "notes_list", `{"tag":"nope"}`), `No note is tagged "nope"`)
	})
	t.Run("read_returns_the_full_note", func(t *testing.T) {
		got := ok(t, c, "notes_read", `{"id":"n1"}`)
		contains(t, got, "id: n1\ntitle: Groceries\ntags: home, errands\ncreated: ", "\n\nEggs, milk and COFFEE beans.")
		contains(t, ok(t, c, "notes_read", `{"id":"n3"}`), "tags: (none)")
	})
	t.Run("search_needs_every_word_ignoring_case", func(t *testing.T) {
		got := ok(t, c, "notes_search", `{"query":"coffee  BEANS"}`)
		contains(t, got, `1 note matches "coffee BEANS"`, "n1")
		got = ok(t, c, "notes_search", `{"query":"coffee"}`)
		contains(t, got, "2 notes match", "n1", "n3")
		contains(t, ok(t, c, "notes_search", `{"query":"errands eggs"}`), "n1") // a tag and a body word
		contains(t, ok(t, c, "notes_search", `{"query":"coffee standup"}`), "No note matches")
	})
	t.Run("delete_removes_and_ids_are_not_reused", func(t *testing.T) {
		contains(t, ok(t, c, "notes_delete", `{"id":"n3"}`), `Deleted note n3 "Coffee shop"`)
		contains(t, fails(t, c, "notes_read", `{"id":"n3"}`), `no note with id "n3"`, "notes_list")
		contains(t, fails(t, c, "notes_delete", `{"id":"n3"}`), `no note with id "n3"`)
		contains(t, ok(t, c, "notes_add", `{"title":"Again","body":"x"}`), "n4")
	})
}

func TestNotesInMemoryWithoutFile(t *testing.T) {
	c := connect(t, Options{})
	contains(t, ok(t, c, "notes_add", `{"title":"Scratch","body":"kept in memory"}`), "n1")
	contains(t, ok(t, c, "notes_read", `{"id":"n1"}`), "kept in memory")
}

func TestNotesPersistAcrossServers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "deep", "er", "notes.json") // parents are created
	a := connect(t, Options{NotesFile: path})
	b := connect(t, Options{NotesFile: path})

	ok(t, a, "notes_add", `{"title":"Shared","body":"written by a","tags":["x"]}`)
	contains(t, ok(t, b, "notes_read", `{"id":"n1"}`), "written by a")
	contains(t, ok(t, b, "notes_add", `{"title":"Second","body":"written by b"}`), "n2")
	ok(t, a, "notes_delete", `{"id":"n1"}`)
	got := ok(t, b, "notes_list", `{}`)
	if strings.Contains(got, "n1") || !strings.Contains(got, "n2") {
		t.Errorf("b sees %q after a deleted n1", got)
	}

	// A fresh server on the same file picks up where the others left off.
	c := connect(t, Options{NotesFile: path})
	contains(t, ok(t, c, "notes_add", `{"title":"Third","body":"c"}`), "n3")

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc notesDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("notes file is not JSON: %v\n%s", err, data)
	}
	if doc.NextID != 4 || len(doc.Notes) != 2 {
		t.Errorf("file holds next_id %d and %d notes, want 4 and 2:\n%s", doc.NextID, len(doc.Notes), data)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("notes directory holds %d entries, want only notes.json (temporary files left behind?)", len(entries))
	}
}

func TestNotesConcurrentAddsAllLand(t *testing.T) {
	c := connect(t, Options{NotesFile: filepath.Join(t.TempDir(), "notes.json")})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { ok(t, c, "notes_add", `{"title":"t","body":"b"}`) })
	}
	wg.Wait()
	contains(t, ok(t, c, "notes_list", `{}`), "20 notes", "n20")
}

func TestNotesCorruptFile(t *testing.T) {
	for _, tc := range []struct {
		name, content, reason string
	}{
		{"invalid_json", "{\n  \"notes\": [\n    {\"id\": \"n1\",,}\n  ]\n}\n", "not valid JSON"},
		{"wrong_shape", `{"notes": {"id": "n1"}}`, "not a notes document"},
		{"bad_id", `{"next_id": 2, "notes": [{"id": "one", "title": "t"}]}`, `id "one"`},
		{"duplicate_id", `{"next_id": 2, "notes": [{"id": "n1"}, {"id": "n1"}]}`, `"n1" is used by more than one note`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "notes.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			c := connect(t, Options{NotesFile: path})
			for _, probe := range []struct{ tool, args string }{
				{"notes_list", `{}`},
				{"notes_read", `{"id":"n1"}`},
				{"notes_search", `{"query":"x"}`},
				{"notes_add", `{"title":"t","body":"b"}`},
				{"notes_delete", `{"id":"n1"}`},
			} {
				contains(t, fails(t, c, probe.tool, probe.args), path, "damaged", tc.reason, "left untouched")
			}
			if data, _ := os.ReadFile(path); string(data) != tc.content {
				t.Errorf("corrupt file was changed to %q", data)
			}
		})
	}
	t.Run("blank_file_holds_no_notes", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "notes.json")
		if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c := connect(t, Options{NotesFile: path})
		contains(t, ok(t, c, "notes_add", `{"title":"t","body":"b"}`), "n1")
	})
	t.Run("syntax_error_names_the_line", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "notes.json")
		if err := os.WriteFile(path, []byte("{\n\"notes\": [\n}"), 0o600); err != nil {
			t.Fatal(err)
		}
		contains(t, fails(t, connect(t, Options{NotesFile: path}), "notes_list", `{}`), "line 3")
	})
}

func TestNotesRejectBadArguments(t *testing.T) {
	c := connect(t, Options{})
	for _, tc := range []struct {
		name, tool, args string
		want             []string
	}{
		{"missing_body", "notes_add", `{"title":"t"}`, []string{`needs both "title" and "body"`, "Example arguments:"}},
		{"blank_title", "notes_add", `{"title":"  ","body":"b"}`, []string{`"title" must not be empty`}},
		{"multi_line_title", "notes_add", `{"title":"a\nb","body":"b"}`, []string{"single line"}},
		{"unknown_argument", "notes_add", `{"title":"t","body":"b","colour":"red"}`, []string{`Unknown argument "colour"`}},
		{"tags_not_an_array", "notes_add", `{"title":"t","body":"b","tags":"home"}`, []string{`Argument "tags" must be an array, not a string`}},
		{"tag_not_a_string", "notes_add", `{"title":"t","body":"b","tags":["a",1]}`, []string{`Every item of argument "tags" must be a string, not a number`}},
		{"empty_tag", "notes_add", `{"title":"t","body":"b","tags":[""]}`, []string{"empty tag"}},
		{"arguments_not_an_object", "notes_list", `["home"]`, []string{"must be a JSON object, not an array"}},
		{"id_missing", "notes_read", `{}`, []string{`"id" is required`}},
		{"id_as_number", "notes_read", `{"id":3}`, []string{`"id" must be a string, not a number`}},
		{"id_malformed", "notes_delete", `{"id":"3"}`, []string{`"3" is not a note id`, "n3"}},
		{"blank_query", "notes_search", `{"query":"   "}`, []string{"at least one word"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			contains(t, fails(t, c, tc.tool, tc.args), tc.want...)
		})
	}
}

// writeTree creates files under dir from a map of slash paths to contents.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSearchText(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"main.go":               "package main\n\nfunc handleA() {}\r\nfunc handleB() {}\n",
		"docs/notes.txt":        "nothing here\nhandle with care\n",
		"many.txt":              strings.Repeat("needle\n", 7),
		".git/config":           "handle = git\n",
		"node_modules/x.js":     "handle()\n",
		"image.bin":             "handle\x00\x01\x02",
		"huge.txt":              "handle\n" + strings.Repeat("x", maxSearchFileSize),
		"long.txt":              "handle " + strings.Repeat("é", 400) + "\n",
		"nested/deep/y_test.go": "func handleC() {}\n",
	})
	c := connect(t, Options{})
	args := func(m map[string]any) string {
		m["dir"] = dir
		b, _ := json.Marshal(m)
		return string(b)
	}
	p := func(name string) string { return filepath.Join(dir, filepath.FromSlash(name)) }

	t.Run("reports_path_line_text", func(t *testing.T) {
		got := ok(t, c, "search_text", args(map[string]any{"pattern": `func handle\w+`}))
		contains(t, got,
			p("main.go")+":3: func handleA() {}\n",
			p("main.go")+":4: func handleB() {}\n",
			p("nested/deep/y_test.go")+":1: func handleC() {}",
			"3 matching lines in ")
	})
	t.Run("skips_git_node_modules_binary_and_large_files", func(t *testing.T) {
		got := ok(t, c, "search_text", args(map[string]any{"pattern": `^handle`}))
		contains(t, got, p("docs/notes.txt")+":2: handle with care", "1 binary file", "1 file over 1 MiB")
		for _, skipped := range []string{".git", "node_modules", "image.bin", "huge.txt"} {
			if strings.Contains(got, skipped) {
				t.Errorf("result mentions %s:\n%s", skipped, got)
			}
		}
	})
	t.Run("glob_picks_files_by_name", func(t *testing.T) {
		got := ok(t, c, "search_text", args(map[string]any{"pattern": "handle", "glob": "*_test.go"}))
		contains(t, got, "y_test.go:1:", "1 matching line in 1 text file")
	})
	t.Run("glob_with_slash_matches_relative_path", func(t *testing.T) {
		got := ok(t, c, "search_text", args(map[string]any{"pattern": "handle", "glob": "docs/*.txt"}))
		contains(t, got, "notes.txt:2:", "1 matching line")
	})
	t.Run("caps_results_and_says_so", func(t *testing.T) {
		got := ok(t, c, "search_text", args(map[string]any{"pattern": "needle", "max_results": 3}))
		if n := strings.Count(got, "many.txt:"); n != 3 {
			t.Errorf("%d matches reported, want 3:\n%s", n, got)
		}
		contains(t, got, "Stopped after 3 matching lines; there are more")
	})
	t.Run("exactly_max_results_is_not_capped", func(t *testing.T) {
		got := ok(t, c, "search_text", args(map[string]any{"pattern": "needle", "max_results": 7}))
		contains(t, got, "7 matching lines in")
	})
	t.Run("long_lines_are_shortened_on_a_character_boundary", func(t *testing.T) {
		got := ok(t, c, "search_text", args(map[string]any{"pattern": "handle é", "glob": "long.txt"}))
		line, _, _ := strings.Cut(got, "\n")
		if !strings.HasSuffix(line, " …") || !utf8Valid(line) {
			t.Errorf("long line reported as %q", line)
		}
	})
	t.Run("no_match_says_what_was_searched", func(t *testing.T) {
		contains(t, ok(t, c, "search_text", args(map[string]any{"pattern": "zebra"})), `No line matches "zebra"`, "text files searched")
	})
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"bad_regexp", map[string]any{"pattern": "(unclosed"}, []string{"not a valid RE2 regular expression", "missing closing )"}},
		{"lookahead_is_not_re2", map[string]any{"pattern": "a(?=b)"}, []string{"no look-around"}},
		{"max_results_too_large", map[string]any{"pattern": "x", "max_results": 501}, []string{"between 1 and 500, not 501"}},
		{"max_results_not_integer", map[string]any{"pattern": "x", "max_results": 2.5}, []string{`"max_results" must be an integer, not the number 2.5`}},
		{"bad_glob", map[string]any{"pattern": "x", "glob": "[a"}, []string{`"glob" is not a valid glob`}},
		{"missing_pattern", map[string]any{}, []string{`"pattern" is required`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			contains(t, fails(t, c, "search_text", args(tc.args)), tc.want...)
		})
	}
	t.Run("missing_dir", func(t *testing.T) {
		contains(t, fails(t, c, "search_text", `{"dir":"/no/such/dir","pattern":"x"}`), `Directory "/no/such/dir" does not exist`)
	})
	t.Run("file_instead_of_dir", func(t *testing.T) {
		b, _ := json.Marshal(map[string]any{"dir": p("main.go"), "pattern": "x"})
		contains(t, fails(t, c, "search_text", string(b)), "is a file, not a directory")
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestSearchTextDoesNotFollowSymlinks(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.txt": "password\n"})
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Skipf("cannot create a symlink here: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linkdir")); err != nil {
		t.Skipf("cannot create a symlink here: %v", err)
	}
	b, _ := json.Marshal(map[string]any{"dir": dir, "pattern": "password"})
	contains(t, ok(t, connect(t, Options{}), "search_text", string(b)), "No line matches")
}

func TestCurrentTime(t *testing.T) {
	c := connect(t, Options{})
	for _, tc := range []struct {
		name, args, zone string
	}{
		{"defaults_to_utc", `{}`, "UTC"},
		{"iana_zone", `{"timezone":"Asia/Tokyo"}`, "Asia/Tokyo"},
		{"zone_with_daylight_saving", `{"timezone":"America/New_York"}`, "America/New_York"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ok(t, c, "current_time", tc.args)
			first, rest, _ := strings.Cut(got, "\n")
			at, err := time.Parse(time.RFC3339, first)
			if err != nil {
				t.Fatalf("first line %q is not RFC 3339: %v", first, err)
			}
			loc, _ := time.LoadLocation(tc.zone)
			if _, want := at.In(loc).Zone(); func() int { _, off := at.Zone(); return off }() != want {
				t.Errorf("%s: offset of %s does not match the zone", tc.zone, first)
			}
			if d := time.Since(at); d < -time.Second || d > 5*time.Second {
				t.Errorf("time %s is %v away from now", first, d)
			}
			contains(t, rest, tc.zone, at.In(loc).Weekday().String())
		})
	}
	for _, zone := range []string{"Mars/Olympus_Mons", "Local"} {
		t.Run("unknown_zone_"+zone, func(t *testing.T) {
			got := fails(t, c, "current_time", `{"timezone":"`+zone+`"}`)
			contains(t, got, `Unknown time zone "`+zone+`"`, "Europe/Paris")
		})
	}
}

func TestEchoKeepsArgumentsByteExact(t *testing.T) {
	c := connect(t, Options{TestTools: true})
	for _, tc := range []struct{ name, args string }{
		{"twenty_digit_integer", `{"value":12345678901234567890}`},
		{"big_and_precise_numbers", `{"a":-98765432109876543210,"b":1.000000000000000000001,"c":1e300}`},
		{"any_properties", `{"nested":{"list":[1,"two",null,true]},"unicode":"héllo \u2028"}`},
		{"no_arguments", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.args
			if want == "" {
				want = "{}"
			}
			if got := ok(t, c, "echo", tc.args); got != want {
				t.Errorf("echo returned %s, want %s", got, want)
			}
		})
	}
}

func TestSleep(t *testing.T) {
	t.Run("returns_after_the_wait", func(t *testing.T) {
		c := connect(t, Options{TestTools: true})
		start := time.Now()
		if got := ok(t, c, "sleep", `{"ms":30}`); got != "slept 30 ms" {
			t.Errorf("sleep returned %q", got)
		}
		if d := time.Since(start); d < 30*time.Millisecond {
			t.Errorf("returned after %v", d)
		}
	})
	t.Run("honours_cancellation", func(t *testing.T) {
		c := connect(t, Options{TestTools: true})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: "sleep", RawArguments: json.RawMessage(`{"ms":60000}`),
		}})
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("cancelled sleep returned after %v", d)
		}
		if err == nil {
			t.Fatalf("cancelled sleep succeeded: %+v", res)
		}
		contains(t, err.Error(), "sleep cancelled", "context deadline exceeded")
	})
	t.Run("sends_progress_when_asked", func(t *testing.T) {
		c := connect(t, Options{TestTools: true})
		var mu sync.Mutex
		var progress []string
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method != string(mcp.MethodNotificationProgress) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if n.Params.AdditionalFields["progressToken"] != "tok-1" {
				t.Errorf("progress token %v", n.Params.AdditionalFields["progressToken"])
			}
			// In process the value is the server's Go value, not decoded JSON.
			progress = append(progress, fmt.Sprint(n.Params.AdditionalFields["progress"]))
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: "sleep", RawArguments: json.RawMessage(`{"ms":40,"steps":4}`),
			Meta: &mcp.Meta{ProgressToken: "tok-1"},
		}})
		if err != nil || res.IsError {
			t.Fatalf("sleep: %v %+v", err, res)
		}
		deadline := time.Now().Add(2 * time.Second)
		for {
			mu.Lock()
			got := slices.Clone(progress)
			mu.Unlock()
			if len(got) == 4 || time.Now().After(deadline) {
				if !slices.Equal(got, []string{"1", "2", "3", "4"}) {
					t.Errorf("progress %v, want [1 2 3 4]", got)
				}
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("no_progress_without_token", func(t *testing.T) {
		c := connect(t, Options{TestTools: true})
		var n atomic.Int32
		c.OnNotification(func(mcp.JSONRPCNotification) { n.Add(1) })
		ok(t, c, "sleep", `{"ms":10,"steps":3}`)
		time.Sleep(20 * time.Millisecond)
		if n.Load() != 0 {
			t.Errorf("%d notifications without a progress token", n.Load())
		}
	})
	t.Run("rejects_bad_ms", func(t *testing.T) {
		c := connect(t, Options{TestTools: true})
		contains(t, fails(t, c, "sleep", `{}`), `"ms" is required`)
		contains(t, fails(t, c, "sleep", `{"ms":-1}`), "between 0 and 600000")
	})
}

func TestBig(t *testing.T) {
	c := connect(t, Options{TestTools: true})
	for _, n := range []int{0, 1, 63, 64, 65, 100_000} {
		got := ok(t, c, "big", `{"bytes":`+itoa(n)+`}`)
		if len(got) != n {
			t.Errorf("big %d returned %d bytes", n, len(got))
		}
	}
	contains(t, fails(t, c, "big", `{"bytes":67108865}`), "between 0 and 67108864")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestServe drives Serve over pipes with mcp-go's stdio client: the wire path
// quiver uses.
func TestServe(t *testing.T) {
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), Options{TestTools: true}, serverIn, serverOut)
		serverOut.Close()
	}()
	c := start(t, client.NewClient(transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader("")))))

	t.Run("echo_is_byte_exact_on_the_wire", func(t *testing.T) {
		if got := ok(t, c, "echo", `{"value":12345678901234567890}`); got != `{"value":12345678901234567890}` {
			t.Errorf("echo returned %s", got)
		}
	})
	t.Run("concurrent_calls_do_not_serialise", func(t *testing.T) {
		// mcp-go's default pool of 5 workers would need 4 rounds: 1.6 s.
		const calls, ms = 16, 400
		start := time.Now()
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() { ok(t, c, "sleep", `{"ms":400}`) })
		}
		wg.Wait()
		if d := time.Since(start); d > 2*ms*time.Millisecond {
			t.Errorf("%d concurrent %d ms sleeps took %v", calls, ms, d)
		}
	})
	t.Run("eof_stops_serve_cleanly", func(t *testing.T) {
		clientOut.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve returned %v at EOF, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Serve did not return after EOF")
		}
	})
}

func TestServeStopsWhenContextEnds(t *testing.T) {
	in, inW := io.Pipe()
	defer inW.Close() // releases mcp-go's blocked reader
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Options{}, in, io.Discard) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve returned %v when ctx ended, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after ctx ended")
	}
}

// TestCrashEndsTheProcess runs the server as a child process (see TestMain)
// and checks that crash kills it with status 3 in the middle of the call.
func TestCrashEndsTheProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	tr := transport.NewStdioWithOptions(exe, []string{childEnv + "=1"}, nil,
		transport.WithCommandStderrWriter(&stderr))
	c := client.NewClient(tr)
	start(t, c)
	ok(t, c, "notes_add", `{"title":"before","body":"the crash"}`) // alive and serving

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "crash"}})
	if !errors.Is(err, transport.ErrTransportClosed) {
		t.Errorf("crash call returned %v, want a closed transport", err)
	}
	err = c.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != CrashExitStatus {
		t.Errorf("child ended with %v, want exit status %d (stderr %q)", err, CrashExitStatus, stderr.String())
	}
}
