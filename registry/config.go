package registry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
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

// Defaults for the surface; DESIGN.md explains each.
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
	// raw is the file as read, for DecodeSections.
	raw []byte
}

// DecodeSections decodes the sections of servers.yaml that other packages
// own (fence, policy) into v, strictly, with line numbers that point into
// the real file. v is a pointer to a struct with yaml tags for the
// sections it wants and a `yaml:",inline"` map[string]yaml.Node that takes
// the rest; registry stays ignorant of the section's types.
func (c *Config) DecodeSections(v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(c.raw))
	dec.KnownFields(true)
	if err := decodeYAML(dec, v); err != nil && !errors.Is(err, io.EOF) {
		var root yaml.Node
		_ = yaml.Unmarshal(c.raw, &root)
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(yamlErrors(c.Path, &root, err)...))
	}
	return nil
}

// Surface configures what each session sees.
type Surface struct {
	Reveal         string        `yaml:"reveal"`
	AlwaysOn       []string      `yaml:"always_on"`
	BindTurns      int           `yaml:"bind_turns"`
	MaxBound       int           `yaml:"max_bound"`
	MaxNameLen     int           `yaml:"max_name_len"`
	TurnIdle       time.Duration `yaml:"turn_idle"`
	MaxResultBytes int           `yaml:"max_result_bytes"`
	// SearchWait bounds how long search_tools, and a call of a tool whose
	// server is still starting, wait for the servers to come up.
	SearchWait time.Duration `yaml:"search_wait"`
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

type fileConfig struct {
	Surface *Surface               `yaml:"surface"`
	Servers map[string]*fileServer `yaml:"servers"`
	Skills  *Skills                `yaml:"skills"`
	Slash   map[string]*fileSlash  `yaml:"slash"`
	// SlashGated names tools that run only through a slash command.
	SlashGated []string `yaml:"slash_gated"`
	// Sections owned by other packages: accepted here, validated by
	// DecodeSections into the owner's types.
	Fence  yaml.Node `yaml:"fence"`
	Policy yaml.Node `yaml:"policy"`
	HTTP   yaml.Node `yaml:"http"`
	UI     yaml.Node `yaml:"ui"`
}

type fileServer struct {
	Command   string            `yaml:"command"`
	Args      []string          `yaml:"args"`
	Env       map[string]string `yaml:"env"`
	Cwd       string            `yaml:"cwd"`
	URL       string            `yaml:"url"`
	Transport string            `yaml:"transport"`
	Headers   map[string]string `yaml:"headers"`
	Prefix    *string           `yaml:"prefix"`
	Keywords  []string          `yaml:"keywords"`
	Timeout   time.Duration     `yaml:"timeout"`
	// ToolsDefault is "on" (the default) or "off".
	ToolsDefault string `yaml:"tools_default"`
	// Pinning overrides policy.pinning for this server.
	Pinning  string              `yaml:"pinning"`
	PathArgs map[string][]string `yaml:"path_args"`
	// EnvPassthrough names variables of quiver's environment the child
	// receives besides the default set.
	EnvPassthrough []string `yaml:"env_passthrough"`
	// PathBase is a folder or "roots": how the server resolves relative
	// paths.
	PathBase string `yaml:"path_base"`
	// Auth is "oauth" for a url server that needs a login (oauth.go).
	Auth  string     `yaml:"auth"`
	OAuth *fileOAuth `yaml:"oauth"`
}

type fileSlash struct {
	Description string                    `yaml:"description"`
	Arguments   []fileSlashArgument       `yaml:"arguments"`
	Tools       []string                  `yaml:"tools"`
	Activity    string                    `yaml:"activity"`
	ReadOnly    *bool                     `yaml:"read_only"`
	Allow       []string                  `yaml:"allow"`
	Pins        map[string]map[string]any `yaml:"pins"`
	Gated       bool                      `yaml:"gated"`
}

type fileSlashArgument struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Required    bool   `yaml:"required"`
}

// LoadConfig reads and validates the file at path.
func LoadConfig(path string) (*Config, error) { return LoadConfigLookup(path, os.LookupEnv) }

// LoadConfigLookup is LoadConfig with lookup resolving references (see
// ParseConfig).
func LoadConfigLookup(path string, lookup func(string) (string, bool)) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return ParseConfig(path, b, lookup)
}

