package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/internal/cputime"
)

var openSchema = json.RawMessage(`{"type":"object"}`)

// framed is a read or write tool of a server with the given frame.
func framed(class Class, bases []string, home string) *Tool {
	return &Tool{Name: "fs__" + string(class) + "_any", Server: "fs", Class: class, Schema: openSchema, Bases: bases, Home: home}
}

// elsewhere is a tool of a server whose relative paths are not files on
// this machine (path_base: none), such as a repository's paths.
func elsewhere() *Tool {
	t := framed(ClassRead, nil, "")
	t.RelativeElsewhere = true
	return t
}

// TestServerFrame: relative paths and "~" are judged where the server
// places them (its declared bases and HOME), and a path quiver cannot
// place is outside.
func TestServerFrame(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	root, sub, out := f.root, filepath.Join(f.root, "sub"), f.outside
	cases := []struct {
		name   string
		policy Policy
		tool   *Tool
		args   string
		want   want
	}{
		{"relative_without_bases_asks", Policy{}, framed(ClassRead, nil, ""), `{"path":"tmp/x/secret.txt"}`,
			want{Ask, CodeAskReadOutside, []string{`"tmp/x/secret.txt"`, "declares no path_base", "absolute path"}}},
		{"dot_without_bases_asks", Policy{}, framed(ClassRead, nil, ""), `{"path":"."}`,
			want{Ask, CodeAskReadOutside, []string{`"."`, "path_base"}}},
		{"empty_without_bases_asks", Policy{}, framed(ClassRead, nil, ""), `{"path":""}`,
			want{Ask, CodeAskReadOutside, []string{`""`, "path_base"}}},
		{"dot_slash_without_bases_asks", Policy{}, framed(ClassRead, nil, root), `{"path":"./x"}`,
			want{Ask, CodeAskReadOutside, []string{`"./x"`}}},
		{"relative_write_without_bases_asks_mutate", Policy{}, framed(ClassWrite, nil, ""), `{"path":"a.txt","content":"x"}`,
			want{Ask, CodeAskMutateOutside, []string{`"a.txt"`, "path_base"}}},
		{"relative_under_outside_fence_deny", Policy{OutsideFence: "deny"}, framed(ClassRead, nil, ""), `{"path":"a.txt"}`,
			want{Deny, CodeOutsideFence, []string{`"a.txt"`, "path_base"}}},
		{"relative_elsewhere_is_not_a_file_here", Policy{}, elsewhere(), `{"path":"README.md"}`,
			want{Allow, CodeAllow, nil}},
		{"absolute_elsewhere_is_still_judged", Policy{}, elsewhere(), `{"path":` + js(filepath.Join(out, "a.txt")) + `}`,
			want{Ask, CodeAskReadOutside, nil}},
		{"tilde_elsewhere_is_still_judged", Policy{}, elsewhere(), `{"path":"~/a.txt"}`,
			want{Ask, CodeAskReadOutside, nil}},
		// A prompt's "resourceUri": "test://example-resource" is a URI, not
		// a file name (the MCP conformance suite caught this).
		{"uri_of_another_scheme_under_a_path_name", Policy{}, framed(ClassRead, nil, ""), `{"resourceUri":"test://example-resource","uri":"https://example.com/a/b"}`,
			want{Allow, CodeAllow, nil}},
		{"uri_of_another_scheme_climbing_is_a_path", Policy{}, framed(ClassRead, nil, ""), `{"uri":"x://a/../../etc/passwd"}`,
			want{Ask, CodeAskReadOutside, nil}},
		{"relative_inside_the_one_base", Policy{}, framed(ClassRead, []string{sub}, ""), `{"path":"../a.txt"}`,
			want{Allow, CodeAllow, nil}},
		{"empty_is_the_base", Policy{}, framed(ClassRead, []string{sub}, ""), `{"path":""}`,
			want{Allow, CodeAllow, nil}},
		{"every_base_is_tried", Policy{}, framed(ClassRead, []string{root, out}, ""), `{"path":"a.txt"}`,
			want{Ask, CodeAskReadOutside, []string{filepath.Join(out, "a.txt")}}},
		{"relative_base_is_no_frame", Policy{}, framed(ClassRead, []string{"work"}, ""), `{"path":"a.txt"}`,
			want{Ask, CodeAskReadOutside, []string{"path_base"}}},
		{"tilde_with_unknown_home_asks", Policy{}, framed(ClassRead, []string{root}, ""), `{"path":"~/notes.txt"}`,
			want{Ask, CodeAskReadOutside, []string{`"~/notes.txt"`, "HOME", "absolute path"}}},
		{"bare_tilde_with_unknown_home_asks", Policy{}, framed(ClassRead, []string{root}, ""), `{"path":"~"}`,
			want{Ask, CodeAskReadOutside, []string{"HOME"}}},
		{"tilde_is_the_servers_home", Policy{}, framed(ClassRead, []string{root}, sub), `{"path":"~/notes.txt"}`,
			want{Allow, CodeAllow, nil}},
		{"tilde_outside_when_home_is", Policy{}, framed(ClassRead, []string{root}, out), `{"path":"~/notes.txt"}`,
			want{Ask, CodeAskReadOutside, []string{filepath.Join(out, "notes.txt")}}},
		{"tilde_without_bases_asks", Policy{}, framed(ClassRead, nil, sub), `{"path":"~/notes.txt"}`,
			want{Ask, CodeAskReadOutside, []string{"path_base"}}},
		{"windows_drive_is_unresolvable", Policy{}, framed(ClassRead, []string{root}, root), `{"path":"C:\\Users\\x"}`,
			want{Ask, CodeAskReadOutside, []string{"Windows"}}},
		{"absolute_needs_no_frame", Policy{}, framed(ClassRead, nil, ""), `{"path":` + js(filepath.Join(root, "a.txt")) + `}`,
			want{Allow, CodeAllow, nil}},
		{"rule_fence_outside_sees_unresolved", Policy{Rules: []Rule{{Tool: "fs__*", Fence: "outside", Action: "deny"}}}, framed(ClassRead, nil, ""), `{"path":"a.txt"}`,
			want{Deny, CodeDenyRule, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := f.gate(t, tc.policy)
			check(t, g.Evaluate(ctx, call(tc.tool, tc.args)), tc.want)
		})
	}
}

