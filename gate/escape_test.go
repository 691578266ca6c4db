package gate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/quiver-mcp/quiver/internal/escapecorpus"
)

// loadEscapes reads testdata/escapes.json (a corpus the end-to-end test
// runs too, through a real filesystem server) and lays out its fixtures
// in f.
func loadEscapes(t testing.TB, f fixture) (escapecorpus.Corpus, func(string) string) {
	t.Helper()
	c, sub, err := escapecorpus.Load(filepath.Join("testdata", "escapes.json"), f.root, f.outside)
	if err != nil {
		t.Fatal(err)
	}
	return c, sub
}

// TestEscapeCorpus runs every attempt against a read tool and a write tool
// whose working directory is the fenced root. Zero escapes: no attempt may
// be allowed.
func TestEscapeCorpus(t *testing.T) {
	f := newFixture(t)
	corpus, sub := loadEscapes(t, f)
	if len(corpus.Attempts) < 60 {
		t.Fatalf("corpus has %d attempts, want at least 60", len(corpus.Attempts))
	}
	g := f.gate(t, Policy{})
	ctx := context.Background()
	open := json.RawMessage(`{"type":"object"}`)
	tools := []*Tool{
		{Name: "fs__read_any", Class: ClassRead, Schema: open, Bases: []string{f.root}, Home: f.outside},
		{Name: "fs__write_any", Class: ClassWrite, Schema: open, Bases: []string{f.root}, Home: f.outside},
	}
	for _, c := range corpus.Controls {
		for _, tl := range tools {
			d := g.Evaluate(ctx, call(tl, c.Arguments(sub)))
			if d.Verdict != Allow {
				t.Errorf("control %s via %s: got %s %s (%s); the harness would deny everything", c.Name, tl.Name, d.Verdict, d.Code, d.Reason)
			}
		}
	}
	escapes := 0
	for _, a := range corpus.Attempts {
		for _, base := range tools {
			tl := *base
			tl.PathArgs = a.PathArgs
			t.Run(a.Name+"/"+string(tl.Class), func(t *testing.T) {
				d := g.Evaluate(ctx, call(&tl, a.Arguments(sub)))
				if d.Verdict == Allow {
					escapes++
					t.Fatalf("ESCAPE: allowed %s (%s)", a.Arguments(sub), d.Reason)
				}
				if a.Expect != "" && d.Verdict.String() != a.Expect {
					t.Errorf("got %s %s (%s), corpus expects %s", d.Verdict, d.Code, d.Reason, a.Expect)
				}
				if d.Code == "" || d.Reason == "" {
					t.Errorf("decision without code or reason: %+v", d)
				}
			})
		}
	}
	if escapes > 0 {
		t.Fatalf("%d escapes", escapes)
	}
}

// TestLinkSwappedAfterApproval: a path granted while it was a plain
// directory is checked again once it becomes a link that points out.
func TestLinkSwappedAfterApproval(t *testing.T) {
	f := newFixture(t)
	g := f.gate(t, Policy{})
	ctx := context.Background()
	dir := filepath.Join(f.root, "swap")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := call(&Tool{Name: "fs__write_any", Schema: json.RawMessage(`{"type":"object"}`)}, `{"path":`+js(dir+"/x")+`}`)
	if d := g.Evaluate(ctx, c); d.Verdict != Allow {
		t.Fatalf("before the swap: %s %s", d.Verdict, d.Code)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, dir); err != nil {
		t.Fatal(err)
	}
	if d := g.Evaluate(ctx, c); d.Verdict == Allow {
		t.Fatalf("after the swap the call is still allowed: %s", d.Reason)
	}
}

