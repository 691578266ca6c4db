package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fenced answers what quiver asks of the folders above its servers' run
// folder: is it one a call may write with no card (an allowed_dir or
// under one)? The servers' own folders are inside the fence but are
// quiver's to empty, so a folder above them is not fenced by them.
func TestFencedIsTheAllowedDirsAndBelow(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(home, "project")
	run := filepath.Join(t.TempDir(), "run")
	g, err := New(Policy{AllowedDirs: []string{project}}, WithChildFolders(filepath.Join(run, "srv-a")))
	if err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{
		project:                             true,
		filepath.Join(project, "x", "y"):    true,
		home:                                false,
		filepath.Join(home, "project-evil"): false,
		run:                                 false,
		filepath.Dir(run):                   false,
	} {
		if got := g.Fenced(dir); got != want {
			t.Errorf("Fenced(%s) = %v, want %v", dir, got, want)
		}
	}
}

// The servers' own folders are fence roots, but a refusal names only the
// folders the person allowed: listing quiver's run folders in every card
// and refusal told the model of places it was never given (issue 29).
func TestOutsideNamesOnlyTheAllowedFolders(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	child := filepath.Join(t.TempDir(), "run", "srv-a")
	g, err := New(Policy{AllowedDirs: []string{project}}, WithChildFolders(child))
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "x.txt")
	d := g.Evaluate(context.Background(), call(framed(ClassRead, nil, ""), `{"path":`+js(outside)+`}`))
	if !strings.Contains(d.Reason, project) || strings.Contains(d.Reason, child) {
		t.Errorf("the reason must name %s and not %s: %s", project, child, d.Reason)
	}
}

// A server's own folder is its calls' alone: a call of another server
// that wrote an .npmrc in it, between its emptying and its server's
// start, would run code there (red team W1). For every other server's
// calls, and quiver's builtins, it is as protected as the run folder.
func TestServersOwnFolderIsItsOwn(t *testing.T) {
	project := filepath.Join(t.TempDir(), "project")
	run := filepath.Join(t.TempDir(), "run", "quiver-1")
	files, w := filepath.Join(run, "srv-files"), filepath.Join(run, "srv-w")
	for _, d := range []string{files, w} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	g, err := New(Policy{AllowedDirs: []string{project}}, WithProtected(run), WithChildFolders(files, w))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tool := func(server, cwd string) *Tool {
		tl := framed(ClassWrite, []string{cwd}, "")
		tl.Name, tl.Server, tl.Cwd = server+"__write", server, cwd
		return tl
	}
	npmrc := filepath.Join(files, ".npmrc")
	check(t, g.Evaluate(ctx, call(tool("w", w), `{"path":`+js(npmrc)+`,"content":"x"}`)), want{Deny, CodeProtectedPath, nil})
	check(t, g.Evaluate(ctx, call(tool("w", w), `{"path":"../srv-files/.npmrc","content":"x"}`)), want{Deny, CodeProtectedPath, nil})
	check(t, g.Evaluate(ctx, call(tool("w", w), `{"q":"../srv-files/t.cjs"}`)), want{Deny, CodeProtectedPath, nil})
	builtin := framed(ClassWrite, nil, "")
	builtin.Server = ""
	check(t, g.Evaluate(ctx, call(builtin, `{"path":`+js(npmrc)+`,"content":"x"}`)), want{Deny, CodeProtectedPath, nil})
	// The same write by files' own call lands in its own folder.
	check(t, g.Evaluate(ctx, call(tool("files", files), `{"path":`+js(npmrc)+`,"content":"x"}`)), want{Allow, CodeAllow, nil})
	check(t, g.Evaluate(ctx, call(tool("files", files), `{"path":"notes.txt","content":"x"}`)), want{Allow, CodeAllow, nil})
	check(t, g.Evaluate(ctx, call(tool("w", w), `{"path":"notes.txt","content":"x"}`)), want{Allow, CodeAllow, nil})
}