// ParseConfig validates a servers.yaml held in memory. lookup resolves
// ${VAR} references; an unset variable is an error that names it.
func ParseConfig(path string, b []byte, lookup func(string) (string, bool)) (*Config, error) {
	// root is for line numbers and key order (empty when the file is not
	// valid YAML: then it only misses from the messages).
	var root yaml.Node
	if decodeYAML(yaml.NewDecoder(bytes.NewReader(b)), &root) != nil {
		root = yaml.Node{}
	}
	var fc fileConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := decodeYAML(dec, &fc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(yamlErrors(path, &root, err)...))
	}
	// A second document ("---" and more) would be silently ignored; a
	// stray separator usually means half the file is not what quiver reads.
	var more yaml.Node
	if err := decodeYAML(dec, &more); err == nil && !emptyDocument(&more) {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, &ConfigError{File: path, Line: more.Line,
			Msg: "a second YAML document starts here (after ---); quiver reads one: remove the separator or move these keys into the first document"})
	}

	cfg := &Config{Path: path, raw: b, Hash: contentHash(b)}
	p := parser{path: path, root: &root, lookup: lookup}
	cfg.Surface = p.surface(fc.Surface)
	if fc.Skills != nil {
		cfg.Skills = *fc.Skills
	}
	prefixes := map[string]string{}
	for _, name := range mappingKeys(&root, "servers") {
		if name == "<<" {
			p.fail(lineOf(&root, "servers", name), "servers: a merge key (<<) cannot stand for servers; write each server out (anchors work inside an entry)")
			continue
		}
		fs := fc.Servers[name]
		s := p.server(name, fs)
		if s == nil {
			continue
		}
		if other, dup := prefixes[s.Prefix]; dup && s.Prefix != "" {
			p.fail(s.Line, "servers.%s: prefix %q is already used by server %q; give one of them another prefix", name, s.Prefix, other)
		}
		prefixes[s.Prefix] = name
		cfg.Servers = append(cfg.Servers, *s)
	}
	cfg.Slash, cfg.SlashGated = p.slash(fc.Slash, fc.SlashGated)
	p.toolNames(cfg, fc.SlashGated)
	if len(p.errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(p.errs...))
	}
	// What children receive from quiver's own environment is known here
	// too, from the environment they are started with (see envSecrets).
	cfg.Secrets = append(p.secrets, envSecrets(cfg.Servers, os.Environ(), p.secrets)...)
	return cfg, nil
}

// emptyDocument reports whether a YAML document holds nothing (a trailing
// "---" alone).
func emptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

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
	var root yaml.Node
	_ = yaml.Unmarshal(c.raw, &root)
	n := &root
	line := 0
	for _, k := range path {
		var i int
		if _, serr := fmt.Sscanf(k, "[%d]", &i); serr == nil {
			if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
				n = n.Content[0]
			}
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				break
			}
			n = n.Content[i]
			line = n.Line
			continue
		}
		l, next := nodeAt(n, k)
		if next == nil {
			break
		}
		line, n = l, next
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

type parser struct {
	path    string
	root    *yaml.Node
	lookup  func(string) (string, bool)
	errs    []error
	secrets []Secret
}

