package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Reveal modes decide how tools found by a search reach the model.
const (
	RevealAuto   = "auto"
	RevealList   = "list"
	RevealCall   = "call"
	RevealDirect = "direct"
)

// Defaults for the surface; README.md's configuration reference explains
// each.
const (
	DefaultBindTurns      = 3
	DefaultMaxBound       = 12
	DefaultMaxNameLen     = 64
	DefaultTurnIdle       = 20 * time.Second
	DefaultMaxResultBytes = 64 << 10
	DefaultTimeout        = 60 * time.Second
	DefaultSearchWait     = 3 * time.Second
)

// Config is a validated servers.yaml. Every value is typed and final: the
// rest of quiver never re-parses or re-expands anything.
type Config struct {
	// Path is the file the config came from ("" when parsed from memory).
	Path    string
	Surface Surface
	// Servers in the order the file lists them; the order is part of the
	// surface's stability (catalog order, tie-breaks).
	Servers []Server
	Skills  Skills
	// Slash are the slash commands (MCP prompts) in file order.
	Slash []Slash
	// SlashGated lists every slash-gated tool: the top-level slash_gated
	// names and the tools of every slash entry with gated: true. Such a
	// tool runs only in a turn whose slash command forced it.
	SlashGated []string
	// Secrets are the values that must never show, redacted from
	// everything quiver shows: whatever ${VAR} brings into env or headers,
	// or into a url anywhere but its whole host or port; a ${VAR} in args
	// that looks secret by name or shape; the value after a secret-named
	// flag (--password X, --api-key=X); and a value written literally in
	// env or headers whose name or shape is a secret's; and a value a
	// stdio child receives from quiver's environment (the default set,
	// env_passthrough) that looks secret by name or shape (envSecrets).
	Secrets []Secret
	// Hash is the SHA-256 of the file as read (hex); a reload skips a
	// rewrite that changed nothing.
	Hash string
	// Toggles are the tool switches from the toggles file (tools.yaml);
	// nil means none. The loader attaches them; ParseConfig leaves nil.
	Toggles *Toggles
	// root is the file's node tree, parsed once, for DecodeSections and
	// SectionError.
	root *yaml.Node
	// opts are the options the file was parsed with: CheckToolName reads
	// the reserved names, and a reload parses the new file with them.
	opts ConfigOptions
}

