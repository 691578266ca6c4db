package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var exposedRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func TestExposedName(t *testing.T) {
	for _, tc := range []struct {
		name, prefix, tool string
		max                int
		want               string
	}{
		{"plain", "github", "create_issue", 64, "github__create_issue"},
		{"hyphens_and_digits_kept", "s3", "get-object-v2", 64, "s3__get-object-v2"},
		{"dots_become_underscores", "fs", "read.file", 64, "fs__read_file"},
		{"spaces_become_underscores", "fs", "read file now", 64, "fs__read_file_now"},
		{"slashes_and_colons", "k8s", "pods/list:all", 64, "k8s__pods_list_all"},
		{"each_unicode_letter_is_one_underscore", "fs", "café", 64, "fs__caf_"},
		{"emoji_is_one_underscore", "x", "a😀b", 64, "x__a_b"},
		{"invalid_utf8_byte_is_one_underscore", "x", "a\xffb", 64, "x__a_b"},
		{"empty_prefix_is_bare", "", "create_issue", 64, "create_issue"},
		{"empty_prefix_still_sanitized", "", "read.file", 64, "read_file"},
		{"exactly_max_is_kept", "abc", "defghijklmn", 16, "abc__defghijklmn"},
		{"zero_max_means_default", "github", "create_issue", 0, "github__create_issue"},
		// A long prefix keeps half of the stem at most: the tool's name shows.
		{"long_prefix_leaves_room_for_the_tool", "averyveryverylongservername", "create_issue", 32,
			"averyveryv__create_issu_" + hashOf("averyveryverylongservername__create_issue")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExposedName(tc.prefix, tc.tool, tc.max); got != tc.want {
				t.Errorf("ExposedName(%q, %q, %d) = %q; want %q", tc.prefix, tc.tool, tc.max, got, tc.want)
			}
		})
	}
}

// hashOf is the 8 hex digits a shortened name ends with: the SHA-256 of the
// full, unsanitized "<prefix>__<tool>".
func hashOf(full string) string {
	sum := sha256.Sum256([]byte(full))
	return hex.EncodeToString(sum[:4])
}

func TestExposedNameShortensLongNames(t *testing.T) {
	for _, max := range []int{16, 64} {
		t.Run(fmt.Sprintf("max_%d", max), func(t *testing.T) {
			// "abcdefghij" repeated: the cut always lands on a letter.
			tool := strings.Repeat("abcdefghij", 12)
			full := "srv__" + tool
			got := ExposedName("srv", tool, max)
			if len(got) != max {
				t.Errorf("len(%q) = %d; want exactly %d", got, len(got), max)
			}
			stem := full[:max-9]
			if want := stem + "_" + hashOf(full); got != want {
				t.Errorf("got %q; want stem + '_' + 8 hex: %q", got, want)
			}
			if !exposedRE.MatchString(got) {
				t.Errorf("%q has characters outside [A-Za-z0-9_-]", got)
			}
			if again := ExposedName("srv", tool, max); again != got {
				t.Errorf("not deterministic: %q then %q", got, again)
			}
			// Two names with the same first max characters still differ.
			other := ExposedName("srv", tool+"_other", max)
			if other == got || len(other) != max || !strings.HasPrefix(other, stem+"_") {
				t.Errorf("names sharing a stem: %q and %q; want the same stem, different hashes", got, other)
			}
			// One character over max is shortened too.
			over := strings.Repeat("a", max-5+1)
			if got := ExposedName("srv", over, max); len(got) != max || !strings.HasSuffix(got, "_"+hashOf("srv__"+over)) {
				t.Errorf("max+1 characters: %q", got)
			}
		})
	}
}

func TestExposedNameShortenedSanitizedNames(t *testing.T) {
	// The hash is of the raw name, so two long names that sanitize alike
	// ("a.b" and "a_b") still get different short names.
	long := strings.Repeat("word", 20)
	a := ExposedName("p", long+".x", 32)
	b := ExposedName("p", long+"_x", 32)
	if a == b {
		t.Errorf("%q for both", a)
	}
	for _, n := range []string{a, b} {
		if len(n) != 32 || !exposedRE.MatchString(n) {
			t.Errorf("%q: want 32 characters from [A-Za-z0-9_-]", n)
		}
	}
	// Unicode in a long name: still one '_' per character, still max.
	u := ExposedName("p", strings.Repeat("é", 100), 20)
	if len(u) > 20 || !exposedRE.MatchString(u) {
		t.Errorf("%q", u)
	}
}

func TestExposedNameNeverEndsTheStemWithASeparator(t *testing.T) {
	// When the cut lands on '_' or '-', the stem drops it so the name does
	// not read "stem__hash"; the name is then shorter than max.
	tool := strings.Repeat("ab_", 30) // the cut lands on a, b and _ in turn
	for max := 16; max <= 24; max++ {
		got := ExposedName("p", tool, max)
		if len(got) > max {
			t.Errorf("max %d: %q is longer", max, got)
		}
		stem := strings.TrimSuffix(got, "_"+hashOf("p__"+tool))
		if stem == got || strings.HasSuffix(stem, "_") || strings.HasSuffix(stem, "-") {
			t.Errorf("max %d: %q: stem %q", max, got, stem)
		}
	}
}