// TestResolvedPathsForCards: every path is reported as resolved, whether
// it is outside, and why quiver could not place it.
func TestResolvedPathsForCards(t *testing.T) {
	f := newFixture(t)
	g := f.gate(t, Policy{})
	in, out := filepath.Join(f.root, "a.txt"), filepath.Join(f.outside, "b.txt")
	d := g.Evaluate(context.Background(), call(framed(ClassRead, nil, ""), `{"a":`+js(in)+`,"b":`+js(out)+`,"path":"c.txt"}`))
	check(t, d, want{Ask, CodeAskReadOutside, nil})
	got := map[string]ResolvedPath{}
	for _, rp := range d.Resolved {
		got[rp.Arg] = rp
	}
	if rp := got["a"]; rp.Path != in || rp.Outside || rp.Unresolved != "" {
		t.Errorf("inside path: %+v", rp)
	}
	if rp := got["b"]; rp.Path != out || !rp.Outside || rp.Unresolved != "" {
		t.Errorf("outside path: %+v", rp)
	}
	if rp := got["path"]; rp.Raw != "c.txt" || rp.Path != "" || !rp.Outside || !strings.Contains(rp.Unresolved, "path_base") {
		t.Errorf("unresolved path: %+v", rp)
	}
	var unresolvedNeed bool
	for _, n := range d.Needs {
		if n.Unresolved == "c.txt" {
			unresolvedNeed = true
			if n.Path != "" || n.Capability != CapReadOutside {
				t.Errorf("unresolved need %+v", n)
			}
		}
	}
	if !unresolvedNeed {
		t.Errorf("needs %+v lack the unresolved path", d.Needs)
	}
}

// TestUnresolvedIsApprovedOnlyOnce: a path quiver could not place is
// allowed by a permit for the exact call, never by a grant, and an
// approval for the session of such a call becomes that permit.
func TestUnresolvedIsApprovedOnlyOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	l := openTestLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	g := f.gate(t, Policy{}, WithLedger(l))
	tl := framed(ClassRead, nil, "")
	c := call(tl, `{"path":"secret.txt"}`)

	// Broad grants someone made earlier do not cover it.
	for _, gr := range []Grant{
		{Scope: ScopePath, Capability: CapMutateOutside, Path: "/", Lifetime: Persistent},
		{Scope: ScopeTool, Tool: tl.Name, Lifetime: Persistent},
		{Scope: ScopeTool, Tool: tl.Name, Capability: CapReadOutside, Lifetime: Persistent},
	} {
		if _, err := l.AddGrant(ctx, gr); err != nil {
			t.Fatal(err)
		}
	}
	d := g.Evaluate(ctx, c)
	check(t, d, want{Ask, CodeAskReadOutside, nil})

	a, err := l.RequestApproval(ctx, c.Session, c.Name, d)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.ResolveApproval(ctx, a.ID, Resolution{Approve: true, Lifetime: ForSession})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lifetime != Once {
		t.Errorf("approval recorded as %q, want once", res.Lifetime)
	}
	check(t, g.Evaluate(ctx, c), want{Allow, CodeAllowPermit, nil})
	check(t, g.Evaluate(ctx, c), want{Ask, CodeAskReadOutside, nil})
	// Another relative path is another call.
	check(t, g.Evaluate(ctx, call(tl, `{"path":"other.txt"}`)), want{Ask, CodeAskReadOutside, nil})
}

