package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
	"github.com/quiver-mcp/quiver/skills"
)

// settings are what a configuration gives the proxy: the config itself,
// the gate compiled from its fence and policy, and the skills its folders
// hold. They change together, with the catalog, at an install.
type settings struct {
	cfg  *registry.Config
	gate *gate.Gate
	// redact hides cfg's secrets (and credential shapes, and the OAuth
	// tokens quiver holds: redactorFor): built once per configuration,
	// since it precomputes every form a secret takes.
	redact textRedactor
	// frames are the servers' path frames (dispatch.go).
	frames map[string]serverFrame
	skills *skills.Library // from cfg's skills.dirs, read again on every reload
}

// loadSkills reads the skill folders cfg names; a file that cannot be read
// is left out and logged, the others load.
func loadSkills(cfg *registry.Config, log *slog.Logger) *skills.Library {
	lib, errs := skills.Load(cfg.Skills.Dirs)
	for _, err := range errs {
		log.Warn("skill not loaded", "err", err)
	}
	return lib
}

// sections are the parts of servers.yaml the gate owns.
type sections struct {
	Fence struct {
		AllowedDirs  []string `yaml:"allowed_dirs"`
		OutsideFence string   `yaml:"outside_fence"`
	} `yaml:"fence"`
	Policy gate.Policy          `yaml:"policy"`
	Rest   map[string]yaml.Node `yaml:",inline"`
}

