package registry

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"go.yaml.in/yaml/v3"
)

// fileConfig is the file's schema: what yaml decodes servers.yaml into,
// before validation turns it into a Config.
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
	// Metrics is serve's metrics: {listen: ADDR} (cmd/quiver).
	Metrics yaml.Node `yaml:"metrics"`
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

// ConfigOptions are what the caller knows that servers.yaml does not.
type ConfigOptions struct {
	// Lookup resolves ${VAR} and ${keyring:NAME} references (the latter
	// under their whole name, "keyring:NAME"); an unset variable makes its
	// server unavailable, with a message that names it.
	Lookup func(string) (string, bool)
	// Reserved are the tool names the caller serves itself (quiver's
	// builtins), never a server's: always on, so a slash command cannot
	// force or gate them, and the configuration may name them without a
	// server.
	Reserved []string
}

// LoadConfig reads and validates the file at path.
func LoadConfig(path string) (*Config, error) { return LoadConfigLookup(path, os.LookupEnv) }

// LoadConfigLookup is LoadConfig with lookup resolving references (see
// ParseConfig).
func LoadConfigLookup(path string, lookup func(string) (string, bool)) (*Config, error) {
	return ConfigOptions{Lookup: lookup}.Load(path)
}

// ParseConfig validates a servers.yaml held in memory. lookup resolves
// ${VAR} references; an unset variable is an error that names it.
func ParseConfig(path string, b []byte, lookup func(string) (string, bool)) (*Config, error) {
	return ConfigOptions{Lookup: lookup}.Parse(path, b)
}

// Load reads and validates the file at path.
func (o ConfigOptions) Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return o.Parse(path, b)
}

// Parse validates a servers.yaml held in memory. The file is parsed once,
// into a node tree that gives every message its line.
func (o ConfigOptions) Parse(path string, b []byte) (*Config, error) {
	root, second, err := parseYAML(path, b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	var fc fileConfig
	if errs := decodeNode(path, root, &fc); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	// A second document ("---" and more) would be silently ignored; a
	// stray separator usually means half the file is not what quiver reads.
	if second > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, &ConfigError{File: path, Line: second,
			Msg: "a second YAML document starts here (after ---); quiver reads one: remove the separator or move these keys into the first document"})
	}

	cfg := &Config{Path: path, root: root, Hash: contentHash(b), opts: o}
	lookup := o.Lookup
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	p := parser{path: path, root: root, lookup: lookup, reserved: o.Reserved}
	cfg.Surface = p.surface(fc.Surface)
	if fc.Skills != nil {
		cfg.Skills = *fc.Skills
	}
	prefixes := map[string]string{}
	for _, name := range mappingKeys(root, "servers") {
		if name == "<<" {
			p.fail(lineOf(root, "servers", name), "servers: a merge key (<<) cannot stand for servers; write each server out (anchors work inside an entry)")
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

type parser struct {
	path   string
	root   *yaml.Node
	lookup func(string) (string, bool)
	// reserved are ConfigOptions.Reserved.
	reserved []string
	errs     []error
	secrets  []Secret
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