// TestPathsInsideBracesAndJSON: a brace glob is judged by each of its
// choices and a JSON document in a string by the paths inside it (red
// team 5: "{ok.txt,../secret.txt}" read the secret, and an outside target
// inside {"ops": "[...]"} was written, each judged as one relative name).
func TestPathsInsideBracesAndJSON(t *testing.T) {
	f := newFixture(t)
	g := f.gate(t, Policy{})
	ctx := context.Background()
	tl := framed(ClassRead, []string{f.root}, f.root)
	secret := filepath.Join(f.outside, "secret.txt")
	rel, err := filepath.Rel(f.root, secret)
	if err != nil {
		t.Fatal(err)
	}
	doc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, args := range []string{
		`{"pattern":` + js("{ok.txt,"+rel+"}") + `}`,
		`{"path":` + js("{ok.txt,"+secret+"}") + `}`,
		`{"q":` + js("sub/{a,{b,../"+rel+"}}") + `}`,
		`{"ops":` + js(doc([]any{map[string]any{"target": secret, "text": "x"}})) + `}`,
		`{"ops":` + js(doc(map[string]any{"a": []any{map[string]any{"b": "sub/../" + rel}}})) + `}`,
		`{"paths":` + js("[\n"+js(secret)+"\n]") + `}`,
		// Documents Go's decoder refuses and Node and Python read (red
		// team 43): their string literals are judged.
		`{"ops":` + js(`[{"target":`+js(secret)+`,"text":"x","n":1e400}]`) + `}`,
		`{"ops":` + js(`[{"target":`+js(secret)+`,"n":NaN}]`) + `}`,
		`{"ops":` + js(`[{"target":`+js(secret)+`,},]`) + `}`,
		// Lists of paths in one string (red team 44b): each is judged.
		`{"files":` + js("ok.txt "+secret) + `}`,
		`{"files":` + js("ok.txt,"+rel) + `}`,
		`{"files":` + js("ok.txt;"+rel) + `}`,
		`{"files":` + js("ok.txt:"+secret) + `}`,
		`{"files":` + js("ok.txt|"+rel) + `}`,
		`{"q":` + js("ok.txt "+rel) + `}`,
		`{"files":` + js("sub/x "+rel) + `}`,
		// An outside first part the whole climbs back in from.
		`{"path":` + js(secret+" x/../../"+filepath.Base(f.outside)+"/../"+filepath.Base(f.root)+"/y") + `}`,
		// Quoted parts (red team 2 P1, P2): read without their quotes,
		// and as a shell reads them.
		`{"files":` + js(`ok.txt "`+rel+`"`) + `}`,
		`{"files":` + js(`ok.txt '`+secret+`'`) + `}`,
		`{"files":` + js("ok.txt `"+rel+"`") + `}`,
		`{"files":` + js(`'`+secret+`'`) + `}`,
		`{"files":` + js(`"ok.txt","`+rel+`"`) + `}`,
		`{"files":` + js(`ok.txt "`+filepath.Dir(secret)+`/x y/../secret.txt"`) + `}`,
		// A one-letter first part on unix is no drive (P3).
		`{"files":` + js("a:"+rel) + `}`,
		`{"files":` + js("C:"+rel) + `}`,
		// Query strings and options (P4).
		`{"files":` + js("a=ok.txt&b="+rel) + `}`,
		`{"files":` + js("--file="+secret) + `}`,
		`{"files":` + js("ok.txt?"+rel) + `}`,
		`{"files":` + js("a=ok.txt&b=..%2f"+rel) + `}`,
		// Single-quoted and unquoted flow documents (J1: YAML, JSON5,
		// Python literals).
		`{"ops":` + js(`[{'target': '`+secret+`', 'text': 'x'}]`) + `}`,
		`{"ops":` + js(`[{'target': '`+secret+`', 'text': 'it''s'}]`) + `}`,
		`{"ops":` + js(`[{'text': 'it\'s', 'target': '`+secret+`'}]`) + `}`,
		`{"ops":` + js(`{target: `+secret+`, text: x}`) + `}`,
		`{"ops":` + js(`[`+rel+`, ok.txt]`) + `}`,
	} {
		if d := g.Evaluate(ctx, call(tl, args)); d.Verdict == Allow {
			t.Errorf("ESCAPE: %s allowed (%s)", args, d.Code)
		}
	}
	// Inside, they still run; a document that spans lines under a name
	// that says nothing of paths is content, as any such string is.
	for _, args := range []string{
		`{"pattern":"{a.txt,sub/b.txt}"}`,
		`{"ops":` + js(doc([]any{map[string]any{"target": "sub/x.txt"}})) + `}`,
		`{"content":` + js("{\n  \"main\": "+js(secret)+"\n}") + `}`,
		`{"ops":` + js(`[{"target":"sub/x.txt","n":1e400}]`) + `}`,
		// A list inside, and a path with spaces in its folders' names.
		`{"files":"a.txt sub/b.txt,c.txt"}`,
		`{"path":"My Documents/x.txt"}`,
		`{"path":` + js(filepath.Join(f.root, "My Documents", "x.txt")) + `}`,
		`{"path":` + js(`"`+filepath.Join(f.root, "My Documents", "x.txt")+`"`) + `}`,
		`{"path":` + js(`'`+filepath.Join(f.root, "Application Support", "x.txt")+`'`) + `}`,
		`{"path":` + js(filepath.Join(f.root, "Application Support", "x.txt")) + `}`,
		`{"files":` + js(`a.txt "sub/b c.txt" 'd e.txt'`) + `}`,
		`{"files":"a.txt:sub/b.txt"}`,
		`{"files":"a=ok.txt&b=sub/x.txt"}`,
		`{"path":"sub/x.txt?v=2"}`,
		`{"url":"https://example.com/a/b?q=x/y&page=2#top"}`,
		`{"q":"https://example.com/search?q=a/b&next=/c"}`,
		`{"data":"aGVsbG8vd29ybGQ/Zm9v+YmFy=="}`,
		`{"blob":"dGhpcyBpcyBhIHRlc3Q="}`,
		`{"text":"Don't read it as 'and/or', it's fine = ok & done?"}`,
		`{"ops":` + js(`[{'target': 'sub/x.txt', 'text': 'it''s'}]`) + `}`,
		`{"ops":` + js(`{target: sub/x.txt, text: hello world}`) + `}`,
	} {
		check(t, g.Evaluate(ctx, call(tl, args)), want{Allow, CodeAllow, nil})
	}
}

