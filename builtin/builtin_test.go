package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/internal/toolresult"
)

type fakeSearcher struct {
	res     index.Result
	closest []string
	got     index.Query
}

func (f *fakeSearcher) Search(_ context.Context, q index.Query) (index.Result, error) {
	f.got = q
	return f.res, nil
}
func (f *fakeSearcher) Closest(string, int, ...index.Kind) []string { return f.closest }

type fakeBinder struct {
	bound []string
	weak  []bool // what each Bind was told
}

func (b *fakeBinder) Bind(names []string, weak bool) []string {
	b.bound, b.weak = append(b.bound, names...), append(b.weak, weak)
	return names
}

type schemas map[string]json.RawMessage

func (s schemas) InputSchema(name string) (json.RawMessage, bool) { r, ok := s[name]; return r, ok }

// text is a result's text, as internal/toolresult reads it for everyone.
func text(res *mcp.CallToolResult) string { return toolresult.Text(res) }

func hit(name string, kind index.Kind, desc string) index.Hit {
	return index.Hit{Entry: index.Entry{Name: name, Kind: kind, Description: desc}, Score: 1.23456}
}

func TestSearchAnswer(t *testing.T) {
	s := &fakeSearcher{res: index.Result{Hits: []index.Hit{
		hit("lint__lint_nextflow", index.KindMCP, "Lint a Nextflow pipeline with the language server. It also formats."),
		hit("search_tools", index.KindCore, "Search every tool."),
		{Entry: index.Entry{Name: "howto", Kind: index.KindSkill, Description: "How to.", Path: "quiver://skills/howto.md"}},
	}}}
	b := &fakeBinder{}
	res := Search(context.Background(), s, b, schemas{"lint__lint_nextflow": json.RawMessage(`{ "type": "object" }`)}, json.RawMessage(`{"query":"lint nextflow","kind":"tool","limit":3}`))
	want := "Matches for \"lint nextflow\":\n" +
		"- lint__lint_nextflow [mcp] — Lint a Nextflow pipeline with the language server.\n" +
		"- search_tools [core] — Search every tool.\n" +
		"- howto [skill] — How to. (read it with read_file {\"path\": \"quiver://skills/howto.md\"})\n" +
		"Bound for your next step: lint__lint_nextflow\n" +
		"Input schemas (* required; {\"describe\": name} gives one in full):\n" +
		"lint__lint_nextflow()"
	if got := text(res); got != want {
		t.Fatalf("answer:\n%s\nwant:\n%s", got, want)
	}
	if strings.Join(b.bound, ",") != "lint__lint_nextflow" {
		t.Fatalf("only mcp hits bind; bound %v", b.bound)
	}
	if s.got.Limit != 3 || len(s.got.Kinds) != 2 {
		t.Fatalf("query passed on as %+v", s.got)
	}
	sc := res.StructuredContent.(map[string]any)
	if sc["query"] != "lint nextflow" || len(sc["hits"].([]map[string]any)) != 3 {
		t.Fatalf("structuredContent = %v", sc)
	}
}

func TestSearchNoHitGivesClosestAndBindsNothing(t *testing.T) {
	s := &fakeSearcher{closest: []string{"github__create_issue", "gitlab__create_issue"}}
	b := &fakeBinder{}
	got := text(Search(context.Background(), s, b, nil, json.RawMessage(`{"query":"crete isue"}`)))
	if !strings.Contains(got, "No tools match") || !strings.Contains(got, "github__create_issue, gitlab__create_issue") || len(b.bound) != 0 {
		t.Fatalf("answer %q, bound %v", got, b.bound)
	}
}

func TestSearchWeakSaysSo(t *testing.T) {
	s := &fakeSearcher{res: index.Result{Weak: true, Hits: []index.Hit{hit("a__b", index.KindMCP, "B.")}}}
	b := &fakeBinder{}
	if got := text(Search(context.Background(), s, b, nil, json.RawMessage(`{"query":"order a pizza"}`))); !strings.HasPrefix(got, "Nothing matched \"order a pizza\" well") {
		t.Fatalf("a weak result must say so first: %q", got)
	}
	if len(b.weak) != 1 || !b.weak[0] {
		t.Fatalf("the binder was told weak = %v; a weak answer's tools must only take free places", b.weak)
	}
}

func TestSearchRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{"missing_query", `{}`, "needs a query"},
		{"blank_query", `{"query":"  "}`, "needs a query"},
		{"unknown_field", `{"query":"x","q":"y"}`, `unknown field "q"`},
		{"bad_kind", `{"query":"x","kind":"tools"}`, `kind "tools"`},
		{"limit_too_big", `{"query":"x","limit":50}`, "1 to 10"},
		{"not_an_object", `["x"]`, "wrong type"},
		{"describe_with_query", `{"describe":"a__b","query":"x"}`, "describe takes a tool's exact name alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Search(context.Background(), &fakeSearcher{}, &fakeBinder{}, nil, json.RawMessage(tc.args))
			if !res.IsError || !strings.Contains(text(res), tc.want) || !strings.HasPrefix(text(res), "deny.args_invalid: ") {
				t.Fatalf("got %q, want a deny.args_invalid mentioning %q", text(res), tc.want)
			}
		})
	}
}

func TestFirstSentence(t *testing.T) {
	long := strings.Repeat("é", 200)
	for _, tc := range []struct{ in, want string }{
		{"Lists the files. Then more.", "Lists the files."},
		{"e.g. short. Fine", "e.g. short."},
		{"  spread \n over   lines ", "spread over lines"},
	} {
		if got := firstSentence(tc.in, 160); got != tc.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	got := firstSentence(long, 160)
	if len(got) > 160 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("cut must stay within 160 bytes on a rune boundary: %d bytes %q", len(got), got)
	}
}

type fakeCaller struct {
	name string
	args json.RawMessage
}

func (f *fakeCaller) CallTool(_ context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	f.name, f.args = name, args
	return mcp.NewToolResultText("ran")
}

func TestCallTool(t *testing.T) {
	for _, tc := range []struct{ name, args, wantName, wantArgs, wantErr string }{
		{"forwards_raw", `{"name":"a__b","arguments":{"n":12345678901234567890}}`, "a__b", `{"n":12345678901234567890}`, ""},
		{"arguments_of_wrong_shape_reach_the_gate", `{"name":"a__b","arguments":"x=1"}`, "a__b", `"x=1"`, ""},
		{"no_name", `{"arguments":{}}`, "", "", "needs the tool's name"},
		{"unknown_field", `{"name":"a__b","args":{}}`, "", "", `unknown field "args"`},
		{"not_through_itself", `{"name":"call_tool"}`, "", "", "call call_tool directly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCaller{}
			res := Call(context.Background(), f, json.RawMessage(tc.args))
			if tc.wantErr != "" {
				if !res.IsError || !strings.Contains(text(res), tc.wantErr) {
					t.Fatalf("got %q, want a refusal mentioning %q", text(res), tc.wantErr)
				}
				return
			}
			if f.name != tc.wantName || string(f.args) != tc.wantArgs {
				t.Fatalf("forwarded %s %s, want %s %s", f.name, f.args, tc.wantName, tc.wantArgs)
			}
		})
	}
}

type docs map[string][]byte

func (d docs) Read(p string) ([]byte, bool) { b, ok := d[p]; return b, ok }

type noFiles struct{}

func (noFiles) ReadFile(context.Context, string, int64, int64) ([]byte, int64, *mcp.CallToolResult) {
	return nil, 0, Refusal("ask.read_outside_fence", "outside")
}

func TestReadFile(t *testing.T) {
	lib := docs{"quiver://skills/a.md": []byte("héllo world")}
	read := func(args string) *mcp.CallToolResult {
		return ReadFile(context.Background(), lib, noFiles{}, json.RawMessage(args))
	}
	if got := text(read(`{"path":"quiver://skills/a.md"}`)); got != "héllo world" {
		t.Fatalf("whole doc: %q", got)
	}
	got := text(read(`{"path":"quiver://skills/a.md","limit":2}`))
	if !strings.HasPrefix(got, "h\n[… ") || !strings.Contains(got, `"offset": 1`) {
		t.Fatalf("a cut inside a rune must back off and say how to continue: %q", got)
	}
	if got := text(read(`{"path":"quiver://skills/a.md","offset":7}`)); got != "world" {
		t.Fatalf("offset: %q", got)
	}
	if res := read(`{"path":"/etc/passwd"}`); !res.IsError || !strings.HasPrefix(text(res), "ask.read_outside_fence") {
		t.Fatalf("files go through the file reader (the gate): %q", text(res))
	}
	if res := read(`{"path":"quiver://skills/a.md","offset":99}`); !res.IsError || !strings.Contains(text(res), "past the end") {
		t.Fatalf("offset past the end: %q", text(res))
	}
	if res := read(`{"path":""}`); !res.IsError {
		t.Fatal("an empty path must be refused")
	}
}

