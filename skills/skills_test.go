package skills

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestShippedSkillLoads(t *testing.T) {
	lib, errs := Load(nil)
	if len(errs) > 0 {
		t.Fatalf("shipped skills failed to load: %v", errs)
	}
	if len(lib.Docs()) == 0 {
		t.Fatal("quiver ships no skill")
	}
	d := lib.Docs()[0]
	if !strings.HasPrefix(d.Path, EmbeddedPrefix) || d.Kind != KindSkill || d.Description == "" {
		t.Fatalf("shipped skill = %+v", d)
	}
	if !slices.Contains(d.Headings, "Call what the search bound") {
		t.Errorf("headings not indexed: %v", d.Headings)
	}
	body, ok := lib.Read(d.Path)
	if !ok || !strings.Contains(string(body), "search_tools") {
		t.Fatalf("Read(%q) = %q, %v", d.Path, body, ok)
	}
	if _, ok := lib.Read("/etc/passwd"); ok {
		t.Fatal("Read must only return known documents")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, text, wantErr string
		kind                string
		headings            []string
	}{
		{name: "skill_with_headings", text: "---\nname: a\ndescription: does a\n---\n# One\ntext\n## Two\n```\n# not a heading\n```\n", kind: KindSkill, headings: []string{"One", "Two"}},
		{name: "reference_kind", text: "---\nname: r\ndescription: facts\nkind: reference\nkeywords: [x, y]\n---\nbody", kind: KindReference},
		{name: "crlf_line_ends", text: "---\r\nname: a\r\ndescription: d\r\n---\r\n# H\r\n", kind: KindSkill, headings: []string{"H"}},
		{name: "no_front_matter", text: "# just markdown", wantErr: "no front matter"},
		{name: "unclosed_front_matter", text: "---\nname: a\n", wantErr: "no closing ---"},
		{name: "missing_description", text: "---\nname: a\n---\n", wantErr: "needs name and description"},
		{name: "unknown_key", text: "---\nname: a\ndescription: d\nauthor: me\n---\n", wantErr: "author"},
		{name: "bad_kind", text: "---\nname: a\ndescription: d\nkind: tool\n---\n", wantErr: `kind "tool"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse("x.md", []byte(tc.text))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Kind != tc.kind || (tc.headings != nil && !slices.Equal(d.Headings, tc.headings)) {
				t.Fatalf("got kind %q headings %v", d.Kind, d.Headings)
			}
		})
	}
}

func TestLoadDirsSkipsBadFilesAndKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "good.md"), []byte("---\nname: deploy\ndescription: How we deploy.\n---\n# Steps\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "bad.md"), []byte("no front matter"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o600)
	lib, errs := Load([]string{dir})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "bad.md") {
		t.Fatalf("errs = %v, want one naming bad.md", errs)
	}
	var names []string
	for _, d := range lib.Docs() {
		names = append(names, d.Name)
	}
	if !slices.Contains(names, "deploy") {
		t.Fatalf("docs = %v, want deploy among them", names)
	}
	if _, ok := lib.Read(filepath.Join(dir, "good.md")); !ok {
		t.Fatal("a loaded document must be readable by its absolute path")
	}
}
