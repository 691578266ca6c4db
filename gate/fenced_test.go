package gate

import (
	"context"
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