type recordingApprover struct{ got *CapabilityRequest }

func (r *recordingApprover) RequestCapability(_ context.Context, c CapabilityRequest) *mcp.CallToolResult {
	r.got = &c
	return mcp.NewToolResultText("granted")
}

func TestRequestCapabilityChecksBeforeAsking(t *testing.T) {
	for _, tc := range []struct{ name, args, wantErr string }{
		{"path_capability", `{"capability":"read_outside_fence","path":"/data","reason":"read the report"}`, ""},
		{"tool_capability", `{"capability":"execute","tool":"ci__run_tests","reason":"run the tests"}`, ""},
		{"relative_path", `{"capability":"read_outside_fence","path":"data","reason":"r"}`, "absolute path"},
		{"class_without_tool", `{"capability":"destructive","reason":"r"}`, "tool's exact name"},
		{"no_reason", `{"capability":"execute","tool":"a__b","reason":" "}`, "say why"},
		{"unknown_capability", `{"capability":"root","reason":"r"}`, `capability "root"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &recordingApprover{}
			res := RequestCapability(context.Background(), a, json.RawMessage(tc.args))
			if tc.wantErr == "" {
				if res.IsError || a.got == nil {
					t.Fatalf("valid request not passed on: %q", text(res))
				}
				return
			}
			if !res.IsError || a.got != nil || !strings.Contains(text(res), tc.wantErr) {
				t.Fatalf("got %q (asked: %v), want a refusal mentioning %q", text(res), a.got != nil, tc.wantErr)
			}
		})
	}
}

// TestSearchAnswerParametersInOneLine: a bound tool's schema is one line
// of parameters (required first, starred; short enums as their values;
// an array as its items' type), the best hit's in more room than the
// others', never the whole schema, which describe gives.
func TestSearchAnswerParametersInOneLine(t *testing.T) {
	long := strings.Repeat("a very long description of this parameter ", 100)
	var props []string
	for i := range 30 {
		props = append(props, fmt.Sprintf(`"option_number_%02d":{"type":"string"}`, i))
	}
	big := json.RawMessage(`{"type":"object","properties":{"parent":{"type":"object","description":"` + long + `"},"title":{"type":"string"},` +
		`"mode":{"type":"string","enum":["fast","slow"]},"tags":{"type":"array","items":{"type":"string"}},` + strings.Join(props, ",") + `},"required":["title","parent"]}`)
	s := &fakeSearcher{res: index.Result{Hits: []index.Hit{
		hit("notion__create_page", index.KindMCP, "Create a page."),
		hit("notion__update_page", index.KindMCP, "Update a page."),
	}}}
	got := text(Search(context.Background(), s, &fakeBinder{}, schemas{"notion__create_page": big, "notion__update_page": big}, json.RawMessage(`{"query":"notion page"}`)))
	lines := strings.Split(got, "\n")
	top, other := lines[len(lines)-2], lines[len(lines)-1]
	if !strings.HasPrefix(top, "notion__create_page(parent*: object, title*: string, mode: fast|slow, option_number_00: string, ") ||
		!strings.HasSuffix(top, " more)") || len(top) > len("notion__create_page")+maxTopSignatureBytes+20 {
		t.Errorf("the best hit's line:\n%s", top)
	}
	if !strings.HasPrefix(other, "notion__update_page(parent*: object, title*: string, mode: fast|slow, ") || len(other) > len("notion__update_page")+maxSignatureBytes+20 {
		t.Errorf("another bound tool's line:\n%s", other)
	}
	if strings.Contains(got, "a very long description") || strings.Contains(got, `"properties"`) {
		t.Errorf("a schema went in whole:\n%s", got)
	}
	if sig := signature(json.RawMessage(`{"properties":{"tags":{"type":"array","items":{"type":"string"}},"n":{"type":["integer","null"]}}}`), 100); sig != "(n: integer|null, tags: string[])" {
		t.Errorf("signature = %s", sig)
	}
}