// newSettings compiles cfg's fence and policy (with the gate options that
// outlive a reload: the ledger); an error wraps registry.ErrInvalidConfig.
func newSettings(cfg *registry.Config, stateDir, workDir string, gopts ...gate.Option) (*settings, error) {
	var sec sections
	if err := cfg.DecodeSections(&sec); err != nil {
		return nil, err
	}
	policy := sec.Policy
	if len(policy.AllowedDirs) > 0 || policy.OutsideFence != "" {
		return nil, fmt.Errorf("%w: policy.allowed_dirs and policy.outside_fence belong under fence: (fence.allowed_dirs, fence.outside_fence)", registry.ErrInvalidConfig)
	}
	policy.AllowedDirs = sec.Fence.AllowedDirs
	policy.OutsideFence = sec.Fence.OutsideFence
	// skills.dirs are folders quiver reads instructions from and lists
	// beside its own: a model that wrote a skill there would speak in
	// search answers. They are quiver's files, as servers.yaml is.
	g, err := gate.New(policy, append(slices.Clip(gopts), gate.WithChildFolders(childDirs(cfg, workDir)...),
		gate.WithProtected(absPaths("", cfg.Skills.Dirs)...))...)
	if pe := (*gate.PolicyError)(nil); errors.As(err, &pe) {
		// Point at the value in servers.yaml: the fence's keys are under
		// fence:, the rest under policy:.
		section := "policy"
		if k := pe.Key[0]; k == "allowed_dirs" || k == "outside_fence" {
			section = "fence"
		}
		return nil, cfg.SectionError(append([]string{section}, pe.Key...), pe.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", registry.ErrInvalidConfig, err)
	}
	return &settings{cfg: cfg, gate: g, redact: redactorFor(cfg, stateDir), frames: frames(cfg, workDir)}, nil
}

// childDirs are the folders cfg's stdio servers without cwd: run in, each
// its own under workDir (registry.ChildDir): the only folders of quiver's
// run folder a call may reach. workDir itself is protected (proxy.New).
func childDirs(cfg *registry.Config, workDir string) []string {
	if workDir == "" {
		return nil
	}
	var out []string
	for _, srv := range cfg.Servers {
		if srv.Transport == registry.TransportStdio && srv.Cwd == "" {
			out = append(out, registry.ChildDir(workDir, srv))
		}
	}
	return out
}

// cfg is the configuration in force (before the first install, during
// New: the one New was given), for what is not a request: a request reads
// its own view's (view.go).
func (s *Server) cfg() *registry.Config { return s.current().cfg }

func (s *Server) current() *settings {
	if st := s.state.Load(); st != nil {
		return st.settings
	}
	return s.pending.Load()
}

// Config returns the configuration in force, toggles included.
func (s *Server) Config() *registry.Config { return s.cfg() }

// Policy is the policy in force, defaults filled in (gate.Effective).
func (s *Server) Policy() gate.Policy { return s.current().gate.Effective() }

// Reload puts cfg (a valid registry.Config, toggles attached) in force
// without a restart: the gate is rebuilt from its fence and policy (a
// policy that does not compile rejects the whole reload, and nothing
// changes), the registry applies the server changes, and then one catalog
// makes one install: one index build, and list_changed only to the
// sessions whose list changed. Tools switched off are unbound in every
// session. It returns once the new configuration is in force.
func (s *Server) Reload(ctx context.Context, cfg *registry.Config) error {
	set, err := newSettings(cfg, s.opts.StateDir, s.workDir, s.gopts...)
	if err != nil {
		return err
	}
	set.skills = loadSkills(cfg, s.log)
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	for _, w := range widening(s.current(), set) {
		// Anyone who can write servers.yaml can widen what models may do;
		// a person reading the log should see that it happened.
		s.log.Warn("config: reload widens what calls may do", "change", set.redact.Redact(w))
	}
	prev := s.pending.Swap(set)
	wait := s.installed.wait()
	ch, err := s.reg.Apply(ctx, cfg)
	if err != nil {
		s.pending.CompareAndSwap(set, prev)
		return fmt.Errorf("reload: %w", err)
	}
	s.log.Info("config: reload applied", "added", len(ch.Added), "removed", len(ch.Removed),
		"restarted", len(ch.Restarted), "updated", len(ch.Updated))
	for s.state.Load().settings != set {
		select {
		case <-wait:
			wait = s.installed.wait()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.syncSlashPrompts()
	return nil
}

// An installSignal wakes whoever waits for the next install: wait's
// channel is closed by the next signal.
type installSignal struct{ ch atomic.Pointer[chan struct{}] }

func (w *installSignal) wait() <-chan struct{} {
	if p := w.ch.Load(); p != nil {
		return *p
	}
	ch := make(chan struct{})
	if w.ch.CompareAndSwap(nil, &ch) {
		return ch
	}
	return *w.ch.Load()
}

func (w *installSignal) signal() {
	ch := make(chan struct{})
	if old := w.ch.Swap(&ch); old != nil {
		close(*old)
	}
}

// unbindSwitchedOff drops, in every session, the bindings of tools cat
// switches off: switched on again, they must be found again.
func (s *Server) unbindSwitchedOff(cat *registry.Catalog) {
	for _, ss := range s.allSessions() {
		ss.unbind(func(name string) bool {
			t, ok := cat.Lookup(name)
			return ok && t.Off
		})
	}
}

// unbind forgets the bindings drop says to.
func (ss *session) unbind(drop func(name string) bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	kept := ss.found[:0]
	for _, b := range ss.found {
		if !drop(b.name) {
			kept = append(kept, b)
		}
	}
	ss.found = kept
}

// widening lists what a new configuration lets calls do that the old one
// did not: folders added to the fence, an outside_fence that now asks
// instead of refusing, a class default that became more permissive,
// changed rules or classes, and servers added or whose launch changed
// (a new command is new code running as the user).
func widening(old, new *settings) []string {
	var out []string
	op, np := old.gate.Effective(), new.gate.Effective()
	for _, d := range np.AllowedDirs {
		if !slices.Contains(op.AllowedDirs, d) {
			out = append(out, "fence.allowed_dirs adds "+d)
		}
	}
	if op.OutsideFence == "deny" && np.OutsideFence != "deny" {
		out = append(out, "fence.outside_fence is now "+np.OutsideFence)
	}
	rank := map[string]int{"deny": 0, "ask": 1, gate.AllowInside: 2, "allow": 3}
	for _, c := range slices.Sorted(maps.Keys(np.Defaults)) {
		if rank[np.Defaults[c]] > rank[op.Defaults[c]] {
			out = append(out, fmt.Sprintf("policy.defaults.%s is now %s (was %s)", c, np.Defaults[c], op.Defaults[c]))
		}
	}
	if !reflect.DeepEqual(op.Rules, np.Rules) {
		out = append(out, "policy.rules changed")
	}
	if !reflect.DeepEqual(op.Classes, np.Classes) {
		out = append(out, "policy.classes changed")
	}
	for _, srv := range new.cfg.Servers {
		was, ok := old.cfg.Server(srv.Name)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("server %s added (%s)", srv.Name, launch(srv.Written)))
		case !reflect.DeepEqual(was.Written, srv.Written):
			out = append(out, fmt.Sprintf("server %s now runs %s (was %s)", srv.Name, launch(srv.Written), launch(was.Written)))
		}
	}
	return out
}

// launch is how a server entry starts or reaches its server, as written.
func launch(w registry.Spec) string {
	if w.URL != "" {
		return w.URL
	}
	return strings.TrimSpace(w.Command + " " + strings.Join(w.Args, " "))
}