func (p *parser) fail(line int, format string, args ...any) {
	p.errs = append(p.errs, &ConfigError{File: p.path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) surface(s *Surface) Surface {
	out := Surface{Reveal: RevealAuto, BindTurns: DefaultBindTurns, MaxBound: DefaultMaxBound,
		MaxNameLen: DefaultMaxNameLen, TurnIdle: DefaultTurnIdle, MaxResultBytes: DefaultMaxResultBytes, SearchWait: DefaultSearchWait}
	if s == nil {
		return out
	}
	line := func(key string) int { return lineOf(p.root, "surface", key) }
	switch s.Reveal {
	case "":
	case RevealAuto, RevealList, RevealCall, RevealDirect:
		out.Reveal = s.Reveal
	default:
		p.fail(line("reveal"), "surface.reveal: %q is not a reveal mode; use auto, list, call or direct", s.Reveal)
	}
	out.AlwaysOn = s.AlwaysOn
	positive := func(key string, v int, dst *int, min int) {
		switch {
		case v == 0:
		case v < min:
			p.fail(line(key), "surface.%s: %d is too small; use at least %d", key, v, min)
		default:
			*dst = v
		}
	}
	positive("bind_turns", s.BindTurns, &out.BindTurns, 1)
	positive("max_bound", s.MaxBound, &out.MaxBound, 1)
	positive("max_name_len", s.MaxNameLen, &out.MaxNameLen, 16)
	positive("max_result_bytes", s.MaxResultBytes, &out.MaxResultBytes, 1024)
	if s.TurnIdle < 0 {
		p.fail(line("turn_idle"), "surface.turn_idle: must not be negative")
	} else if s.TurnIdle > 0 {
		out.TurnIdle = s.TurnIdle
	}
	switch {
	case s.SearchWait < 0 || s.SearchWait > time.Minute:
		p.fail(line("search_wait"), "surface.search_wait: %s is out of range; use 0s (do not wait) to 1m, like 3s", s.SearchWait)
	case lineOf(p.root, "surface", "search_wait") > 0:
		out.SearchWait = s.SearchWait
	}
	return out
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (p *parser) server(name string, fs *fileServer) *Server {
	line := lineOf(p.root, "servers", name)
	key := func(k string) int {
		if l := lineOf(p.root, "servers", name, k); l > 0 {
			return l
		}
		return line
	}
	if fs == nil {
		p.fail(line, "servers.%s: the entry is empty; give it a command (a local server) or a url (a remote one)", name)
		return nil
	}
	if !nameRE.MatchString(name) {
		p.fail(line, "servers.%s: a server name may only use letters, digits, '_' and '-'", name)
	}
	s := &Server{Name: name, Line: line, Prefix: name, Keywords: fs.Keywords, Timeout: DefaultTimeout,
		Written: Spec{Command: fs.Command, Args: slices.Clone(fs.Args), Env: maps.Clone(fs.Env), Cwd: fs.Cwd,
			EnvPassthrough: fs.EnvPassthrough, URL: fs.URL, Headers: maps.Clone(fs.Headers)}}
	for tool, args := range fs.PathArgs {
		if tool == "" || len(args) == 0 || slices.Contains(args, "") {
			p.fail(key("path_args"), "servers.%s.path_args: give each tool's path arguments by name, like {write_report: [out, template]}", name)
			break
		}
	}
	s.PathArgs = fs.PathArgs
	switch fs.ToolsDefault {
	case "", "on":
	case "off":
		s.ToolsOff = true
	default:
		p.fail(key("tools_default"), "servers.%s.tools_default: %q is not on or off", name, fs.ToolsDefault)
	}
	switch fs.Pinning {
	case "", PinStrict, PinWarn, PinOff:
		s.Pinning = fs.Pinning
	default:
		p.fail(key("pinning"), "servers.%s.pinning: %q is not strict, warn or off", name, fs.Pinning)
	}
	if fs.Prefix != nil {
		s.Prefix = *fs.Prefix
		if s.Prefix != "" && !nameRE.MatchString(s.Prefix) {
			p.fail(key("prefix"), "servers.%s.prefix: %q may only use letters, digits, '_' and '-'", name, s.Prefix)
		}
	}
	if fs.Timeout < 0 {
		p.fail(key("timeout"), "servers.%s.timeout: must be positive, like 30s or 2m", name)
	} else if fs.Timeout > 0 {
		s.Timeout = fs.Timeout
	}
	// expand expands v, the value at keys under the entry (["env",
	// "TOKEN"]); an error names that key and its line. secret says which
	// variables' values are secrets, to be redacted wherever they show.
	expand := func(v string, secret func(name, val string) bool, keys ...string) (string, bool) {
		out, err := expandVars(v, p.lookup, func(name, val string) {
			// A stored secret is one wherever it is used.
			if val != "" && (strings.HasPrefix(name, KeyringPrefix) || secret(name, val)) {
				p.secrets = append(p.secrets, Secret{Var: name, Value: val})
			}
		})
		if err != nil {
			l := lineOf(p.root, append([]string{"servers", name}, keys...)...)
			if l == 0 {
				l = key(keys[0])
			}
			var unset *unsetError
			if errors.As(err, &unset) {
				if s.Unavailable == "" {
					s.Unavailable = fmt.Sprintf("%s:%d: servers.%s.%s: %v", configName(p.path), l, name, strings.Join(keys, "."), err)
				}
				return out, false
			}
			p.fail(l, "servers.%s.%s: %v", name, strings.Join(keys, "."), err)
			return out, false
		}
		return out, true
	}
	// Every value given to a server's env or headers is a secret, and so
	// is every value in a url but its host and port (errors quote the whole
	// url: a tenant id in its path is no one's business). In a command
	// line only what looks like one by name or shape is (${HOME} in a path
	// is not), and whatever follows a secret-named flag (--password X).
	always := func(string, string) bool { return true }
	never := func(string, string) bool { return false }
	hostVars := urlHostVars(fs.URL)
	inURL := func(name, val string) bool {
		return LooksSecret(name, val) || strings.ContainsAny(val, "?@/") || !hostVars[name]
	}
	// literal records secret, found in a value written in the file as it
	// is (no ${VAR}), and returns what Written shows for the value.
	literal := func(written, label, secret string) string {
		if strings.Contains(written, "${") || len(secret) < 4 {
			return written
		}
		if !labelRE.MatchString(label) {
			label = "secret" // the label goes into [redacted:...]
		}
		p.secrets = append(p.secrets, Secret{Var: label, Value: secret})
		return "[redacted:" + label + "]"
	}
	switch {
	case fs.Command != "" && fs.URL != "":
		p.fail(line, "servers.%s: give either command (a local server) or url (a remote one), not both", name)
	case fs.Command != "":
		if fs.Transport != "" && fs.Transport != TransportStdio {
			p.fail(key("transport"), "servers.%s.transport: a server with a command speaks stdio; remove transport or use url", name)
		}
		if len(fs.Headers) > 0 {
			p.fail(key("headers"), "servers.%s.headers: headers are for remote servers (url); use env for a local one", name)
		}
		s.Transport = TransportStdio
		var ok bool
		if s.Command, ok = expand(fs.Command, never, "command"); ok && strings.TrimSpace(s.Command) == "" {
			p.fail(key("command"), "servers.%s.command: %q expands to nothing; set the variable to the program to run", name, fs.Command)
		}
		// After --password and the like, a value is the secret unless it
		// is a path to one.
		afterFlag := func(name, val string) bool { return LooksSecret(name, val) || flagSecret(val) }
		for i, a := range fs.Args {
			flag, secretArg := "", LooksSecret
			if i > 0 {
				prev := fs.Args[i-1]
				if f, ok := secretFlag(prev); ok && !strings.Contains(prev, "=") && !strings.HasPrefix(a, "--") {
					flag = f
				}
			}
			written := a
			if flag == "" {
				if f, ok := secretFlag(a); ok && strings.Contains(a, "=") {
					// --password=X: X is the secret.
					flagName, val, _ := strings.Cut(a, "=")
					v, _ := expand(val, afterFlag, "args")
					s.Args = append(s.Args, flagName+"="+v)
					if strings.Contains(val, "${") || flagSecret(v) {
						s.Written.Args[i] = flagName + "=" + literal(val, f, v)
					}
					continue
				}
			} else {
				secretArg = afterFlag
			}
			a, _ = expand(a, secretArg, "args")
			s.Args = append(s.Args, a)
			if flag != "" && flagSecret(a) {
				s.Written.Args[i] = literal(written, flag, a)
			}
		}
		s.Cwd, _ = expand(fs.Cwd, never, "cwd")
		if len(fs.Env) > 0 {
			s.Env = map[string]string{}
			for _, k := range sortedKeys(fs.Env) {
				s.Env[k], _ = expand(fs.Env[k], always, "env", k)
				s.Written.Env[k] = literal(fs.Env[k], k, literalSecret(k, s.Env[k]))
			}
		}
		for _, n := range fs.EnvPassthrough {
			if !envNameRE.MatchString(strings.TrimSuffix(n, "*")) {
				p.fail(key("env_passthrough"), "servers.%s.env_passthrough: %q is not a variable name; give names like AWS_REGION, or a prefix like AWS_*", name, n)
			}
		}
		s.EnvPassthrough = fs.EnvPassthrough
		s.home = childHome(s.Env, p.lookup)
	case fs.URL != "":
		switch fs.Transport {
		case "", TransportHTTP:
			s.Transport = TransportHTTP
		case TransportSSE:
			s.Transport = TransportSSE
		default:
			p.fail(key("transport"), "servers.%s.transport: %q is not a transport for a url; use http or sse", name, fs.Transport)
		}
		if len(fs.Args) > 0 || len(fs.Env) > 0 || fs.Cwd != "" || len(fs.EnvPassthrough) > 0 {
			p.fail(line, "servers.%s: args, env, env_passthrough and cwd are for local servers (command); a url server takes headers", name)
		}
		var ok bool
		s.URL, ok = expand(fs.URL, inURL, "url")
		if ok && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			p.fail(key("url"), "servers.%s.url: %q must start with http:// or https://", name, fs.URL) // as written: the value may hold a key
		}
		s.Auth, s.OAuth = p.oauth(name, fs, key, expand)
		s.Written.Auth = s.Auth
		if len(fs.Headers) > 0 {
			s.Headers = map[string]string{}
			for _, k := range sortedKeys(fs.Headers) {
				s.Headers[k], _ = expand(fs.Headers[k], always, "headers", k)
				s.Written.Headers[k] = literal(fs.Headers[k], k, literalSecret(k, s.Headers[k]))
			}
		}
	default:
		p.fail(line, "servers.%s: give it a command (a local server) or a url (a remote one)", name)
	}
	if fs.Command != "" && (fs.Auth != "" || fs.OAuth != nil) {
		p.fail(key("auth"), "servers.%s: auth and oauth are for remote servers (url); a local server gets its secrets in env", name)
	}
	if fs.PathBase != "" {
		if v, ok := expand(fs.PathBase, never, "path_base"); ok {
			var err error
			if s.PathBase, err = pathBase(v, s.home, p.path); err != nil {
				p.fail(key("path_base"), "servers.%s.path_base: %v", name, err)
			}
		}
	}
	return s
}

var varRE = regexp.MustCompile(`\$\$|\$\{([^}]*)\}|\$\{`)

// expandVars replaces ${VAR} with the variable's value and $$ with $.
// Anything else is left alone so that values with a lone $ survive; a ${
// that is never closed is an error, not a literal (it is a typo).
func expandVars(s string, lookup func(string) (string, bool), seen func(name, val string)) (string, error) {
	var errs, unset []string
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if m == "${" {
			errs = append(errs, "a ${ is never closed; write ${NAME}, or $${ for a literal ${")
			return m
		}
		name := m[2 : len(m)-1]
		if key, ok := strings.CutPrefix(name, KeyringPrefix); ok {
			// A secret in the OS keychain (or quiver's secrets file),
			// which lookup resolves under its whole name.
			if !keyringNameRE.MatchString(key) {
				errs = append(errs, fmt.Sprintf("%q is not a keyring reference; write ${keyring:NAME} with letters, digits, _, . and -", m))
				return m
			}
			v, ok := lookup(name)
			if !ok {
				errs = append(errs, fmt.Sprintf("keyring secret %s is not set; run: quiver secret set %s", key, key))
				return m
			}
			seen(name, v)
			return v
		}
		if !envNameRE.MatchString(name) {
			errs = append(errs, fmt.Sprintf("%q is not a variable reference; write ${NAME} with letters, digits and _", m))
			return m
		}
		v, ok := lookup(name)
		if !ok {
			unset = append(unset, name)
			return m
		}
		seen(name, v)
		return v
	})
	if len(errs) > 0 {
		for _, n := range unset {
			errs = append(errs, unsetText(n))
		}
		return s, errors.New(strings.Join(errs, "; "))
	}
	if len(unset) > 0 {
		return s, &unsetError{names: unset}
	}
	return out, nil
}

