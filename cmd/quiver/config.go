package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/internal/atomicfile"
	"github.com/quiver-mcp/quiver/registry"
)

// A running quiver serve writes what its config watcher did to
// <state>/reload/<hash of the servers.yaml path>.json, so that doctor and
// config effective, which run in another process, can say whether the last
// change was rejected.
type reloadStatusFile struct {
	PID int `json:"pid"`
	registry.ReloadStatus
}

func statusFile(stateDir, servers string) string { return stateFileFor(stateDir, "reload", servers) }

// stateFileFor is <state>/<kind>/<hash of the servers.yaml path>.json: one
// file per configuration that a quiver serve runs with.
func stateFileFor(stateDir, kind, servers string) string {
	abs, err := filepath.Abs(servers)
	if err != nil || servers == "" {
		abs = "(built-in)"
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(stateDir, kind, hex.EncodeToString(sum[:8])+".json")
}

func writeReloadStatus(stateDir, servers string, st registry.ReloadStatus, log *slog.Logger) {
	p := statusFile(stateDir, servers)
	b, _ := json.MarshalIndent(reloadStatusFile{PID: os.Getpid(), ReloadStatus: st}, "", "  ")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err == nil {
		err = writeFileAtomic(p, append(b, '\n'), 0o600)
		if err == nil {
			return
		}
		log.Debug("reload status not written", "err", err)
	}
}

// runningStatus returns the status a live quiver serve wrote for this
// servers.yaml, if one is running.
func runningStatus(stateDir, servers string) (*reloadStatusFile, bool) {
	b, err := os.ReadFile(statusFile(stateDir, servers))
	if err != nil {
		return nil, false
	}
	var st reloadStatusFile
	if json.Unmarshal(b, &st) != nil || st.PID <= 0 {
		return nil, false
	}
	if !processAlive(st.PID) {
		return nil, false // that quiver is gone
	}
	return &st, true
}

// describeRunning says in a line what a running quiver did with the last
// change, or "" when there is nothing to say.
func describeRunning(st *reloadStatusFile) string {
	switch {
	case st == nil:
		return ""
	case st.LastError != "":
		return fmt.Sprintf("the running quiver (pid %d) keeps the last good configuration; last reload failed: %s", st.PID, st.LastError)
	case st.ServersMissing:
		return fmt.Sprintf("the running quiver (pid %d) keeps the last good configuration: servers.yaml is gone", st.PID)
	}
	return ""
}

// loadExplained loads the config; when it is invalid, the error also says
// what a running quiver does about it.
func (c *common) loadExplained(e *env) (*registry.Config, error) {
	cfg, err := c.load(e)
	if err != nil && errors.Is(err, registry.ErrInvalidConfig) {
		if state, serr := c.state(e); serr == nil {
			if st, ok := runningStatus(state, c.serversPath(e)); ok {
				return nil, fmt.Errorf("%w\n(the running quiver, pid %d, keeps its last good configuration until this is fixed)", err, st.PID)
			}
		}
	}
	return cfg, err
}

// writeFileAtomic replaces p with b atomically (atomicfile.Write).
func writeFileAtomic(p string, b []byte, mode os.FileMode) error {
	return atomicfile.Write(p, b, mode)
}

func configCmd() *command {
	return &command{
		summary: "print the configuration quiver runs with",
		usage:   "config effective [--config PATH] [--toggles PATH] [--json] [--wait D]",
		help: `
Prints the configuration quiver runs with: servers.yaml merged with every
default (surface settings, each server's prefix, transport, timeout and
tools_default), the fence and policy sections as written, and the toggles
file. ${VAR} references are shown as references, never as their values.
Then each server's state and tool counts (the servers are started to
find out), and every tool, active or withheld, with the line that
switched it on or off.

If a quiver serve is running on the same servers.yaml and state dir and
rejected the last change, the output says so ("last reload failed: ...").

Flags:
  --json     JSON instead of YAML
  --wait D   how long to wait for servers to start (default 30s)`,
		subcommands: []string{"effective"},
		run:         runConfig,
	}
}

type effectiveConfig struct {
	Config      string            `json:"config" yaml:"config"`
	Toggles     string            `json:"toggles" yaml:"toggles"`
	LastReload  string            `json:"last_reload,omitempty" yaml:"last_reload,omitempty"`
	Surface     registry.Surface  `json:"surface" yaml:"surface"`
	SkillDirs   []string          `json:"skill_dirs,omitempty" yaml:"skill_dirs,omitempty"`
	Servers     []effectiveServer `json:"servers" yaml:"servers"`
	Fence       effectiveFence    `json:"fence" yaml:"fence"`
	Policy      effectivePolicy   `json:"policy" yaml:"policy"`
	Slash       []effectiveSlash  `json:"slash,omitempty" yaml:"slash,omitempty"`
	SlashGated  []string          `json:"slash_gated,omitempty" yaml:"slash_gated,omitempty"`
	Active      []effectiveTool   `json:"active" yaml:"active"`
	Withheld    []effectiveTool   `json:"withheld" yaml:"withheld"`
	Problems    []string          `json:"problems,omitempty" yaml:"problems,omitempty"`
	ToggleRules []string          `json:"toggle_rules,omitempty" yaml:"toggle_rules,omitempty"`
}

type effectiveFence struct {
	AllowedDirs  []string `json:"allowed_dirs" yaml:"allowed_dirs"`
	OutsideFence string   `json:"outside_fence" yaml:"outside_fence"`
}

type effectivePolicy struct {
	Profile          string                `json:"profile" yaml:"profile"`
	StrictArgs       bool                  `json:"strict_args" yaml:"strict_args"`
	CorrectionRounds int                   `json:"correction_rounds" yaml:"correction_rounds"`
	ApprovalTimeout  string                `json:"approval_timeout" yaml:"approval_timeout"`
	Defaults         map[gate.Class]string `json:"defaults" yaml:"defaults"`
	Classes          map[string]gate.Class `json:"classes,omitempty" yaml:"classes,omitempty"`
	Rules            []gate.Rule           `json:"rules,omitempty" yaml:"rules,omitempty"`
}

type effectiveSlash struct {
	Name     string   `json:"name" yaml:"name"`
	Tools    []string `json:"tools,omitempty" yaml:"tools,omitempty"`
	Activity string   `json:"activity,omitempty" yaml:"activity,omitempty"`
	ReadOnly bool     `json:"read_only,omitempty" yaml:"read_only,omitempty"`
	Allow    []string `json:"allow,omitempty" yaml:"allow,omitempty"`
	Gated    bool     `json:"gated,omitempty" yaml:"gated,omitempty"`
}

type effectiveServer struct {
	Name          string `json:"name" yaml:"name"`
	registry.Spec `yaml:",inline"`
	Transport     string   `json:"transport" yaml:"transport"`
	Prefix        string   `json:"prefix" yaml:"prefix"`
	Keywords      []string `json:"keywords,omitempty" yaml:"keywords,omitempty"`
	Timeout       string   `json:"timeout" yaml:"timeout"`
	ToolsDefault  string   `json:"tools_default" yaml:"tools_default"`
	// PathBase is how the fence places the server's relative paths: a
	// folder, roots, cwd or none ("" when it declares none).
	PathBase  string `json:"path_base,omitempty" yaml:"path_base,omitempty"`
	State     string `json:"state" yaml:"state"`
	Tools     int    `json:"tools" yaml:"tools"`
	Enabled   int    `json:"enabled" yaml:"enabled"`
	LastError string `json:"last_error,omitempty" yaml:"last_error,omitempty"`
}

type effectiveTool struct {
	Name   string `json:"name" yaml:"name"`
	Server string `json:"server" yaml:"server"`
	Why    string `json:"why,omitempty" yaml:"why,omitempty"`
}

func runConfig(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] != "effective" {
		return fmt.Errorf("%w: the config command takes a subcommand: effective", errUsage)
	}
	var c common
	var asJSON bool
	fs := newFlags("config effective")
	c.register(fs)
	c.registerWait(fs)
	fs.BoolVar(&asJSON, "json", false, "JSON")
	if err := parseFlagsOnly(fs, args[1:]); err != nil {
		return err
	}
	p, err := c.start(ctx, e)
	if err != nil {
		return err
	}
	defer p.Close()
	cfg, cat := p.Config(), p.Catalog()
	out := effectiveConfig{
		Config:    cfg.Path,
		Toggles:   c.togglesPath(e),
		Surface:   cfg.Surface,
		SkillDirs: cfg.Skills.Dirs,
		Active:    []effectiveTool{},
		Withheld:  []effectiveTool{},
	}
	if out.Surface.AlwaysOn == nil {
		out.Surface.AlwaysOn = []string{}
	}
	if state, err := c.state(e); err == nil {
		if st, ok := runningStatus(state, c.serversPath(e)); ok {
			out.LastReload = describeRunning(st)
		}
	}
	// The fence and policy in force, defaults filled in.
	pol := p.Policy()
	out.Fence = effectiveFence{AllowedDirs: pol.AllowedDirs, OutsideFence: pol.OutsideFence}
	out.Policy = effectivePolicy{Profile: pol.Profile, StrictArgs: pol.StrictArgs, CorrectionRounds: pol.CorrectionRounds,
		ApprovalTimeout: pol.ApprovalTimeout.String(), Defaults: pol.Defaults, Classes: pol.Classes, Rules: pol.Rules}
	for _, sl := range cfg.Slash {
		out.Slash = append(out.Slash, effectiveSlash{Name: sl.Name, Tools: sl.Tools, Activity: sl.Activity, ReadOnly: sl.ReadOnly, Allow: sl.Allow, Gated: sl.Gated})
	}
	out.SlashGated = cfg.SlashGated
	if cfg.Toggles != nil {
		for _, r := range cfg.Toggles.Rules {
			list := "disabled"
			if r.On {
				list = "enabled"
			}
			out.ToggleRules = append(out.ToggleRules, fmt.Sprintf("%s:%d %s %s", filepath.Base(cfg.Toggles.Path), r.Line, list, r.Pattern))
		}
	}
	enabled := map[string]int{}
	for _, t := range cat.Tools {
		et := effectiveTool{Name: t.Exposed, Server: t.Server, Why: t.Toggle}
		if t.Held != nil {
			et.Why = "held: its definition changed (quiver tools changes)"
		}
		if !t.Off && t.Held == nil {
			enabled[t.Server]++
			out.Active = append(out.Active, et)
		} else {
			out.Withheld = append(out.Withheld, et)
		}
	}
	for _, s := range cfg.Servers {
		es := effectiveServer{Name: s.Name, Spec: s.Written, Transport: s.Transport, Prefix: s.Prefix,
			Keywords: s.Keywords, Timeout: s.Timeout.String(), ToolsDefault: "on", PathBase: s.PathBase, Enabled: enabled[s.Name]}
		if s.ToolsOff {
			es.ToolsDefault = "off"
		}
		if st, ok := cat.Status(s.Name); ok {
			es.State, es.Tools = string(st.State), st.Tools
			es.LastError = registry.Redact(st.LastError, cfg.Secrets)
		}
		out.Servers = append(out.Servers, es)
	}
	out.Problems = cat.Problems
	if asJSON {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, string(b))
		return nil
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err = e.stdout.Write(b.Bytes())
	return err
}
