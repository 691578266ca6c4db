package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a fenced root and its sibling outside the fence.
type fixture struct {
	root, outside string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{root: filepath.Join(base, "root"), outside: filepath.Join(base, "root-evil")}
	for _, d := range []string{f.root, f.outside, filepath.Join(f.root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f fixture) gate(t testing.TB, p Policy, opts ...Option) *Gate {
	t.Helper()
	p.AllowedDirs = append([]string{f.root}, p.AllowedDirs...)
	g, err := New(p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func boolp(b bool) *bool { return &b }

var (
	readTool = &Tool{Name: "fs__read_file", Server: "fs", Hints: Hints{ReadOnly: boolp(true)},
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}`)}
	writeTool = &Tool{Name: "fs__write_file", Server: "fs",
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)}
	deleteTool = &Tool{Name: "fs__delete", Server: "fs", Hints: Hints{Destructive: boolp(true)},
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	runTool = &Tool{Name: "shell__run_command", Server: "shell", Class: ClassExecute,
		Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`)}
	fetchTool = &Tool{Name: "web__fetch", Server: "web", Hints: Hints{OpenWorld: boolp(true)},
		Schema: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}}}`)}
)

func call(tool *Tool, args string) Call {
	return Call{Session: "s1", Name: tool.Name, Tool: tool, Visible: true, Args: json.RawMessage(args)}
}

func js(s string) string { b, _ := json.Marshal(s); return string(b) }

type want struct {
	verdict Verdict
	code    string
	reason  []string // substrings
}

func check(t *testing.T, d Decision, w want) {
	t.Helper()
	if d.Verdict != w.verdict || d.Code != w.code {
		t.Fatalf("got %s %s (%s), want %s %s", d.Verdict, d.Code, d.Reason, w.verdict, w.code)
	}
	for _, s := range w.reason {
		if !strings.Contains(d.Reason, s) {
			t.Errorf("reason %q lacks %q", d.Reason, s)
		}
	}
}

func TestEvaluate(t *testing.T) {
	f := newFixture(t)
	inside := filepath.Join(f.root, "a.txt")
	outsideFile := filepath.Join(f.outside, "secret")
	ctx := context.Background()

	cases := []struct {
		name   string
		policy Policy
		call   func() Call
		want   want
	}{
		{"unknown_tool_names_closest", Policy{}, func() Call {
			return Call{Name: "fs__reed", Closest: []string{"fs__read_file"}}
		}, want{Deny, CodeUnknownTool, []string{"fs__read_file"}}},
		{"withheld_tool_refused", Policy{}, func() Call {
			c := call(readTool, `{}`)
			c.Withheld = true
			return c
		}, want{Deny, CodeWithheld, nil}},
		{"unbound_tool_says_search_first", Policy{}, func() Call {
			c := call(readTool, `{}`)
			c.Visible = false
			return c
		}, want{Deny, CodeNotBound, []string{"search_tools"}}},
		{"slash_gated_outside_its_slash", Policy{}, func() Call {
			tl := *readTool
			tl.SlashGated = true
			return call(&tl, `{"path":`+js(inside)+`}`)
		}, want{Deny, CodeSlashGated, nil}},
		{"slash_gated_runs_when_forced", Policy{}, func() Call {
			tl := *readTool
			tl.SlashGated = true
			c := call(&tl, `{"path":`+js(inside)+`}`)
			c.Forced = true
			return c
		}, want{Allow, CodeAllow, nil}},
		{"array_args_are_not_an_object", Policy{}, func() Call { return call(readTool, `["x"]`) },
			want{Deny, CodeArgsShape, []string{"an array"}}},
		{"missing_required_field_named", Policy{}, func() Call { return call(readTool, `{}`) },
			want{Deny, CodeArgsInvalid, []string{`missing required field "path"`}}},
		{"wrong_type_in_plain_words", Policy{}, func() Call { return call(readTool, `{"path":`+js(inside)+`,"limit":"ten"}`) },
			want{Deny, CodeArgsInvalid, []string{`field "limit" must be an integer, not a string`}}},
		{"below_minimum", Policy{}, func() Call { return call(readTool, `{"path":`+js(inside)+`,"limit":0}`) },
			want{Deny, CodeArgsInvalid, []string{`field "limit" must be at least 1`}}},
		{"unknown_field_where_schema_closes", Policy{}, func() Call { return call(readTool, `{"path":`+js(inside)+`,"lmit":3}`) },
			want{Deny, CodeArgsInvalid, []string{`unknown field "lmit"`, "known fields: limit, path"}}},
		{"unknown_field_allowed_on_open_schema", Policy{}, func() Call {
			return call(writeTool, `{"path":`+js(inside)+`,"content":"x","mode":"w"}`)
		}, want{Allow, CodeAllow, nil}},
		{"strict_args_refuses_unknown_on_open_schema", Policy{StrictArgs: true}, func() Call {
			return call(writeTool, `{"path":`+js(inside)+`,"content":"x","mode":"w"}`)
		}, want{Deny, CodeArgsInvalid, []string{`unknown field "mode"`}}},
		{"strict_args_sees_allOf_properties", Policy{StrictArgs: true}, func() Call {
			tl := &Tool{Name: "x__combo", Schema: json.RawMessage(`{"type":"object","allOf":[{"properties":{"a":{"type":"string"}}}],"properties":{"b":{"type":"string"}}}`)}
			return call(tl, `{"a":"1","b":"2"}`)
		}, want{Allow, CodeAllow, nil}},
		{"strict_args_draft07_plain_schema", Policy{StrictArgs: true}, func() Call {
			tl := &Tool{Name: "x__d7", Schema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string"}}}`)}
			return call(tl, `{"a":"1","zz":2}`)
		}, want{Deny, CodeArgsInvalid, []string{`unknown field "zz"`}}},
		{"draft04_exclusive_minimum", Policy{}, func() Call {
			tl := &Tool{Name: "x__d4", Schema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}}}`)}
			return call(tl, `{"n":0}`)
		}, want{Deny, CodeArgsInvalid, []string{`field "n"`}}},
		{"file_ref_in_schema_is_never_loaded", Policy{}, func() Call {
			tl := &Tool{Name: "x__ref", Schema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)}
			return call(tl, `{"a":1}`)
		}, want{Allow, CodeAllow, nil}},
		{"read_only_activity_refuses_write", Policy{}, func() Call {
			c := call(writeTool, `{"path":`+js(inside)+`,"content":"x"}`)
			c.Activity, c.ReadOnlyActivity = "review", true
			return c
		}, want{Deny, CodeReadOnly, []string{"review", `"write" capability`}}},
		{"read_only_activity_allows_read", Policy{}, func() Call {
			c := call(readTool, `{"path":`+js(inside)+`}`)
			c.Activity, c.ReadOnlyActivity = "review", true
			return c
		}, want{Allow, CodeAllow, nil}},
		{"execute_needs_justification", Policy{}, func() Call { return call(runTool, `{"command":"ls"}`) },
			want{Deny, CodeJustification, []string{"missing"}}},
		{"blank_justification", Policy{}, func() Call { return call(runTool, `{"command":"ls","justification":"  "}`) },
			want{Deny, CodeJustification, []string{"blank"}}},
		{"long_justification", Policy{}, func() Call {
			return call(runTool, `{"command":"ls","justification":`+js(strings.Repeat("x", 513))+`}`)
		}, want{Deny, CodeJustification, []string{"513 characters"}}},
		{"bidi_in_justification", Policy{}, func() Call {
			return call(runTool, `{"command":"ls","justification":"list files \u202e gnihton"}`)
		}, want{Deny, CodeJustification, []string{"U+202E"}}},
		{"control_in_justification", Policy{}, func() Call {
			return call(runTool, `{"command":"ls","justification":"list\u001b[2Jfiles"}`)
		}, want{Deny, CodeJustification, []string{"control"}}},
		{"justified_execute_asks_by_default", Policy{}, func() Call {
			return call(runTool, `{"command":"ls","justification":"list the build output"}`)
		}, want{Ask, CodeAskPolicy, []string{"execute"}}},
		{"read_inside_fence_allowed", Policy{}, func() Call { return call(readTool, `{"path":`+js(inside)+`}`) },
			want{Allow, CodeAllow, nil}},
		{"relative_path_resolves_against_tool_dir", Policy{}, func() Call {
			tl := *readTool
			tl.Bases = []string{filepath.Join(f.root, "sub")}
			return call(&tl, `{"path":"../a.txt"}`)
		}, want{Allow, CodeAllow, nil}},
		{"read_outside_fence_asks", Policy{}, func() Call { return call(readTool, `{"path":`+js(outsideFile)+`}`) },
			want{Ask, CodeAskReadOutside, []string{outsideFile, CapReadOutside}}},
		{"write_outside_fence_asks", Policy{}, func() Call {
			return call(writeTool, `{"path":`+js(outsideFile)+`,"content":"x"}`)
		}, want{Ask, CodeAskMutateOutside, []string{CapMutateOutside}}},
		{"sibling_prefix_is_outside", Policy{}, func() Call { return call(readTool, `{"path":`+js(f.root+"-evil/x")+`}`) },
			want{Ask, CodeAskReadOutside, nil}},
		{"session_root_widens_fence", Policy{}, func() Call {
			c := call(readTool, `{"path":`+js(outsideFile)+`}`)
			c.Roots = []string{"file://" + f.outside}
			return c
		}, want{Allow, CodeAllow, nil}},
		{"outside_fence_deny_policy", Policy{OutsideFence: "deny"}, func() Call {
			return call(readTool, `{"path":"/etc/passwd"}`)
		}, want{Deny, CodeOutsideFence, nil}},
		{"nul_in_path_is_bad", Policy{}, func() Call { return call(readTool, `{"path":"a\u0000b"}`) },
			want{Deny, CodeBadPath, []string{"NUL"}}},
		{"destructive_asks_when_careful", Policy{Profile: "careful"}, func() Call { return call(deleteTool, `{"path":`+js(inside)+`}`) },
			want{Ask, CodeAskPolicy, []string{"destructive"}}},
		{"network_allowed_by_default", Policy{}, func() Call { return call(fetchTool, `{"url":"https://example.com"}`) },
			want{Allow, CodeAllow, nil}},
		{"defaults_override_per_class", Policy{Defaults: map[Class]string{ClassNetwork: "deny"}}, func() Call {
			return call(fetchTool, `{"url":"https://example.com"}`)
		}, want{Deny, CodeDenyPolicy, []string{"network"}}},
		{"class_override_by_glob", Policy{Classes: map[string]Class{"fs__write_*": ClassAdmin}}, func() Call {
			return call(writeTool, `{"path":`+js(inside)+`,"content":"x"}`)
		}, want{Ask, CodeAskPolicy, []string{"admin"}}},
		{"rule_equals_denies_with_reason", Policy{Rules: []Rule{{Tool: "web__*", Args: map[string]Match{"url": {Equals: "https://evil.example"}}, Action: "deny", Reason: "That site is blocked."}}}, func() Call {
			return call(fetchTool, `{"url":"https://evil.example"}`)
		}, want{Deny, CodeDenyRule, []string{"blocked"}}},
		{"rule_prefix_asks", Policy{Rules: []Rule{{Tool: "web__fetch", Args: map[string]Match{"url": {Prefix: "http://"}}, Action: "ask"}}}, func() Call {
			return call(fetchTool, `{"url":"http://plain.example"}`)
		}, want{Ask, CodeAskRule, nil}},
		{"rule_regex_no_match_falls_to_default", Policy{Rules: []Rule{{Tool: "web__fetch", Args: map[string]Match{"url": {Regex: `^https://internal\.`}}, Action: "deny"}}}, func() Call {
			return call(fetchTool, `{"url":"https://example.com"}`)
		}, want{Allow, CodeAllow, nil}},
		{"rule_allows_destructive_inside", Policy{Rules: []Rule{{Tool: "fs__delete", Fence: "inside", Action: "allow"}}}, func() Call {
			return call(deleteTool, `{"path":`+js(inside)+`}`)
		}, want{Allow, CodeAllowRule, nil}},
		{"rule_fence_outside_denies", Policy{Rules: []Rule{{Tool: "fs__*", Args: map[string]Match{"path": {Fence: "outside"}}, Action: "deny"}}}, func() Call {
			return call(readTool, `{"path":"/etc/passwd"}`)
		}, want{Deny, CodeDenyRule, nil}},
		{"allow_rule_cannot_widen_fence", Policy{Rules: []Rule{{Tool: "fs__read_file", Action: "allow"}}}, func() Call {
			return call(readTool, `{"path":"/etc/passwd"}`)
		}, want{Ask, CodeAskReadOutside, nil}},
		{"deny_rule_on_any_array_element", Policy{Rules: []Rule{{Tool: "x__*", Args: map[string]Match{"tags": {Equals: "prod"}}, Action: "deny"}}}, func() Call {
			return call(&Tool{Name: "x__tag"}, `{"tags":["dev","prod"]}`)
		}, want{Deny, CodeDenyRule, nil}},
		{"allow_rule_needs_every_array_element", Policy{Rules: []Rule{{Tool: "x__*", Args: map[string]Match{"tags": {Prefix: "dev"}}, Action: "allow"}}, Defaults: map[Class]string{ClassWrite: "ask"}}, func() Call {
			return call(&Tool{Name: "x__tag"}, `{"tags":["dev1","prod"]}`)
		}, want{Ask, CodeAskPolicy, nil}},
		{"duplicate_key_first_occurrence_checked", Policy{}, func() Call {
			return call(writeTool, `{"path":"/etc/passwd","path":`+js(inside)+`,"content":"x"}`)
		}, want{Ask, CodeAskMutateOutside, []string{"/etc/passwd"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := f.gate(t, tc.policy)
			check(t, g.Evaluate(ctx, tc.call()), tc.want)
		})
	}
}