func TestExposedNameTinyMaxDoesNotPanic(t *testing.T) {
	for max := 1; max < 16; max++ {
		got := ExposedName("server", "a_rather_long_tool_name", max)
		if !exposedRE.MatchString(got) || !strings.HasSuffix(got, hashOf("server__a_rather_long_tool_name")) {
			t.Errorf("max %d: %q", max, got)
		}
	}
}

// catalogOf builds a catalog from a config and the tools each server lists,
// without starting anything.
func catalogOf(t *testing.T, yamlText string, tools map[string][]string) *Catalog {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yamlText), testLookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	r := New(cfg, Options{})
	for _, c := range r.conns {
		for _, name := range tools[c.srv.Name] {
			c.tools = append(c.tools, Tool{Name: name, InputSchema: []byte(`{"type":"object"}`)})
		}
	}
	return r.build()
}

func TestCatalogCollisions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		yaml     string
		tools    map[string][]string
		exposed  []string // the catalog, in order
		gone     []string // exposed names two tools became: neither may resolve
		problems []string // each must contain all of these, in one problem
	}{
		{
			name:    "no_collision_keeps_file_order",
			yaml:    "servers:\n  b: {command: x}\n  a: {command: x}\n",
			tools:   map[string][]string{"a": {"one", "two"}, "b": {"zz", "aa"}},
			exposed: []string{"b__zz", "b__aa", "a__one", "a__two"},
		},
		{
			name:     "same_server_after_sanitizing",
			yaml:     "servers:\n  fs: {command: x}\n",
			tools:    map[string][]string{"fs": {"read.file", "read_file", "list"}},
			exposed:  []string{"fs__list"},
			gone:     []string{"fs__read_file"},
			problems: []string{`"read_file"`, `"read.file"`, `"fs__read_file"`, "neither is offered", "rename one"},
		},
		{
			name:     "bare_server_against_a_prefix",
			yaml:     "servers:\n  one: {command: x, prefix: \"\"}\n  two: {command: x}\n",
			tools:    map[string][]string{"one": {"two__t"}, "two": {"t", "u"}},
			exposed:  []string{"two__u"},
			gone:     []string{"two__t"},
			problems: []string{`server "one"`, `server "two"`, `"two__t"`, `another prefix`},
		},
		{
			name:     "prefixes_that_collide_with_tool_names",
			yaml:     "servers:\n  a: {command: x}\n  a__b: {command: x}\n",
			tools:    map[string][]string{"a": {"b__c"}, "a__b": {"c"}},
			exposed:  nil,
			gone:     []string{"a__b__c"},
			problems: []string{`server "a"`, `server "a__b"`, `"a__b__c"`},
		},
		{
			name: "after_shortening",
			yaml: "surface: {max_name_len: 24}\nservers:\n  one: {command: x, prefix: \"\"}\n  two: {command: x}\n",
			tools: map[string][]string{
				"one": {"two__" + strings.Repeat("long", 10)},
				"two": {strings.Repeat("long", 10)},
			},
			exposed:  nil,
			gone:     []string{ExposedName("two", strings.Repeat("long", 10), 24)},
			problems: []string{`server "one"`, `server "two"`, ExposedName("two", strings.Repeat("long", 10), 24)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := catalogOf(t, tc.yaml, tc.tools)
			if got := strings.Join(exposedNames(cat), " "); got != strings.Join(tc.exposed, " ") {
				t.Errorf("catalog %s; want %s", got, strings.Join(tc.exposed, " "))
			}
			for _, name := range tc.gone {
				if tool, ok := cat.Lookup(name); ok {
					t.Errorf("Lookup(%q) = %s/%s; two tools became that name, so neither may be offered", name, tool.Server, tool.Name)
				}
			}
			if len(tc.problems) == 0 {
				if len(cat.Problems) != 0 {
					t.Errorf("problems: %q", cat.Problems)
				}
				return
			}
			if len(cat.Problems) != 1 {
				t.Fatalf("problems %q; want exactly one", cat.Problems)
			}
			for _, want := range tc.problems {
				if !strings.Contains(cat.Problems[0], want) {
					t.Errorf("problem %q does not mention %s", cat.Problems[0], want)
				}
			}
		})
	}
}

func TestCatalogLookupAndStatus(t *testing.T) {
	var nilCat *Catalog
	if _, ok := nilCat.Lookup("x"); ok {
		t.Error("a nil catalog found a tool")
	}
	cat := catalogOf(t, "servers:\n  a: {command: x, keywords: [k]}\n", map[string][]string{"a": {"t"}})
	tool, ok := cat.Lookup("a__t")
	if !ok || tool.Server != "a" || tool.Name != "t" || tool.Exposed != "a__t" || strings.Join(tool.Keywords, ",") != "k" {
		t.Errorf("Lookup: %+v %v", tool, ok)
	}
	if _, ok := cat.Lookup("t"); ok {
		t.Error("the raw name found a tool; only exposed names do")
	}
	st, ok := cat.Status("a")
	if !ok || st.State != StateStarting || st.Tools != 1 || st.Transport != TransportStdio {
		t.Errorf("Status: %+v %v", st, ok)
	}
	if _, ok := cat.Status("b"); ok {
		t.Error("Status of an unknown server")
	}
}
