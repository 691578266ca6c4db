package gate

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// Policy is the user's configuration of the gate. The registry decodes
// servers.yaml's `policy:` section into it, and the `fence:` section into
// the same value (yaml.v3 fills an existing struct field by field), so
// both sections' keys live here. New validates it once into compiled form;
// the gate never re-parses it.
type Policy struct {
	// AllowedDirs are the fence's roots (fence.allowed_dirs). "~" is
	// expanded; relative entries are refused by New.
	AllowedDirs []string `yaml:"allowed_dirs"`
	// OutsideFence is what a path outside every root gets: "ask" (the
	// default) or "deny" (unattended setups with nobody to ask).
	OutsideFence string `yaml:"outside_fence"`

	// StrictArgs refuses unknown arguments for every tool, not only where
	// the tool's schema closes the object.
	StrictArgs bool `yaml:"strict_args"`
	// CorrectionRounds is how many refused argument rounds a tool gets per
	// session and turn before deny.correction_budget; 0 means 2.
	CorrectionRounds int `yaml:"correction_rounds"`

	// Classes overrides tool classes by name or glob, e.g.
	// {"*__run_*": execute}. The most specific match wins.
	Classes map[string]Class `yaml:"classes"`
	// Rules are checked in order; the first that matches decides, before
	// Defaults.
	Rules []Rule `yaml:"rules"`
	// Profile picks the class defaults: "project" (the default), "careful"
	// or "read_only"; see profiles in policy.go. Defaults, Rules and Classes still
	// override it, and no profile widens the fence.
	Profile string `yaml:"profile"`
	// Defaults maps a class to "allow", "deny", "ask" or "allow_inside"
	// (allowed when the call names a path and every path is inside the
	// fence, else asked); classes left out keep the profile's verdict.
	Defaults map[Class]string `yaml:"defaults"`

	// ApprovalTimeout is how long the proxy waits for a person to answer
	// an approval card; 0 means 120 s. The gate only carries it.
	ApprovalTimeout time.Duration `yaml:"approval_timeout"`

	// Pinning is what a tool whose definition changed since it was pinned
	// gets: "strict" (the default: held until a person accepts it),
	// "warn" (accepted at once, the diff logged) or "off". A server
	// entry's pinning: wins. The gate only validates and carries it: the
	// registry pins.
	Pinning string `yaml:"pinning"`
}

// compiledPolicy is Policy validated once in New.
type compiledPolicy struct {
	roots       []string // resolved fence roots
	outsideDeny bool
	strict      bool
	rounds      int
	classes     []classOverride
	rules       []rule
	profile     string
	defaults    map[Class]Verdict
	// inside holds the classes whose default is allow_inside: Ask in
	// defaults, Allow when every path of the call is inside the fence.
	inside       map[Class]bool
	approvalWait time.Duration
}

// AllowInside is the default verdict that allows a call when it names at
// least one path and every path is inside the fence, and asks otherwise.
// A call with no path is asked about: nothing shows it stays in the
// project (memory__delete_entities, github__delete_repository).
const AllowInside = "allow_inside"

// defaultProfile is the profile of a policy that names none.
const defaultProfile = "project"

// profiles are the class defaults each policy.profile starts from. In
// every one a path outside the fence is asked about (or refused with
// outside_fence: deny) whatever the class verdict: the fence is not a
// default and no profile can turn it off.
//
//   - project: work inside the allowed folders goes ahead; reading,
//     writing and deleting there is allowed, commands and admin ask.
//   - careful: every write and every destructive call asks, inside the
//     fence too.
//   - read_only: only reads run; everything else is refused.
var profiles = map[string]map[Class]string{
	"project": {ClassRead: "allow", ClassWrite: "allow", ClassDestructive: AllowInside,
		ClassExecute: "ask", ClassNetwork: "allow", ClassAdmin: "ask"},
	"careful": {ClassRead: "allow", ClassWrite: "ask", ClassDestructive: "ask",
		ClassExecute: "ask", ClassNetwork: "allow", ClassAdmin: "ask"},
	"read_only": {ClassRead: "allow", ClassWrite: "deny", ClassDestructive: "deny",
		ClassExecute: "deny", ClassNetwork: "deny", ClassAdmin: "deny"},
}

// parseDefault reads a class default: a verdict, or allow_inside (Ask,
// with inside true).
func parseDefault(s string) (v Verdict, inside bool, err error) {
	if strings.EqualFold(strings.TrimSpace(s), AllowInside) {
		return Ask, true, nil
	}
	v, err = parseVerdict(s)
	if err != nil {
		err = fmt.Errorf("%q is not allow, deny, ask or %s", s, AllowInside)
	}
	return v, false, err
}