// DecodeSections decodes the sections of servers.yaml that other packages
// own (fence, policy) into v, strictly, with line numbers that point into
// the real file. v is a pointer to a struct with yaml tags for the
// sections it wants and a `yaml:",inline"` map[string]yaml.Node that takes
// the rest; registry stays ignorant of the section's types.
func (c *Config) DecodeSections(v any) error {
	if errs := decodeNode(c.Path, c.root, v); len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// Surface configures what each session sees.
type Surface struct {
	Reveal         string        `yaml:"reveal" json:"reveal"`
	AlwaysOn       []string      `yaml:"always_on" json:"always_on"`
	BindTurns      int           `yaml:"bind_turns" json:"bind_turns"`
	MaxBound       int           `yaml:"max_bound" json:"max_bound"`
	MaxNameLen     int           `yaml:"max_name_len" json:"max_name_len"`
	TurnIdle       time.Duration `yaml:"turn_idle" json:"turn_idle"`
	MaxResultBytes int           `yaml:"max_result_bytes" json:"max_result_bytes"`
	// SearchWait bounds how long search_tools, and a call of a tool whose
	// server is still starting, wait for the servers to come up.
	SearchWait time.Duration `yaml:"search_wait" json:"search_wait"`
}

// MarshalJSON writes the durations as servers.yaml takes them ("20s"),
// as yaml does, not as nanoseconds.
func (s Surface) MarshalJSON() ([]byte, error) {
	type fields Surface // without this method
	return json.Marshal(struct {
		fields
		TurnIdle   string `json:"turn_idle"`
		SearchWait string `json:"search_wait"`
	}{fields(s), s.TurnIdle.String(), s.SearchWait.String()})
}

// Activities quiver knows. review, plan and research are read-only: the
// gate refuses every tool that is not a read. run is normal. A slash entry
// may name any other activity if it says read_only: true or false.
const (
	ActivityReview   = "review"
	ActivityPlan     = "plan"
	ActivityResearch = "research"
	ActivityRun      = "run"
)

// A Slash is one slash command: an MCP prompt that, when the user runs it,
// starts a new turn that forces Tools onto the surface, sets the activity
// and pins arguments, for that turn only.
type Slash struct {
	Name        string
	Description string
	Arguments   []SlashArgument
	// Tools are exposed tool names forced for the command's turn, in order.
	Tools []string
	// Activity names the turn's activity ("" for none); ReadOnly makes the
	// gate refuse every class but read during it.
	Activity string
	ReadOnly bool
	// Allow, when set, narrows the turn to the tools whose exposed names
	// match one of these globs (path.Match syntax); builtins stay.
	Allow []string
	// Pins fix argument values per tool: {tool: {argument: value}}.
	Pins map[string]map[string]any
	// Gated makes Tools slash-gated (see Config.SlashGated).
	Gated bool
	// Line is where the entry starts in the file.
	Line int
}

// A SlashArgument is one argument a slash command takes.
type SlashArgument struct {
	Name        string
	Description string
	Required    bool
}

// SlashFor returns the slash command that forces the slash-gated tool
// name, if name is slash-gated.
func (c *Config) SlashFor(name string) (string, bool) {
	if !slices.Contains(c.SlashGated, name) {
		return "", false
	}
	for _, sl := range c.Slash {
		if slices.Contains(sl.Tools, name) {
			return sl.Name, true
		}
	}
	return "", false
}

// Skills configures extra folders of skill and reference files.
type Skills struct {
	Dirs []string `yaml:"dirs"`
}

// Server is one downstream MCP server.
type Server struct {
	Name string
	// Command, Args, Env and Cwd describe a stdio child. Command "quiver"
	// means the running quiver binary, so the shipped config works without
	// anything on PATH. The child's environment is small: the default set
	// (PATH, HOME, LANG and the like; see defaultEnv), the variables
	// EnvPassthrough names, then Env, which wins; never the rest of
	// quiver's own.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// EnvPassthrough names more variables of quiver's environment the
	// child receives besides the default set (see defaultEnv): exact
	// names, or a prefix ending in * (AWS_*).
	EnvPassthrough []string
	// URL and Transport ("http" or "sse") describe a remote server.
	URL       string
	Transport string
	Headers   map[string]string
	// Auth is AuthOAuth for a remote server that needs a login ("quiver
	// login NAME"), with OAuth's settings; "" for none or static headers.
	Auth  string
	OAuth OAuthSettings
	// Prefix is prepended to tool names with "__"; "" exposes them bare.
	Prefix   string
	Keywords []string
	Timeout  time.Duration
	// ToolsOff is tools_default: off: the server's tools are switched off
	// until the toggles file switches them on.
	ToolsOff bool
	// Pinning is the entry's pinning: (PinStrict, PinWarn, PinOff), ""
	// when it leaves it to policy.pinning.
	Pinning string
	// PathArgs names, per tool (the server's own tool name), the top-level
	// arguments that are paths, for tools whose argument names do not say
	// so; the gate's fence checks them besides those it infers.
	PathArgs map[string][]string
	// PathBase says how the server resolves a relative path argument: ""
	// (undeclared: quiver cannot know), PathBaseRoots (against its allowed
	// folders, like server-filesystem: see RootDirs), PathBaseNone (not
	// files on this machine), or a clean absolute
	// folder. path_base in the file may also be ~/… (the server's HOME,
	// see Home) or relative to the config file's folder.
	PathBase string
	// Written is the entry's launch values as the file has them, ${VAR}
	// references unexpanded: what quiver may show people. A secret written
	// literally (an env or header value with a secret's name or shape, the
	// value after --password and the like) shows as [redacted:NAME].
	Written Spec
	// Unavailable, when set, says why the entry cannot start although the
	// file is fine (a ${VAR} it needs is not set): the server is down with
	// this reason and the other servers run.
	Unavailable string
	// Line is where the entry starts in the file, for messages.
	Line int
	// home is the HOME the child sees (Home).
	home string
}

// Server.PathBase values that are not folders.
const (
	// PathBaseRoots is for a server that resolves relative paths against
	// its allowed folders (its folder arguments and the MCP roots the
	// client gives), as @modelcontextprotocol/server-filesystem does.
	PathBaseRoots = "roots"
	// PathBaseNone is for a server whose relative paths name nothing on
	// this machine (a path in a repository, a key in a bucket): the fence
	// leaves them alone and still judges absolute paths and ~.
	PathBaseNone = "none"
	// PathBaseCwd is for a server that resolves relative paths against
	// the folder it runs in (its cwd:, else quiver's own), as most
	// programs do.
	PathBaseCwd = "cwd"
)

// Spec is what a server entry says about how to reach the server, as
// written in servers.yaml (no ${VAR} expanded).
type Spec struct {
	Command string            `yaml:"command,omitempty" json:"command,omitempty"`
	Args    []string          `yaml:"args,omitempty" json:"args,omitempty"`
	Env     map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	Cwd     string            `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	// EnvPassthrough is env_passthrough as written.
	EnvPassthrough []string          `yaml:"env_passthrough,omitempty" json:"env_passthrough,omitempty"`
	URL            string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers        map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	Auth           string            `yaml:"auth,omitempty" json:"auth,omitempty"`
}

// Secret is a value that must never be shown, and the variable it came from.
type Secret struct {
	Var   string
	Value string
}

// Transports a server entry can use.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

// A ConfigError points at the place in servers.yaml that is wrong.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	file := e.File
	if file == "" {
		file = "servers.yaml"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", file, e.Msg)
}

// ErrInvalidConfig is wrapped by every error LoadConfig and ParseConfig
// return for a file that exists but is wrong.
var ErrInvalidConfig = errors.New("invalid configuration")

// ServerFor returns the server whose tools are exposed under names like
// name: the one whose prefix starts it (github__create_issue), else one
// with no prefix at all.
func (c *Config) ServerFor(name string) (Server, bool) {
	var bare *Server
	for i, s := range c.Servers {
		switch {
		case s.Prefix == "" && bare == nil:
			bare = &c.Servers[i]
		case s.Prefix != "" && strings.HasPrefix(name, s.Prefix+"__"):
			return s, true
		}
	}
	if bare != nil {
		return *bare, true
	}
	return Server{}, false
}

// SectionError is the error for a bad value in a section another package
// decodes (DecodeSections): a ConfigError wrapping ErrInvalidConfig, with
// the file and the line of the value at path. path holds mapping keys and
// "[i]" for list items; the message names it the same way.
func (c *Config) SectionError(path []string, err error) error {
	line := 0
	if n := c.root; n != nil {
		for _, k := range path {
			l, next := nodeAt(n, k)
			if next == nil {
				break // the deepest place that is in the file
			}
			line, n = l, next
		}
	}
	where := strings.ReplaceAll(strings.Join(path, "."), ".[", "[")
	return fmt.Errorf("%w: %w", ErrInvalidConfig, &ConfigError{File: configName(c.Path), Line: line, Msg: where + ": " + err.Error()})
}

// Server returns the named server entry.
func (c *Config) Server(name string) (Server, bool) {
	i := slices.IndexFunc(c.Servers, func(s Server) bool { return s.Name == name })
	if i < 0 {
		return Server{}, false
	}
	return c.Servers[i], true
}