// relink points the symlink at link to target, replacing what is there.
func relink(t *testing.T, link, target string) {
	t.Helper()
	if err := os.RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestPermitDoesNotSurviveALinkSwap: the user approves reading a link
// that points at a harmless file outside the fence; the link is then
// pointed at a secret. The retry is a new call, asked again; the same
// link, unmoved, is what the permit allows.
func TestPermitDoesNotSurviveALinkSwap(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	l := openTestLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	g := f.gate(t, Policy{}, WithLedger(l))
	harmless, secret := filepath.Join(f.outside, "harmless.txt"), filepath.Join(f.outside, "id_rsa")
	link := filepath.Join(f.root, "notes.txt")
	relink(t, link, harmless)
	c := call(readTool, `{"path":`+js(link)+`}`)
	d := g.Evaluate(ctx, c)
	check(t, d, want{Ask, CodeAskReadOutside, nil})
	a, err := l.RequestApproval(ctx, c.Session, c.Name, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ResolveApproval(ctx, a.ID, Resolution{Approve: true, Lifetime: Once}); err != nil {
		t.Fatal(err)
	}
	relink(t, link, secret)
	if d := g.Evaluate(ctx, c); d.Verdict == Allow {
		t.Fatalf("ESCAPE: the permit for %s allowed the link moved to %s (%s)", harmless, secret, d.Code)
	}
	relink(t, link, harmless)
	check(t, g.Evaluate(ctx, c), want{Allow, CodeAllowPermit, nil})
}

// TestRootTurnedIntoALink: a folder that is a root (nested in another, as
// the state dir is in the home folder, or a session's MCP root) is
// replaced by a link to the outside; paths through it are outside.
func TestRootTurnedIntoALink(t *testing.T) {
	ctx := context.Background()
	for _, session := range []bool{false, true} {
		f := newFixture(t)
		inner := filepath.Join(f.root, "sub", "state")
		if err := os.Mkdir(inner, 0o755); err != nil {
			t.Fatal(err)
		}
		p := Policy{}
		if !session {
			p.AllowedDirs = []string{inner}
		}
		g := f.gate(t, p)
		c := call(readTool, `{"path":`+js(filepath.Join(inner, "secret.txt"))+`}`)
		if session {
			// A session root outside the configured ones.
			outer := filepath.Join(filepath.Dir(f.root), "session-root")
			if err := os.Mkdir(outer, 0o755); err != nil {
				t.Fatal(err)
			}
			inner = outer
			c = call(readTool, `{"path":`+js(filepath.Join(outer, "secret.txt"))+`}`)
			c.Roots = []string{"file://" + outer}
		}
		check(t, g.Evaluate(ctx, c), want{Allow, CodeAllow, nil})
		if err := os.WriteFile(filepath.Join(f.outside, "secret.txt"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		relink(t, inner, f.outside)
		if d := g.Evaluate(ctx, c); d.Verdict == Allow {
			t.Fatalf("session root %v: ESCAPE through a root turned into a link: %s %s", session, d.Code, d.Reason)
		}
	}
}

// TestPathArgumentNames: which argument names the fence reads as paths.
// A name missed is an escape; a name wrongly taken only asks.
func TestPathArgumentNames(t *testing.T) {
	for name, want := range map[string]bool{
		"path": true, "output_path": true, "outputPath": true, "work-dir": true, "file_name": true,
		"dirName": true, "pathname": true, "inputfile": true, "outputdir": true, "basepath": true,
		"FILE": true, "targetFolder": true, "source": true, "HTMLFilePath": true,
		"profile": false, "xpath": false, "file_id": false, "content": false, "name": false,
		"fileSize": false, "query": false, "url": false, "file1": true, "path_2": true, "md5": false,
		"pathInProject": true, "file_path_list": true, "dir_mode": false, "uri": true, "workspace": true,
		"from": true, "to": true, "src": true, "dst": true, "dest": true, "target": true, "old_path": true,
		"newPath": true, "reply_to": false, "valid_from": false, "toggle": false,
	} {
		if got := isPathKey(name); got != want {
			t.Errorf("isPathKey(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestNestedAndPaddedPaths: a path inside a path argument's object, or
// with spaces a server may trim, is fenced like any other.
func TestNestedAndPaddedPaths(t *testing.T) {
	f := newFixture(t)
	g := f.gate(t, Policy{})
	ctx := context.Background()
	open := &Tool{Name: "fs__any", Class: ClassRead, Schema: json.RawMessage(`{"type":"object"}`), Bases: []string{f.root}, Home: f.outside}
	secret := filepath.Join(f.outside, "secret.txt")
	for _, args := range []string{
		`{"files":[{"name":` + js(secret) + `,"content":"x"}]}`,
		`{"path":{"value":` + js(secret) + `}}`,
		`{"file_name":` + js(secret) + `}`,
		`{"inputfile":` + js(secret) + `}`,
		`{"path":` + js(" "+secret) + `}`,
		`{"path":` + js("\uFEFF"+secret) + `}`,
		`{"path":` + js(" ．．\\root-evil\\secret.txt") + `}`,
		`{"path":` + js("%20..\\root-evil\\secret.txt") + `}`,
		`{"file1":` + js(secret) + `}`,
		`{"path_2":` + js(secret) + `}`,
		`{"files":{` + js(secret) + `:"x"}}`,
		`{"path":` + js(" file://"+secret) + `}`,
		`{"url":` + js("\uFEFFfile://"+secret) + `}`,
		`{"path":"100%/%2e%2e/%2e%2e/root-evil/secret.txt"}`,
		`{"uri":` + js(secret) + `}`,
		`{"project":` + js(secret) + `}`,
		`{"pathInProject":` + js(secret) + `}`,
		`{"path":{"base":` + js(secret) + `}}`,
		`{"edits":{` + js(secret) + `:"x"}}`,
		`{"path":"sub","name":"../../root-evil/secret.txt"}`,
	} {
		if d := g.Evaluate(ctx, call(open, args)); d.Verdict == Allow {
			t.Errorf("ESCAPE: %s allowed (%s)", args, d.Code)
		}
	}
	// What is not a path stays out of the fence: content that spans lines,
	// a plain word under a name that is not a path.
	d := g.Evaluate(ctx, call(open, `{"files":[{"name":"notes.txt","content":"/etc/passwd is mentioned\nhere"}],"profile":"x"}`))
	check(t, d, want{Allow, CodeAllow, nil})
}