func parseVerdict(s string) (Verdict, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "allow":
		return Allow, nil
	case "deny":
		return Deny, nil
	case "ask":
		return Ask, nil
	}
	return Deny, fmt.Errorf("%q is not allow, deny or ask", s)
}

func compilePolicy(p Policy, r *resolver) (compiledPolicy, error) {
	cp := compiledPolicy{
		strict:       p.StrictArgs,
		rounds:       p.CorrectionRounds,
		defaults:     make(map[Class]Verdict, 6),
		inside:       make(map[Class]bool),
		approvalWait: p.ApprovalTimeout,
	}
	if cp.rounds <= 0 {
		cp.rounds = 2
	}
	if cp.approvalWait <= 0 {
		cp.approvalWait = 120 * time.Second
	}
	switch p.Pinning {
	case "", "strict", "warn", "off":
	default:
		return cp, &PolicyError{Key: []string{"pinning"}, Err: fmt.Errorf("%q is not strict, warn or off", p.Pinning)}
	}
	switch strings.ToLower(p.OutsideFence) {
	case "", "ask":
	case "deny":
		cp.outsideDeny = true
	default:
		return cp, &PolicyError{Key: []string{"outside_fence"}, Err: fmt.Errorf("%q is not ask or deny", p.OutsideFence)}
	}

	for i, d := range p.AllowedDirs {
		key := []string{"allowed_dirs", fmt.Sprintf("[%d]", i)}
		if strings.TrimSpace(d) == "" {
			return cp, &PolicyError{Key: key, Err: errors.New("empty entry; give a folder, like ~/projects")}
		}
		d = r.expandHome(d)
		if !r.isAbs(d) {
			return cp, &PolicyError{Key: key, Err: fmt.Errorf("%q is not an absolute path; start it with / or ~/", d)}
		}
		res, err := r.resolveRoot(d)
		if err != nil {
			return cp, &PolicyError{Key: key, Err: fmt.Errorf("%q: %w", d, err)}
		}
		cp.roots = append(cp.roots, res)
	}

	for g, c := range p.Classes {
		if _, err := path.Match(g, ""); err != nil {
			return cp, &PolicyError{Key: []string{"classes", g}, Err: fmt.Errorf("bad glob: %w", err)}
		}
		if !c.valid() {
			return cp, &PolicyError{Key: []string{"classes", g}, Err: fmt.Errorf("%q is not a class (read, write, destructive, execute, network, admin)", c)}
		}
	}
	cp.classes = sortedOverrides(p.Classes)

	cp.profile = strings.ToLower(strings.TrimSpace(p.Profile))
	if cp.profile == "" {
		cp.profile = defaultProfile
	}
	base, ok := profiles[cp.profile]
	if !ok {
		return cp, &PolicyError{Key: []string{"profile"}, Err: fmt.Errorf("%q is not a profile (project, careful, read_only)", p.Profile)}
	}
	set := func(c Class, s string) error {
		v, inside, err := parseDefault(s)
		if err != nil {
			return err
		}
		cp.defaults[c], cp.inside[c] = v, inside
		return nil
	}
	for c, s := range base {
		if err := set(c, s); err != nil {
			return cp, &PolicyError{Key: []string{"profile"}, Err: err}
		}
	}
	for c, s := range p.Defaults {
		if !c.valid() {
			return cp, &PolicyError{Key: []string{"defaults", string(c)}, Err: fmt.Errorf("%q is not a class (read, write, destructive, execute, network, admin)", c)}
		}
		if err := set(c, s); err != nil {
			return cp, &PolicyError{Key: []string{"defaults", string(c)}, Err: err}
		}
	}

	for i, pr := range p.Rules {
		cr, err := compileRule(i, pr)
		if err != nil {
			return cp, &PolicyError{Key: []string{"rules", fmt.Sprintf("[%d]", i)}, Err: fmt.Errorf("(%s) %w", pr.Tool, err)}
		}
		cp.rules = append(cp.rules, cr)
	}
	return cp, nil
}

// A PolicyError is a policy value the gate cannot take. Key is where it is
// in Policy's terms: the yaml keys of the field, then map keys or "[i]"
// for list items ("rules", "[2]"), so that a caller reading a file can
// point at the line.
type PolicyError struct {
	Key []string
	Err error
}

func (e *PolicyError) Error() string {
	return strings.ReplaceAll(strings.Join(e.Key, "."), ".[", "[") + ": " + e.Err.Error()
}

func (e *PolicyError) Unwrap() error { return e.Err }