func TestEvaluateArgs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	g := f.gate(t, Policy{})
	inside := filepath.Join(f.root, "a.txt")

	t.Run("absent_args_become_empty_object", func(t *testing.T) {
		d := g.Evaluate(ctx, call(fetchTool, ``))
		if d.Verdict != Allow || string(d.Args) != `{}` {
			t.Fatalf("got %s %s args %s", d.Verdict, d.Code, d.Args)
		}
	})
	t.Run("pins_overwrite_and_big_integers_survive", func(t *testing.T) {
		c := call(writeTool, `{"path":`+js(inside)+`,"content":"x","mode":"fix","n":123456789012345678901234567890}`)
		c.Pins = map[string]any{"mode": "report_only"}
		d := g.Evaluate(ctx, c)
		want := `{"content":"x","mode":"report_only","n":123456789012345678901234567890,"path":` + js(inside) + `}`
		if d.Verdict != Allow || string(d.Args) != want {
			t.Fatalf("got %s %s args %s, want %s", d.Verdict, d.Code, d.Args, want)
		}
	})
	t.Run("justification_is_stripped_and_reported", func(t *testing.T) {
		d := g.Evaluate(ctx, call(runTool, `{"command":"make","justification":"build the docs"}`))
		if string(d.Args) != `{"command":"make"}` || d.Justification != "build the docs" {
			t.Fatalf("args %s justification %q", d.Args, d.Justification)
		}
	})
	t.Run("justification_kept_when_tool_declares_it", func(t *testing.T) {
		tl := &Tool{Name: "x__exec", Class: ClassExecute, Schema: json.RawMessage(`{"type":"object","properties":{"justification":{"type":"string"}}}`)}
		d := g.Evaluate(ctx, call(tl, `{"justification":"why"}`))
		if string(d.Args) != `{"justification":"why"}` {
			t.Fatalf("args %s", d.Args)
		}
	})
	t.Run("digest_ignores_key_order_and_spacing", func(t *testing.T) {
		a := g.Evaluate(ctx, call(writeTool, `{"path":`+js(inside)+`,"content":"x"}`))
		b := g.Evaluate(ctx, call(writeTool, `{ "content" : "x", "path":`+js(inside)+` }`))
		if a.Digest == "" || a.Digest != b.Digest {
			t.Fatalf("digests %q %q", a.Digest, b.Digest)
		}
	})
	t.Run("ask_lists_paths_and_needs", func(t *testing.T) {
		d := g.Evaluate(ctx, call(deleteTool, `{"path":"/etc/hosts"}`))
		if d.Verdict != Ask || len(d.Paths) != 1 || d.Paths[0] != "/etc/hosts" || len(d.Needs) != 2 {
			t.Fatalf("got %+v", d)
		}
	})
	t.Run("invalid_utf8_path_is_bad", func(t *testing.T) {
		d := g.Evaluate(ctx, call(readTool, "{\"path\":\""+f.root+"/\xff/../../etc\"}"))
		check(t, d, want{Deny, CodeBadPath, nil})
	})
}