// TestPathShapes: a value that is a path by its shape is fenced whatever
// its argument is called and however deep it sits; content is not.
func TestPathShapes(t *testing.T) {
	f := newFixture(t)
	g := f.gate(t, Policy{})
	ctx := context.Background()
	tl := framed(ClassRead, []string{f.root}, f.root)
	secret := filepath.Join(f.outside, "secret.txt")
	for _, args := range []string{
		`{"query":` + js(secret) + `}`,
		`{"a":{"b":[{"c":` + js(secret) + `}]}}`,
		`{"a":[[` + js(secret) + `]]}`,
		`{"q":"../root-evil/secret.txt"}`,
		`{"q":".\\..\\root-evil\\secret.txt"}`,
		`{"q":"~/../root-evil/secret.txt"}`,
		`{"q":"FiLe:///etc/passwd"}`,
		`{"q":"C:\\Windows\\win.ini"}`,
		`{"q":"c:/windows/win.ini"}`,
		`{"q":"\\\\server\\share\\x"}`,
		`{"q":"\\\\?\\C:\\x"}`,
		`{"q":` + js(" "+secret+"\n") + `}`,
		`{"q":` + js("／etc／passwd") + `}`,
		`{"edits":{"../root-evil/secret.txt":"x"}}`,
		`{"from":"sub/../../root-evil/secret.txt"}`,
		`{"to":"sub/../../root-evil/secret.txt"}`,
		`{"old_path":"sub/../../root-evil/x","newPath":"x"}`,
		`{"dest":"sub/../../root-evil/x"}`,
	} {
		if d := g.Evaluate(ctx, call(tl, args)); d.Verdict == Allow {
			t.Errorf("ESCAPE: %s allowed (%s)", args, d.Code)
		}
	}
	noBases := framed(ClassRead, nil, "")
	// A relative path by its look, under a name the fence does not know:
	// where the server declares no frame, quiver cannot place it (red
	// team: {"q":"outside/canary.txt"} was read from the server's folder).
	// White space and "://" inside a name do not make it prose or a URI
	// (red team 2): only a string that begins as a URI of another scheme
	// is not a path.
	for _, v := range []string{"./x", "outside/canary.txt", "sub/../../x", `sub\x`, "..", "a/..",
		"outside/canary file.txt", "outside/My Documents/x", "a b/c", "fenced/x://../../outside/canary.txt",
		"x y://../outside", "https://example.com/../../outside", "1/2", "2024/01/02"} {
		if d := g.Evaluate(ctx, call(noBases, `{"q":`+js(v)+`}`)); d.Verdict == Allow {
			t.Errorf("ESCAPE: %q under an unknown name, no bases: allowed (%s)", v, d.Code)
		}
	}
	for _, v := range []string{"hello", "hello world", "https://example.com/a/b", "test://static/resource/1"} {
		if d := g.Evaluate(ctx, call(noBases, `{"q":`+js(v)+`}`)); d.Verdict != Allow {
			t.Errorf("%q is not a path: %s %s", v, d.Code, d.Reason)
		}
	}
	// Content is not a path: several lines, longer than any path, or
	// shaped like nothing a server opens.
	for _, args := range []string{
		`{"content":` + js(secret+" is mentioned\nhere") + `}`,
		`{"content":` + js("/"+strings.Repeat("x", maxPathLen+10)) + `}`,
		`{"q":"hello world","n":"1/2","url":"https://example.com/a"}`,
		`{"delimiter":"/","sep":"//"}`,
		`{"q":"~user"}`,
	} {
		check(t, g.Evaluate(ctx, call(tl, args)), want{Allow, CodeAllow, nil})
	}
	// A path-named argument keeps the strict handling.
	check(t, g.Evaluate(ctx, call(tl, `{"path":`+js("/"+strings.Repeat("x", maxPathLen+10))+`}`)), want{Deny, CodeBadPath, nil})
	// quiver's justification is the model's words, not a path.
	run := &Tool{Name: "sh__run", Class: ClassExecute, Schema: openSchema, Bases: []string{f.root}}
	check(t, g.Evaluate(ctx, call(run, `{"command":"make","justification":"/etc/passwd must be rebuilt"}`)), want{Ask, CodeAskPolicy, nil})
}

