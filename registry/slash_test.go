package registry

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestSlashConfig(t *testing.T) {
	cfg, err := ParseConfig("s.yaml", []byte(`
slash:
  review:
    description: Review the notes without changing anything.
    arguments:
      - name: topic
        description: What to look at.
        required: true
    tools: [example__notes_list, example__notes_search]
    activity: review
    allow: ["example__notes_*"]
    pins:
      example__notes_search: {limit: 5}
  autofix:
    description: Fix what the linter found.
    tools: [lint__fix]
    activity: fixing
    read_only: false
    gated: true
  audit:
    description: Audit.
    tools: [compliance__audit]
    activity: run
slash_gated: [compliance__audit]
servers:
  example: {command: x}
  lint: {command: x}
  compliance: {command: x}
`), testLookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Slash) != 3 || cfg.Slash[0].Name != "review" || cfg.Slash[1].Name != "autofix" || cfg.Slash[2].Name != "audit" {
		t.Fatalf("slash entries out of file order: %+v", cfg.Slash)
	}
	rv := cfg.Slash[0]
	if !rv.ReadOnly || rv.Activity != "review" || rv.Line != 3 {
		t.Errorf("review: read-only %v, activity %q, line %d", rv.ReadOnly, rv.Activity, rv.Line)
	}
	if want := []SlashArgument{{Name: "topic", Description: "What to look at.", Required: true}}; !reflect.DeepEqual(rv.Arguments, want) {
		t.Errorf("arguments = %+v", rv.Arguments)
	}
	if rv.Pins["example__notes_search"]["limit"] != 5 {
		t.Errorf("pins = %#v", rv.Pins)
	}
	if cfg.Slash[1].ReadOnly {
		t.Errorf("a custom activity with read_only: false must not be read-only")
	}
	if want := []string{"lint__fix", "compliance__audit"}; !reflect.DeepEqual(cfg.SlashGated, want) {
		t.Errorf("SlashGated = %v, want %v", cfg.SlashGated, want)
	}
	if name, ok := cfg.SlashFor("compliance__audit"); !ok || name != "audit" {
		t.Errorf("SlashFor(compliance__audit) = %q, %v", name, ok)
	}
	if _, ok := cfg.SlashFor("example__notes_list"); ok {
		t.Errorf("a forced tool that is not gated has no slash gate")
	}
}

func TestSlashConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unknown key", "slash:\n  r:\n    description: x\n    tool: [a__b]\n", `s.yaml:4: unknown key "tool"`},
		{"no description", "slash:\n  r:\n    tools: [a__b]\n", "s.yaml:2: slash.r: give it a description"},
		{"unknown activity", "slash:\n  r:\n    description: x\n    activity: fixing\n", `s.yaml:4: slash.r.activity: quiver does not know "fixing"`},
		{"read_only without activity", "slash:\n  r:\n    description: x\n    read_only: true\n", "s.yaml:4: slash.r.read_only: name the activity"},
		{"builtin forced", "slash:\n  r:\n    description: x\n    tools:\n      - a__b\n      - call_tool\n", "s.yaml:6: slash.r.tools: call_tool is always on"},
		{"bad glob", "slash:\n  r:\n    description: x\n    allow: [\"[\"]\n", `s.yaml:4: slash.r.allow: "[" is not a valid pattern`},
		{"forced outside allow", "slash:\n  r:\n    description: x\n    tools: [b__c]\n    allow: [\"a__*\"]\n", "s.yaml:4: slash.r.tools: b__c is outside the command's allow list"},
		{"gated without tools", "slash:\n  r:\n    description: x\n    gated: true\n", "s.yaml:4: slash.r.gated: the command forces no tools"},
		{"gated never forced", "slash_gated:\n  - a__b\n", "s.yaml:2: slash_gated: no slash command forces a__b"},
		{"argument without name", "slash:\n  r:\n    description: x\n    arguments:\n      - description: y\n", "s.yaml:5: slash.r.arguments[0]: give the argument a name"},
		{"prefixed name", "slash:\n  a__b:\n    description: x\n", `s.yaml:2: slash.a__b: a slash command's name may not contain "__"`},
		{"bad name", "slash:\n  r x:\n    description: x\n", "s.yaml:2: slash.r x: a slash command's name may only use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConfigOptions{Lookup: testLookup(nil), Reserved: []string{"search_tools", "call_tool"}}.Parse("s.yaml", []byte(tc.yaml))
			if err == nil || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