func TestCorrectionBudget(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	bad := func(session string, turn int) Call {
		c := call(readTool, `{}`)
		c.Session, c.Turn = session, turn
		return c
	}
	t.Run("third_refusal_in_a_turn_ends_the_attempt", func(t *testing.T) {
		g := f.gate(t, Policy{})
		check(t, g.Evaluate(ctx, bad("s", 1)), want{Deny, CodeArgsInvalid, nil})
		check(t, g.Evaluate(ctx, bad("s", 1)), want{Deny, CodeArgsInvalid, nil})
		check(t, g.Evaluate(ctx, bad("s", 1)), want{Deny, CodeCorrectionBudget, []string{"stop retrying"}})
	})
	t.Run("new_turn_starts_over", func(t *testing.T) {
		g := f.gate(t, Policy{})
		for i := 0; i < 3; i++ {
			g.Evaluate(ctx, bad("s", 1))
		}
		check(t, g.Evaluate(ctx, bad("s", 2)), want{Deny, CodeArgsInvalid, nil})
	})
	t.Run("sessions_are_independent", func(t *testing.T) {
		g := f.gate(t, Policy{})
		for i := 0; i < 3; i++ {
			g.Evaluate(ctx, bad("a", 1))
		}
		check(t, g.Evaluate(ctx, bad("b", 1)), want{Deny, CodeArgsInvalid, nil})
	})
	t.Run("configurable_rounds", func(t *testing.T) {
		g := f.gate(t, Policy{CorrectionRounds: 1})
		g.Evaluate(ctx, bad("s", 1))
		check(t, g.Evaluate(ctx, bad("s", 1)), want{Deny, CodeCorrectionBudget, nil})
	})
	t.Run("table_stays_bounded", func(t *testing.T) {
		var b budget
		for i := 0; i < 3*maxBudgetEntries; i++ {
			b.refuse("s", string(rune('a'+i%26))+strings.Repeat("x", i%1000)+string(rune(i)), i)
		}
		if n := b.size(); n > maxBudgetEntries {
			t.Fatalf("budget holds %d entries", n)
		}
	})
}

