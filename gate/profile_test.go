package gate

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfiles is issue 17's problem 5: with the default profile a write or
// a destructive call inside the allowed folders goes ahead, while the same
// call outside them still asks, under every profile and whatever a rule
// says.
func TestProfiles(t *testing.T) {
	f := newFixture(t)
	inside := js(filepath.Join(f.root, "a.txt"))
	outside := js(filepath.Join(f.outside, "secret"))
	ctx := context.Background()
	memDelete := &Tool{Name: "memory__delete_entities", Server: "memory", Hints: Hints{Destructive: boolp(true)}}

	cases := []struct {
		name   string
		policy Policy
		call   Call
		want   want
	}{
		{"project_is_the_default_write_inside", Policy{}, call(writeTool, `{"path":`+inside+`,"content":"x"}`), want{Allow, CodeAllow, nil}},
		{"project_destructive_inside_allowed", Policy{}, call(deleteTool, `{"path":`+inside+`}`), want{Allow, CodeAllow, []string{"inside the fence"}}},
		{"project_destructive_without_a_path_asks", Policy{}, call(memDelete, `{"entityNames":["a"]}`), want{Ask, CodeAskPolicy, []string{"names no path"}}},
		{"project_relative_path_unplaced_asks", Policy{}, call(deleteTool, `{"path":"a.txt"}`), want{Ask, CodeAskMutateOutside, nil}},
		{"project_execute_asks", Policy{}, call(runTool, `{"command":"ls","justification":"list the files to find the config"}`), want{Ask, CodeAskPolicy, []string{"execute"}}},
		{"careful_write_inside_asks", Policy{Profile: "careful"}, call(writeTool, `{"path":`+inside+`,"content":"x"}`), want{Ask, CodeAskPolicy, []string{"write"}}},
		{"careful_destructive_inside_asks", Policy{Profile: "careful"}, call(deleteTool, `{"path":`+inside+`}`), want{Ask, CodeAskPolicy, []string{"destructive"}}},
		{"careful_read_inside_allowed", Policy{Profile: "careful"}, call(readTool, `{"path":`+inside+`}`), want{Allow, CodeAllow, nil}},
		{"read_only_write_inside_refused", Policy{Profile: "read_only"}, call(writeTool, `{"path":`+inside+`,"content":"x"}`), want{Deny, CodeDenyPolicy, nil}},
		{"read_only_read_inside_allowed", Policy{Profile: "read_only"}, call(readTool, `{"path":`+inside+`}`), want{Allow, CodeAllow, nil}},
		{"read_only_read_outside_asks", Policy{Profile: "read_only"}, call(readTool, `{"path":`+outside+`}`), want{Ask, CodeAskReadOutside, nil}},
		{"defaults_override_the_profile", Policy{Profile: "careful", Defaults: map[Class]string{ClassWrite: "allow"}}, call(writeTool, `{"path":`+inside+`,"content":"x"}`), want{Allow, CodeAllow, nil}},
		{"allow_inside_as_a_default", Policy{Defaults: map[Class]string{ClassWrite: AllowInside}}, call(writeTool, `{"path":`+inside+`,"content":"x"}`), want{Allow, CodeAllow, nil}},
		{"rules_override_the_profile", Policy{Profile: "read_only", Rules: []Rule{{Tool: "fs__*", Action: "allow"}}}, call(writeTool, `{"path":`+inside+`,"content":"x"}`), want{Allow, CodeAllowRule, nil}},
		{"classes_override_the_hints", Policy{Classes: map[string]Class{"fs__delete": ClassAdmin}}, call(deleteTool, `{"path":`+inside+`}`), want{Ask, CodeAskPolicy, []string{"admin"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check(t, f.gate(t, tc.policy).Evaluate(ctx, tc.call), tc.want)
		})
	}
}

// TestProfilesKeepTheFence proves the fence is no default: a write or a
// destructive call that reaches outside the allowed folders asks (or is
// refused) under every profile, with or without an allow rule or an
// allow default for the class.
func TestProfilesKeepTheFence(t *testing.T) {
	f := newFixture(t)
	outside := js(filepath.Join(f.outside, "secret"))
	inside := js(filepath.Join(f.root, "a.txt"))
	ctx := context.Background()
	widen := map[string]Policy{
		"plain":          {},
		"allow_rule":     {Rules: []Rule{{Tool: "fs__*", Action: "allow"}}},
		"allow_default":  {Defaults: map[Class]string{ClassWrite: "allow", ClassDestructive: "allow"}},
		"inside_default": {Defaults: map[Class]string{ClassWrite: AllowInside, ClassDestructive: AllowInside}},
	}
	calls := map[string]Call{
		"write_outside":           call(writeTool, `{"path":`+outside+`,"content":"x"}`),
		"destructive_outside":     call(deleteTool, `{"path":`+outside+`}`),
		"move_inside_to_outside":  call(&Tool{Name: "fs__move_file", Server: "fs", Hints: Hints{Destructive: boolp(true)}}, `{"source":`+inside+`,"destination":`+outside+`}`),
		"write_relative_unplaced": call(writeTool, `{"path":"../root-evil/secret","content":"x"}`),
	}
	for pname := range profiles {
		for wname, base := range widen {
			for cname, c := range calls {
				t.Run(pname+"/"+wname+"/"+cname, func(t *testing.T) {
					p := base
					p.Profile = pname
					d := f.gate(t, p).Evaluate(ctx, c)
					if d.Verdict == Allow {
						t.Fatalf("allowed (%s: %s); a call outside the fence must ask or be refused", d.Code, d.Reason)
					}
					if d.Verdict == Ask && d.Code != CodeAskMutateOutside {
						t.Errorf("asks with %s (%s), want %s", d.Code, d.Reason, CodeAskMutateOutside)
					}
					if d.Verdict == Ask && !strings.Contains(d.Reason, "outside") {
						t.Errorf("reason %q does not say the path is outside", d.Reason)
					}
				})
			}
		}
	}
}

func TestProfileUnknownIsRefused(t *testing.T) {
	_, err := New(Policy{Profile: "yolo"})
	if err == nil || !strings.Contains(err.Error(), "profile") || !strings.Contains(err.Error(), "careful") {
		t.Fatalf("err = %v, want a profile error naming the profiles", err)
	}
	g, err := New(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if e := g.Effective(); e.Profile != "project" || e.Defaults[ClassDestructive] != AllowInside {
		t.Errorf("effective profile %q, destructive %q; want project, %s", e.Profile, e.Defaults[ClassDestructive], AllowInside)
	}
}