// An unsetError is a value whose only fault is a ${VAR} that is not set:
// the file is readable, so only the server that needs the variable is
// down, not the whole file (issue 17, problem 3).
type unsetError struct{ names []string }

func (e *unsetError) Error() string {
	parts := make([]string, len(e.names))
	for i, n := range e.names {
		parts[i] = unsetText(n)
	}
	return strings.Join(parts, "; ")
}

func unsetText(name string) string {
	return fmt.Sprintf("environment variable %s is not set; set it in the environment quiver starts with (a host's \"env\" block) or remove the reference", name)
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// KeyringPrefix starts a reference to a stored secret: ${keyring:NAME}.
// The lookup given to ParseConfig resolves "keyring:NAME".
const KeyringPrefix = "keyring:"

var keyringNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// labelRE matches what may name a secret in [redacted:NAME]: a variable,
// a header or a flag.
var labelRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// lineOf finds the line of the key at path in a YAML document; 0 if absent.
func lineOf(root *yaml.Node, path ...string) int {
	line, _ := nodeAt(root, path...)
	return line
}

// mappingKeys lists the keys of the mapping at path, in file order.
func mappingKeys(root *yaml.Node, path ...string) []string {
	_, n := nodeAt(root, path...)
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	return keys
}

// nodeAt walks mapping keys from the document root and returns the line of
// the last key and the value node under it (nil when a key is absent).
func nodeAt(root *yaml.Node, path ...string) (int, *yaml.Node) {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, k := range path {
		if n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil || n.Kind != yaml.MappingNode {
			return 0, nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil {
			return 0, nil
		}
		n = next
	}
	return line, n
}
