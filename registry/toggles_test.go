package registry

import (
	"strings"
	"testing"
)

func TestTogglesLaterLineWins(t *testing.T) {
	_, err := ParseToggles("/c/tools.yaml", []byte(`# my panel
enabled:
  - slack__*
disabled:
  - slack__delete_*
  - github__*
enabled_again_is_not_a_key: []
`))
	if err == nil || !strings.Contains(err.Error(), `tools.yaml:7: unknown key "enabled_again_is_not_a_key"`) {
		t.Fatalf("unknown key: %v", err)
	}
	tg, err := ParseToggles("/c/tools.yaml", []byte("disabled: [github__*]\nenabled:\n  - slack__*\n  - github__get_me\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		deflt   bool
		want    bool
		wantWhy string
	}{
		{"github__get_me", true, true, "tools.yaml:4 enabled github__get_me"},
		{"github__create_issue", true, false, "tools.yaml:1 disabled github__*"},
		{"slack__post", false, true, "tools.yaml:3 enabled slack__*"},
		{"other__x", false, false, ""},
		{"other__y", true, true, ""},
	} {
		on, why := tg.Decide(c.name, c.deflt)
		if on != c.want || why != c.wantWhy {
			t.Errorf("Decide(%s, %v) = %v %q; want %v %q", c.name, c.deflt, on, why, c.want, c.wantWhy)
		}
	}
	if _, err := ParseToggles("tools.yaml", []byte("enabled: [\"a[\"]\n")); err == nil || !strings.Contains(err.Error(), "tools.yaml:1") {
		t.Errorf("bad glob: %v", err)
	}
	if tg, err := ParseToggles("tools.yaml", nil); err != nil || len(tg.Rules) != 0 {
		t.Errorf("empty file: %v %v", tg, err)
	}
}

func TestEditToggles(t *testing.T) {
	for _, c := range []struct {
		name, src string
		on        bool
		patterns  []string
		want      string
		moved     bool
	}{
		{"new file", "", false, []string{"slack__*"}, "disabled:\n  - slack__*\n", false},
		{"comments only", "# my toggles\n# keep this\n", false, []string{"a__x"}, "# my toggles\n# keep this\n\ndisabled:\n  - a__x\n", false},
		{"keeps comments, drops contradicted names",
			"# the tools panel\nenabled:\n  - slack__post # needed\n  - github__*\ndisabled:\n  - gitlab__*\n",
			false, []string{"slack__*"},
			"# the tools panel\nenabled:\n  - github__*\ndisabled:\n  - gitlab__*\n  - slack__*\n", false},
		{"same entry again is not duplicated", "enabled: [a__x]\n", true, []string{"a__x"}, "enabled: [a__x]\n", false},
		{"a broader later entry moves the list",
			"disabled:\n  - a__x\nenabled:\n  - '*'\n", false, []string{"b__*"},
			"enabled:\n  - '*'\ndisabled:\n  - a__x\n  - b__*\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, moved, err := EditToggles([]byte(c.src), c.on, c.patterns)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want || moved != c.moved {
				t.Errorf("got (moved %v):\n%s\nwant (moved %v):\n%s", moved, out, c.moved, c.want)
			}
		})
	}
	if _, _, err := EditToggles(nil, true, []string{"a["}); err == nil {
		t.Error("a bad glob was accepted")
	}
}