func TestClassOf(t *testing.T) {
	ov := map[string]Class{"*__run_*": ClassExecute, "shell__run_safe": ClassRead, "[": ClassAdmin}
	cases := []struct {
		name string
		tool string
		h    Hints
		want Class
	}{
		{"read_only_hint_is_read", "a__b", Hints{ReadOnly: boolp(true)}, ClassRead},
		{"destructive_hint_is_destructive", "a__b", Hints{Destructive: boolp(true)}, ClassDestructive},
		{"open_world_hint_is_network", "a__b", Hints{OpenWorld: boolp(true)}, ClassNetwork},
		{"read_only_beats_destructive", "a__b", Hints{ReadOnly: boolp(true), Destructive: boolp(true)}, ClassRead},
		{"no_hints_is_write", "a__b", Hints{}, ClassWrite},
		{"explicit_false_is_write", "a__b", Hints{ReadOnly: boolp(false), Destructive: boolp(false)}, ClassWrite},
		{"glob_override_beats_hints", "shell__run_cmd", Hints{ReadOnly: boolp(true)}, ClassExecute},
		{"exact_override_beats_glob", "shell__run_safe", Hints{}, ClassRead},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassOf(tc.tool, tc.h, ov); got != tc.want {
				t.Fatalf("ClassOf = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNewRejectsBadPolicy(t *testing.T) {
	cases := []struct {
		name string
		p    Policy
		msg  string
	}{
		{"bad_class_glob", Policy{Classes: map[string]Class{"[": ClassRead}}, "glob"},
		{"unknown_class", Policy{Classes: map[string]Class{"x": "launch"}}, "not a class"},
		{"bad_default_verdict", Policy{Defaults: map[Class]string{ClassRead: "maybe"}}, "maybe"},
		{"rule_without_tool", Policy{Rules: []Rule{{Action: "deny"}}}, "tool is required"},
		{"rule_bad_regex", Policy{Rules: []Rule{{Tool: "x", Action: "deny", Args: map[string]Match{"a": {Regex: "("}}}}}, "regex"},
		{"rule_bad_action", Policy{Rules: []Rule{{Tool: "x", Action: "permit"}}}, "action"},
		{"rule_bad_fence_word", Policy{Rules: []Rule{{Tool: "x", Action: "deny", Fence: "near"}}}, "fence"},
		{"relative_allowed_dir", Policy{AllowedDirs: []string{"work"}}, "absolute"},
		{"bad_outside_fence", Policy{OutsideFence: "maybe"}, "outside_fence"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("New = %v, want error with %q", err, tc.msg)
			}
		})
	}
	t.Run("zero_policy_is_fine", func(t *testing.T) {
		if _, err := New(Policy{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWithJustification(t *testing.T) {
	out := WithJustification(json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`))
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatal(err)
	}
	if s.Properties["justification"]["type"] != "string" || len(s.Required) != 2 || s.Required[1] != "justification" {
		t.Fatalf("got %s", out)
	}
	if string(WithJustification(out)) != string(out) {
		t.Fatal("adding twice changed the schema")
	}
	if got := WithJustification(json.RawMessage(`[`)); string(got) != `[` {
		t.Fatalf("unreadable schema changed: %s", got)
	}
}

func TestEvaluateNeverPanicsOnNilToolFields(t *testing.T) {
	g, err := New(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	d := g.Evaluate(context.Background(), Call{Name: "x", Tool: &Tool{}, Visible: true, Args: json.RawMessage(`{"path":"~"}`)})
	if d.Code == "" || d.Reason == "" {
		t.Fatalf("empty decision %+v", d)
	}
}

// TestSchemaValidationFailsClosed: a schema quiver cannot take whole (draft
// 4 unannounced, a $ref to a URL it will not fetch) is still enforced as
// far as it can be, and strict_args closes nested objects too.
func TestSchemaValidationFailsClosed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	n := 0
	tool := func(schema string) *Tool { // a name each: refusals count per tool
		n++
		return &Tool{Name: fmt.Sprintf("x__t%d", n), Class: ClassRead, Schema: json.RawMessage(schema)}
	}
	g := f.gate(t, Policy{})
	for name, tc := range map[string]struct{ schema, args string }{
		"draft4_unannounced": {`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"exclusiveMinimum":true}},"additionalProperties":false}`, `{"n":"notanint","zzz":1}`},
		"ref_to_a_url":       {`{"type":"object","properties":{"n":{"$ref":"https://example.com/n.json"},"m":{"type":"integer"}},"additionalProperties":false}`, `{"m":"x","zzz":1}`},
		"lookahead_pattern":  {`{"type":"object","properties":{"email":{"type":"string","pattern":"^(?!\\.)[^@]+@[^@]+$"},"n":{"type":"integer"}},"additionalProperties":false}`, `{"n":"notanint","zzz":1}`},
	} {
		if d := g.Evaluate(ctx, call(tool(tc.schema), tc.args)); d.Code != CodeArgsInvalid {
			t.Errorf("%s: %s %s (%s); want %s", name, d.Verdict, d.Code, d.Reason, CodeArgsInvalid)
		}
	}
	strict := f.gate(t, Policy{StrictArgs: true})
	for name, tc := range map[string]struct{ schema, args string }{
		"nested":         {`{"type":"object","properties":{"opts":{"type":"object","properties":{"a":{"type":"integer"}}}}}`, `{"opts":{"a":1,"bogus":2}}`},
		"open_by_choice": {`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true}`, `{"a":1,"bogus":2}`},
		"in_a_list":      {`{"type":"object","properties":{"xs":{"type":"array","items":{"type":"object","properties":{"a":{}}}}}}`, `{"xs":[{"a":1,"bogus":2}]}`},
		"read_as_draft4": {`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"exclusiveMinimum":true}}}`, `{"n":1,"bogus":2}`},
		"ref_to_defs":    {`{"type":"object","properties":{"opts":{"$ref":"#/$defs/O"}},"$defs":{"O":{"type":"object","properties":{"a":{"type":"integer"}}}}}`, `{"opts":{"a":1,"bogus":2}}`},
		"optional_model": {`{"type":"object","properties":{"opts":{"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}}},{"type":"null"}]}}}`, `{"opts":{"a":1,"bogus":2}}`},
	} {
		if d := strict.Evaluate(ctx, call(tool(tc.schema), tc.args)); d.Code != CodeArgsInvalid || !strings.Contains(d.Reason, "bogus") {
			t.Errorf("strict %s: %s %s (%s); want %s naming bogus", name, d.Verdict, d.Code, d.Reason, CodeArgsInvalid)
		}
	}
	// Read as 2020-12 with its bounds made numbers, a draft-4-style schema
	// keeps its 2020-12 keywords.
	c := tool(`{"type":"object","properties":{"n":{"type":"integer","minimum":0,"exclusiveMinimum":true},"mode":{"const":"safe"}}}`)
	if d := g.Evaluate(ctx, call(c, `{"n":1,"mode":"unsafe"}`)); d.Code != CodeArgsInvalid {
		t.Errorf("const under a draft-4 bound: %s %s; want %s", d.Verdict, d.Code, CodeArgsInvalid)
	}
	if d := g.Evaluate(ctx, call(c, `{"n":0,"mode":"safe"}`)); d.Code != CodeArgsInvalid {
		t.Errorf("n = 0 with an exclusive minimum of 0: %s %s; want %s", d.Verdict, d.Code, CodeArgsInvalid)
	}
	// A map the schema types stays open.
	m := tool(`{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}}}`)
	check(t, strict.Evaluate(ctx, call(m, `{"env":{"ANY":"x"}}`)), want{Allow, CodeAllow, nil})
}