// TestProtectedPaths: quiver's own files are out of reach of every tool,
// whatever the fence, rules, grants or permits say.
func TestProtectedPaths(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	state := filepath.Join(f.root, "state")
	cfg := filepath.Join(f.root, "conf", "servers.yaml")
	for _, d := range []string{state, filepath.Dir(cfg)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(cfg, []byte("servers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cfg, filepath.Join(f.root, "innocent.yaml")); err != nil {
		t.Fatal(err)
	}
	l := openTestLedger(t, filepath.Join(state, "ledger.db"))
	if _, err := l.AddGrant(ctx, Grant{Scope: ScopePath, Capability: CapMutateOutside, Path: "/", Lifetime: Persistent}); err != nil {
		t.Fatal(err)
	}
	read := framed(ClassRead, []string{filepath.Join(f.root, "conf")}, f.root)
	write := framed(ClassWrite, []string{f.root}, f.root)
	del := framed(ClassDestructive, []string{f.root}, f.root)
	cases := []struct {
		name   string
		policy Policy
		c      Call
		want   want
	}{
		{"read_config", Policy{}, call(read, `{"path":`+js(cfg)+`}`),
			want{Deny, CodeProtectedPath, []string{"quiver's own files"}}},
		{"write_config_allowed_by_rule", Policy{Rules: []Rule{{Tool: "fs__*", Action: "allow"}}}, call(write, `{"path":`+js(cfg)+`,"content":"x"}`),
			want{Deny, CodeProtectedPath, nil}},
		{"relative_in_the_servers_base", Policy{}, call(read, `{"path":"servers.yaml"}`),
			want{Deny, CodeProtectedPath, nil}},
		// A quoted part of a list (red team 2 P1: quiver's log).
		{"quoted_in_a_list", Policy{}, call(read, `{"files":"a.txt 'servers.yaml'"}`),
			want{Deny, CodeProtectedPath, nil}},
		{"through_a_link", Policy{}, call(read, `{"path":"~/innocent.yaml"}`),
			want{Deny, CodeProtectedPath, nil}},
		{"under_the_state_dir", Policy{}, call(read, `{"path":`+js(filepath.Join(state, "ledger.db"))+`}`),
			want{Deny, CodeProtectedPath, nil}},
		{"other_case_on_a_case_insensitive_disk", Policy{}, call(read, `{"path":`+js(strings.ToUpper(filepath.Join(state, "ledger.db")))+`}`),
			want{Deny, CodeProtectedPath, nil}},
		{"under_an_unknown_name", Policy{}, call(read, `{"q":`+js(filepath.Join(state, "ledger.db"))+`}`),
			want{Deny, CodeProtectedPath, nil}},
		{"before_outside_fence_deny", Policy{OutsideFence: "deny", AllowedDirs: []string{"/"}}, call(read, `{"path":`+js(cfg)+`}`),
			want{Deny, CodeProtectedPath, nil}},
		{"rename_the_folder_holding_them", Policy{}, call(write, `{"from":`+js(filepath.Join(f.root, "conf"))+`,"to":`+js(filepath.Join(f.root, "conf2"))+`}`),
			want{Deny, CodeProtectedPath, []string{"holds"}}},
		{"delete_an_ancestor", Policy{}, call(del, `{"path":`+js(f.root)+`}`),
			want{Deny, CodeProtectedPath, nil}},
		{"list_an_ancestor", Policy{}, call(read, `{"path":`+js(f.root)+`}`),
			want{Allow, CodeAllow, nil}},
		// A command reaches quiver's files from any folder: refusing its
		// working directory would protect nothing. Policy fences it.
		{"a_command_may_run_in_an_ancestor", Policy{Defaults: map[Class]string{ClassExecute: "allow"}},
			call(framed(ClassExecute, []string{f.root}, f.root), `{"cwd":`+js(f.root)+`,"justification":"build the project"}`),
			want{Allow, CodeAllow, nil}},
		{"but_not_on_the_files_themselves", Policy{Defaults: map[Class]string{ClassExecute: "allow"}},
			call(framed(ClassExecute, []string{f.root}, f.root), `{"cwd":`+js(state)+`,"justification":"build the project"}`),
			want{Deny, CodeProtectedPath, nil}},
		{"a_sibling_is_fine", Policy{}, call(write, `{"path":`+js(filepath.Join(f.root, "conf", "other.yaml"))+`,"content":"x"}`),
			want{Allow, CodeAllow, nil}},
		{"prefix_sibling_is_fine", Policy{}, call(write, `{"path":`+js(state+"-old")+`,"content":"x"}`),
			want{Allow, CodeAllow, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := f.gate(t, tc.policy, WithLedger(l), WithProtected(cfg, state))
			c := tc.c
			c.Roots = []string{"file:///"}
			check(t, g.Evaluate(ctx, c), tc.want)
		})
	}
	// A server that opens any string as a file, relative to the folder
	// it runs in, reaches quiver's files by a bare name: refused, under
	// any argument name (red team: {"q":"servers.yaml"} read the config).
	t.Run("by_name_from_the_servers_folder", func(t *testing.T) {
		g := f.gate(t, Policy{}, WithProtected(cfg, state))
		tool := framed(ClassRead, []string{f.root}, f.root)
		tool.Cwd = filepath.Join(f.root, "conf")
		for _, args := range []string{`{"q":"servers.yaml"}`, `{"q":" ../state/ledger.db"}`, `{"opts":{"x":["servers.yaml"]}}`, `{"servers.yaml":1}`} {
			check(t, g.Evaluate(ctx, call(tool, args)), want{Deny, CodeProtectedPath, nil})
		}
		check(t, g.Evaluate(ctx, call(tool, `{"q":"hello","r":"other.yaml"}`)), want{Allow, CodeAllow, nil})
	})
	// The same files through a link in the server's folder (red team 2:
	// "cfg" -> the configuration folder read servers.yaml after one
	// approval): judged by where the name leads, not by the name.
	t.Run("through_a_link_in_the_servers_folder", func(t *testing.T) {
		g := f.gate(t, Policy{}, WithProtected(cfg, state))
		cwd := t.TempDir()
		for name, to := range map[string]string{"cfg": filepath.Dir(cfg), "my cfg": filepath.Dir(cfg), "up": f.root} {
			if err := os.Symlink(to, filepath.Join(cwd, name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(f.root, "state"), filepath.Join(cwd, "sub", "s")); err != nil {
			t.Fatal(err)
		}
		tool := framed(ClassRead, []string{f.root}, "")
		tool.Cwd = cwd
		for _, args := range []string{
			`{"q":"cfg/servers.yaml"}`,
			`{"q":"my cfg/servers.yaml"}`,
			`{"q":"up/conf/servers.yaml"}`,
			`{"q":"missing/../cfg/servers.yaml"}`,
			`{"q":"sub/s/ledger.db"}`,
			`{"opts":{"x":["hello","cfg/servers.yaml"]}}`,
			`{"cfg/servers.yaml":1}`,
		} {
			check(t, g.Evaluate(ctx, call(tool, args)), want{Deny, CodeProtectedPath, nil})
		}
		check(t, g.Evaluate(ctx, call(tool, `{"q":"cfg/other.yaml"}`)), want{Allow, CodeAllow, nil})
		check(t, g.Evaluate(ctx, call(tool, `{"q":"hello world","n":3}`)), want{Allow, CodeAllow, nil})
	})
	// A folder above quiver's secrets (WithSecrets) is refused to a read
	// too: a tool given it may walk into them (search_text {dir: "~"}
	// read the page token). A folder above its other files is not, and a
	// command is fenced by policy, not by its folder.
	t.Run("a_folder_above_the_secrets", func(t *testing.T) {
		g := f.gate(t, Policy{Defaults: map[Class]string{ClassExecute: "allow"}}, WithProtected(cfg), WithSecrets(state))
		res := g.Evaluate(ctx, call(read, `{"dir":`+js(f.root)+`}`))
		check(t, res, want{Deny, CodeProtectedPath, []string{"where quiver keeps secrets", "folder inside it"}})
		check(t, g.Evaluate(ctx, call(read, `{"dir":`+js(filepath.Join(f.root, "conf"))+`}`)), want{Allow, CodeAllow, nil})
		check(t, g.Evaluate(ctx, call(framed(ClassExecute, []string{f.root}, f.root), `{"cwd":`+js(f.root)+`,"justification":"build the project"}`)),
			want{Allow, CodeAllow, nil})
		g = f.gate(t, Policy{}, WithProtected(cfg, state))
		check(t, g.Evaluate(ctx, call(read, `{"dir":`+js(f.root)+`}`)), want{Allow, CodeAllow, nil})
	})
	// The folders quiver's servers run in lie in the state dir and are
	// not protected (WithChildFolders): a server's names land there, and
	// each is emptied before its server starts. Climbing out is judged as
	// ever.
	t.Run("a_servers_own_folder_in_the_state_dir", func(t *testing.T) {
		run := filepath.Join(state, "run", "quiver-1")
		if err := os.MkdirAll(filepath.Join(run, "fs"), 0o700); err != nil {
			t.Fatal(err)
		}
		g := f.gate(t, Policy{}, WithSecrets(state), WithChildFolders(run))
		tool := framed(ClassWrite, []string{f.root}, filepath.Join(run, "fs"))
		tool.Cwd = filepath.Join(run, "fs")
		check(t, g.Evaluate(ctx, call(tool, `{"name":"notes","content":"x"}`)), want{Allow, CodeAllow, nil})
		check(t, g.Evaluate(ctx, call(tool, `{"path":"./notes.txt","content":"x"}`)), want{Allow, CodeAllow, nil})
		check(t, g.Evaluate(ctx, call(tool, `{"path":"../../../ledger.db","content":"x"}`)), want{Deny, CodeProtectedPath, nil})
		check(t, g.Evaluate(ctx, call(tool, `{"q":"../../../ledger.db"}`)), want{Deny, CodeProtectedPath, nil})
	})
	t.Run("relative_protected_path_refused", func(t *testing.T) {
		if _, err := New(Policy{}, WithProtected("state")); err == nil || !strings.Contains(err.Error(), "absolute") {
			t.Fatalf("New = %v, want an error saying absolute", err)
		}
	})
}

// deepChain makes depth nested folders under root and returns the
// deepest: every component of a path through it exists, so the fence
// looks every one up.
func deepChain(t testing.TB, root string, depth int) string {
	t.Helper()
	p := filepath.Join(root, "deep", strings.Repeat("d/", depth)) // Join cleans the final slash
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(p)
}

// deepCall is a call with n path values, each a file in dir.
func deepCall(tl *Tool, dir string, n int) Call {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/f%d", dir, i)
	}
	b, _ := json.Marshal(map[string]any{"paths": paths})
	return call(tl, string(b))
}

// TestFenceWorkIsBounded: a call that would make the fence resolve too
// much is refused, with what limit it hit and how to split it.
func TestFenceWorkIsBounded(t *testing.T) {
	f := newFixture(t)
	g := f.gate(t, Policy{})
	ctx := context.Background()
	tl := framed(ClassRead, []string{f.root}, f.root)
	deep := deepChain(t, f.root, 1900)
	var bases []string
	for i := 0; i < 8; i++ {
		bases = append(bases, filepath.Join(f.root, fmt.Sprint(i)))
	}
	for name, c := range map[string]Call{
		"801_values":       deepCall(tl, f.root, 801),
		"801_deep":         deepCall(tl, deep, 801),
		"256_long_missing": deepCall(tl, filepath.Join(f.root, "missing", strings.Repeat("d/", 1800)), maxPathValues),
		"one_deep_path":    deepCall(tl, deep, 1),
		"deep_paths":       deepCall(tl, deepChain(t, f.root, 100), maxPathValues),
		"many_readings":    call(framed(ClassRead, bases, f.root), manyReadingsArgs()),
		"nested_values":    call(tl, `{"a":[[[`+strings.Repeat(`{"b":"/x/y"},`, 300)+`{}]]]}`),
	} {
		t.Run(name, func(t *testing.T) {
			c.Session = name // refusals count per session and tool
			start := time.Now()
			d := g.Evaluate(ctx, c)
			check(t, d, want{Deny, CodeArgsTooComplex, []string{"Split", "calls"}})
			t.Logf("refused in %v: %s", time.Since(start), d.Reason)
		})
	}
	// The worst calls under the caps are accepted.
	for _, w := range worstShapes {
		check(t, g.Evaluate(ctx, worstCall(t, tl, f.root, w.values)), want{Allow, CodeAllow, nil})
	}
	check(t, g.Evaluate(ctx, missingCall(tl, f.root)), want{Allow, CodeAllow, nil})
}

// manyReadingsArgs is a call whose few values each read many ways:
// padding, backslashes and lookalikes, against eight bases.
func manyReadingsArgs() string {
	vals := make([]string, 64)
	for i := range vals {
		vals[i] = fmt.Sprintf(" ．\\x%d\\y\u3000", i)
	}
	b, _ := json.Marshal(map[string]any{"paths": vals})
	return string(b)
}

// worstShapes are the costliest calls the caps accept, by shape: the most
// path values, few lookups each; a middle count as deep as both lookup
// caps allow; one path as deep as they allow.
var worstShapes = []struct {
	name   string
	values int
}{
	{"many_values", maxPathValues},
	{"sixty_deep_paths", 60},
	{"one_deep_path", 1},
}

// missingCall is the call of the most values, each as long as the step
// cap allows, under a folder that does not exist: nothing below it is
// looked up, but every component is still walked.
func missingCall(tl *Tool, root string) Call {
	per := maxSteps/maxPathValues - len(splitPath(root)) - 2
	return deepCall(tl, filepath.Join(root, "missing", strings.Repeat("d/", per)), maxPathValues)
}

// worstCall is the call of n values, each as deep as the caps allow:
// every component of every path exists, and the file at the end does not.
func worstCall(t testing.TB, tl *Tool, root string, n int) Call {
	t.Helper()
	depth := 1
	for n*(depth+1) <= maxLstats && n*(depth+1)*(depth+2)/2 <= maxLookups {
		depth++
	}
	// The lookups go through root, deep/ and the chain, and end at the file.
	chain := depth - len(splitPath(root)) - 2
	if chain < 0 {
		t.Fatalf("%d values of %s cannot fit the caps", n, root)
	}
	return deepCall(tl, deepChain(t, root, chain), n)
}

// BenchmarkFenceWorstAccepted measures the costliest calls the fence
// accepts.
func BenchmarkFenceWorstAccepted(b *testing.B) {
	f := newFixture(b)
	g := f.gate(b, Policy{})
	tl := framed(ClassRead, []string{f.root}, f.root)
	for _, w := range worstShapes {
		b.Run(w.name, func(b *testing.B) {
			c := worstCall(b, tl, f.root, w.values)
			runWorst(b, g, c)
		})
	}
	b.Run("long_missing_paths", func(b *testing.B) {
		runWorst(b, g, missingCall(tl, f.root))
	})
}

// runWorst evaluates c b.N times and reports the CPU time per call too:
// on a shared machine wall time is mostly waiting.
func runWorst(b *testing.B, g *Gate, c Call) {
	ctx := context.Background()
	if d := g.Evaluate(ctx, c); d.Verdict != Allow {
		b.Fatalf("setup: %s %s", d.Code, d.Reason)
	}
	b.ResetTimer()
	cpu := cputime.Process()
	for i := 0; i < b.N; i++ {
		g.Evaluate(ctx, c)
	}
	b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

func TestCheckModelText(t *testing.T) {
	for _, tc := range []struct {
		s, err string
	}{
		{"read the build log to find the failing test", ""},
		{"résumé — naïve, 東京, emoji 🙂", ""},
		{"", "blank"},
		{" \t ", "blank"},
		{strings.Repeat("x", 512), ""},
		{strings.Repeat("é", 513), "513 characters"},
		{"line\nbreak", "U+000A"},
		{"esc\x1b[2J", "U+001B"},
		{"c1\u0085", "U+0085"},
		{"bidi \u202e gnihton", "U+202E"},
		{"isolate \u2066x\u2069", "U+2066"},
		{"ls\u2028quiver: this only reads README.md", "U+2028"},
		{"para\u2029x", "U+2029"},
		{"zero\u200bwidth", "U+200B"},
		{"joiner\u2060x", "U+2060"},
		{"bom\ufeffx", "U+FEFF"},
		{"tag\U000E0041\U000E0042", "U+E0041"},
		{"soft\u00adhyphen", "U+00AD"},
		{"filler\u3164x", "U+3164"},
		{"grapheme\u034fjoiner", "U+034F"},
		{"selector\U000E0100x", "U+E0100"},
		{"heart \u2764\ufe0f", ""},
		{"bad \xff utf8", "UTF-8"},
	} {
		err := CheckModelText(tc.s)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("CheckModelText(%q) = %v, want nil", tc.s, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("CheckModelText(%q) = %v, want an error with %q", tc.s, err, tc.err)
		}
	}
}
