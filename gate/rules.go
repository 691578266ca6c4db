package gate

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// A Rule overrides the defaults for tools whose name matches Tool (a name
// or a glob) when every condition holds. A rule can only tighten the
// fence, never widen it: widening is what allowed_dirs and grants are for,
// so a rule's "allow" still leaves an outside path to be asked about.
type Rule struct {
	Tool string `yaml:"tool"`
	// Args holds conditions on named arguments (top-level names).
	Args map[string]Match `yaml:"args"`
	// Fence, "inside" or "outside", holds when every path argument is
	// inside the fence, or when any one is outside.
	Fence string `yaml:"fence"`
	// Action is "allow", "deny" or "ask".
	Action string `yaml:"action"`
	// Reason is told to the model (and the user) when the rule decides.
	Reason string `yaml:"reason"`
}

// A Match is a condition on one argument. Every field set must hold. On an
// array value, an allow rule needs every element to match and a deny or
// ask rule needs one, so a list can never smuggle a value past a rule.
type Match struct {
	Equals any    `yaml:"equals"`
	Prefix string `yaml:"prefix"`
	Regex  string `yaml:"regex"`
	// Fence is "inside" or "outside": where the argument's paths lie.
	Fence string `yaml:"fence"`
	// Absent, when true, holds when the argument is missing.
	Absent bool `yaml:"absent"`
}

type rule struct {
	idx     int
	glob    string
	args    []argMatch
	fence   string
	verdict Verdict
	reason  string
}

type argMatch struct {
	name   string
	equals any // normalised JSON value, nil when unset
	hasEq  bool
	prefix string
	re     *regexp.Regexp
	fence  string
	absent bool
}

func compileRule(i int, pr Rule) (rule, error) {
	cr := rule{idx: i, glob: pr.Tool, reason: strings.TrimSpace(pr.Reason)}
	if pr.Tool == "" {
		return cr, fmt.Errorf("tool is required (a name or a glob such as \"github__*\")")
	}
	if _, err := path.Match(pr.Tool, ""); err != nil {
		return cr, fmt.Errorf("tool glob: %w", err)
	}
	v, err := parseVerdict(pr.Action)
	if err != nil {
		return cr, fmt.Errorf("action: %w", err)
	}
	cr.verdict = v
	if cr.fence, err = fenceWord(pr.Fence); err != nil {
		return cr, err
	}
	names := make([]string, 0, len(pr.Args))
	for n := range pr.Args {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := pr.Args[n]
		am := argMatch{name: n, prefix: m.Prefix, absent: m.Absent}
		if m.Equals != nil {
			eq, err := normalizeValue(m.Equals)
			if err != nil {
				return cr, fmt.Errorf("args.%s.equals: %w", n, err)
			}
			am.equals, am.hasEq = eq, true
		}
		if m.Regex != "" {
			re, err := regexp.Compile(m.Regex)
			if err != nil {
				return cr, fmt.Errorf("args.%s.regex: %w", n, err)
			}
			am.re = re
		}
		if am.fence, err = fenceWord(m.Fence); err != nil {
			return cr, fmt.Errorf("args.%s: %w", n, err)
		}
		if am.absent && (am.hasEq || am.prefix != "" || am.re != nil || am.fence != "") {
			return cr, fmt.Errorf("args.%s: absent cannot be combined with other conditions", n)
		}
		cr.args = append(cr.args, am)
	}
	return cr, nil
}

func fenceWord(s string) (string, error) {
	switch strings.ToLower(s) {
	case "":
		return "", nil
	case "inside", "outside":
		return strings.ToLower(s), nil
	}
	return "", fmt.Errorf("fence: %q is not inside or outside", s)
}

// decide applies the first matching rule, else the class default.
func (g *Gate) decide(name string, class Class, args map[string]any, paths []pathArg) (Verdict, string, string) {
	for _, r := range g.p.rules {
		if ok, _ := path.Match(r.glob, name); !ok || !r.holds(args, paths) {
			continue
		}
		switch r.verdict {
		case Allow:
			return Allow, CodeAllowRule, orDefault(r.reason, fmt.Sprintf("Allowed by policy rule %d.", r.idx+1))
		case Ask:
			return Ask, CodeAskRule, orDefault(r.reason, fmt.Sprintf("Policy rule %d says the user must approve calls like this to %q.", r.idx+1, name))
		default:
			return Deny, CodeDenyRule, orDefault(r.reason, fmt.Sprintf("Policy rule %d refuses calls like this to %q; do not retry it, try another way or ask the user.", r.idx+1, name))
		}
	}
	if g.p.inside[class] {
		if len(paths) > 0 && !slices.ContainsFunc(paths, pathArg.isOutside) {
			return Allow, CodeAllow, "Allowed by policy: every path it names is inside the fence."
		}
		if len(paths) == 0 {
			return Ask, CodeAskPolicy, fmt.Sprintf("%q is a %s tool and the call names no path inside the fence, so the user must approve it (capability %s).", name, class, class)
		}
	}
	switch g.p.defaults[class] {
	case Allow:
		return Allow, CodeAllow, "Allowed by policy."
	case Ask:
		return Ask, CodeAskPolicy, fmt.Sprintf("%q is a %s tool, so the user must approve the call (capability %s).", name, class, class)
	}
	return Deny, CodeDenyPolicy, fmt.Sprintf("%q is a %s tool and this setup refuses %s tools; try another way or ask the user.", name, class, class)
}

func (r rule) holds(args map[string]any, paths []pathArg) bool {
	if r.fence != "" && !fenceHolds(r.fence, paths, "") {
		return false
	}
	all := r.verdict == Allow
	for _, m := range r.args {
		v, present := args[m.name]
		if m.absent {
			if present {
				return false
			}
			continue
		}
		if !present {
			return false
		}
		if m.fence != "" && !fenceHolds(m.fence, paths, m.name) {
			return false
		}
		if (m.hasEq || m.prefix != "" || m.re != nil) && !m.valueHolds(v, all) {
			return false
		}
	}
	return true
}

// valueHolds checks equals/prefix/regex; on an array (unless equals wants
// the array itself) every element must hold for an allow rule and one for
// deny or ask.
func (m argMatch) valueHolds(v any, all bool) bool {
	if arr, ok := v.([]any); ok {
		if _, eqArr := m.equals.([]any); !(m.hasEq && eqArr) {
			if len(arr) == 0 {
				return false
			}
			for _, e := range arr {
				if m.valueHolds(e, all) != all {
					return !all
				}
			}
			return all
		}
	}
	if m.hasEq && !jsonEqual(v, m.equals) {
		return false
	}
	if m.prefix != "" || m.re != nil {
		s, ok := v.(string)
		if !ok {
			return false
		}
		if m.prefix != "" && !strings.HasPrefix(s, m.prefix) {
			return false
		}
		if m.re != nil && !m.re.MatchString(s) {
			return false
		}
	}
	return true
}

// fenceHolds: "outside" when any path (of arg, or of any argument when
// arg is "") lies outside; "inside" when there is at least one and all lie
// inside.
func fenceHolds(word string, paths []pathArg, arg string) bool {
	n, out := 0, 0
	for _, p := range paths {
		if arg != "" && p.arg != arg {
			continue
		}
		n++
		if p.isOutside() {
			out++
		}
	}
	if word == "outside" {
		return out > 0
	}
	return n > 0 && out == 0
}
