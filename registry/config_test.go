package registry

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// configErrors returns every *ConfigError joined into err.
func configErrors(err error) []*ConfigError {
	var out []*ConfigError
	var walk func(error)
	walk = func(e error) {
		if ce, ok := e.(*ConfigError); ok {
			out = append(out, ce)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

func mustParse(t *testing.T, yamlText string, vars map[string]string) *Config {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yamlText), testLookup(vars))
	if err != nil {
		t.Fatalf("ParseConfig:\n%s\n-> %v", yamlText, err)
	}
	return cfg
}

func TestShippedConfigParses(t *testing.T) {
	cfg, err := LoadConfig(filepath.Join("..", "servers.yaml"))
	if err != nil {
		t.Fatalf("the shipped servers.yaml: %v", err)
	}
	if len(cfg.Servers) != 1 {
		t.Fatalf("servers %+v; want the example server alone", cfg.Servers)
	}
	ex := cfg.Servers[0]
	if ex.Name != "example" || ex.Command != "quiver" || strings.Join(ex.Args, " ") != "example-server" ||
		ex.Transport != TransportStdio || ex.Prefix != "example" || ex.Timeout != 30*time.Second || ex.Line == 0 {
		t.Errorf("example server: %+v", ex)
	}
	want := Surface{Reveal: RevealAuto, AlwaysOn: []string{"example__current_time"}, BindTurns: 3, MaxBound: 12,
		MaxNameLen: 64, TurnIdle: 20 * time.Second, MaxResultBytes: DefaultMaxResultBytes, SearchWait: DefaultSearchWait}
	if !reflect.DeepEqual(cfg.Surface, want) {
		t.Errorf("surface %+v; want %+v", cfg.Surface, want)
	}
	if cfg.Path != filepath.Join("..", "servers.yaml") || len(cfg.Secrets) != 0 {
		t.Errorf("path %q, secrets %v", cfg.Path, cfg.Secrets)
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "servers.yaml"))
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrInvalidConfig) {
		t.Errorf("err %v; want a not-exist error that is not ErrInvalidConfig", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
	}{
		{"empty_file", ""},
		{"only_comments", "# nothing here yet\n"},
		{"empty_document", "---\n"},
		{"empty_sections", "surface:\nservers:\nskills:\n"},
		{"zeros_mean_default", "surface: {bind_turns: 0, max_bound: 0, max_name_len: 0, turn_idle: 0s, max_result_bytes: 0, reveal: \"\"}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := mustParse(t, tc.yaml, nil)
			want := Surface{Reveal: RevealAuto, BindTurns: DefaultBindTurns, MaxBound: DefaultMaxBound,
				MaxNameLen: DefaultMaxNameLen, TurnIdle: DefaultTurnIdle, MaxResultBytes: DefaultMaxResultBytes, SearchWait: DefaultSearchWait}
			if !reflect.DeepEqual(cfg.Surface, want) {
				t.Errorf("surface %+v; want %+v", cfg.Surface, want)
			}
			if len(cfg.Servers) != 0 || len(cfg.Secrets) != 0 || len(cfg.Skills.Dirs) != 0 {
				t.Errorf("servers %v, secrets %v, skills %v; want none", cfg.Servers, cfg.Secrets, cfg.Skills)
			}
		})
	}
	t.Run("server_defaults", func(t *testing.T) {
		cfg := mustParse(t, "servers:\n  local:\n    command: x\n  remote:\n    url: https://mcp.example.com/mcp\n  old:\n    url: http://localhost:1/sse\n    transport: sse\n", nil)
		want := []Server{
			{Name: "local", Command: "x", Transport: TransportStdio, Prefix: "local", Timeout: DefaultTimeout, Line: 2, Written: Spec{Command: "x"}},
			{Name: "remote", URL: "https://mcp.example.com/mcp", Transport: TransportHTTP, Prefix: "remote", Timeout: DefaultTimeout, Line: 4, Written: Spec{URL: "https://mcp.example.com/mcp"}},
			{Name: "old", URL: "http://localhost:1/sse", Transport: TransportSSE, Prefix: "old", Timeout: DefaultTimeout, Line: 6, Written: Spec{URL: "http://localhost:1/sse"}},
		}
		if !reflect.DeepEqual(cfg.Servers, want) {
			t.Errorf("servers\n got %+v\nwant %+v", cfg.Servers, want)
		}
	})
}

func TestConfigValues(t *testing.T) {
	cfg := mustParse(t, `
surface:
  reveal: direct
  always_on: [b__y, a__x]
  bind_turns: 1
  max_bound: 50
  max_name_len: 16
  turn_idle: 1m30s
  max_result_bytes: 1024
skills:
  dirs: [/opt/skills]
servers:
  gh:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-github@2025.4.8"]
    cwd: /tmp
    prefix: git-hub_2
    keywords: [issues, prs]
    timeout: 2m
  bare:
    command: x
    prefix: ""
  bare2:
    command: y
    prefix: ""
    transport: stdio
`, nil)
	if s := cfg.Surface; s.Reveal != RevealDirect || strings.Join(s.AlwaysOn, ",") != "b__y,a__x" || s.BindTurns != 1 ||
		s.MaxBound != 50 || s.MaxNameLen != 16 || s.TurnIdle != 90*time.Second || s.MaxResultBytes != 1024 {
		t.Errorf("surface %+v", s)
	}
	if strings.Join(cfg.Skills.Dirs, ",") != "/opt/skills" {
		t.Errorf("skills %+v", cfg.Skills)
	}
	gh, ok := cfg.Server("gh")
	if !ok || gh.Prefix != "git-hub_2" || gh.Timeout != 2*time.Minute || gh.Cwd != "/tmp" ||
		strings.Join(gh.Args, " ") != "-y @modelcontextprotocol/server-github@2025.4.8" || strings.Join(gh.Keywords, ",") != "issues,prs" {
		t.Errorf("gh %+v", gh)
	}
	// Two bare servers are allowed; the catalog reports real collisions.
	if b, _ := cfg.Server("bare"); b.Prefix != "" {
		t.Errorf("bare prefix %q", b.Prefix)
	}
	if _, ok := cfg.Server("nope"); ok {
		t.Error("Server found an unknown name")
	}
}

func TestConfigKeepsServerOrder(t *testing.T) {
	cfg := mustParse(t, "servers:\n  zeta: {command: x}\n  alpha: {command: x}\n  mid: {url: http://h/mcp}\n  beta: {command: x}\n", nil)
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "zeta alpha mid beta" {
		t.Errorf("order %s; want the file's: zeta alpha mid beta", got)
	}
}

func TestConfigAnchorsAndAliases(t *testing.T) {
	cfg := mustParse(t, "servers:\n  a: &base\n    command: x\n    env: {A: \"1\"}\n  b: *base\n", nil)
	if len(cfg.Servers) != 2 || cfg.Servers[1].Name != "b" || cfg.Servers[1].Env["A"] != "1" || cfg.Servers[1].Line != 5 {
		t.Errorf("servers %+v", cfg.Servers)
	}
}

func TestConfigExpandsVariables(t *testing.T) {
	vars := map[string]string{
		"HOME": "/home/me", "TOKEN": "ghp_s3cret", "API_KEY": "k-123456", "HOST": "mcp.example.com",
		"SHORT": "abc", "EMPTY": "",
	}
	cfg := mustParse(t, `
servers:
  local:
    command: ${HOME}/bin/server
    args: ["--root", "${HOME}/projects", "--price=5$", "$${HOME}", "a$$b", "$HOME", "$${open"]
    cwd: ${HOME}
    env:
      GITHUB_TOKEN: ${TOKEN}
      MIXED: "Bearer ${API_KEY} for ${HOME}"
      LITERAL: not-a-secret
      SHORTONE: ${SHORT}
      BLANK: ${EMPTY}
  remote:
    url: https://${HOST}/mcp
    headers:
      Authorization: Bearer ${API_KEY}
      X-Plain: plain
`, vars)
	local, _ := cfg.Server("local")
	if local.Command != "/home/me/bin/server" || local.Cwd != "/home/me" {
		t.Errorf("command %q cwd %q", local.Command, local.Cwd)
	}
	// $$ is a literal $, and a $ that starts no ${...} is left alone.
	if got := strings.Join(local.Args, " "); got != "--root /home/me/projects --price=5$ ${HOME} a$b $HOME ${open" {
		t.Errorf("args %q", got)
	}
	wantEnv := map[string]string{"GITHUB_TOKEN": "ghp_s3cret", "MIXED": "Bearer k-123456 for /home/me",
		"LITERAL": "not-a-secret", "SHORTONE": "abc", "BLANK": ""}
	if !reflect.DeepEqual(local.Env, wantEnv) {
		t.Errorf("env %v; want %v", local.Env, wantEnv)
	}
	remote, _ := cfg.Server("remote")
	if remote.URL != "https://mcp.example.com/mcp" || remote.Headers["Authorization"] != "Bearer k-123456" || remote.Headers["X-Plain"] != "plain" {
		t.Errorf("remote %+v", remote)
	}
	// Secrets: every value a ${VAR} brought into env or headers, and
	// nothing else (not literals, not args, command, cwd or url; not an
	// empty value).
	got := map[string]string{}
	for _, s := range cfg.Secrets {
		got[s.Var] = s.Value
	}
	want := map[string]string{"TOKEN": "ghp_s3cret", "API_KEY": "k-123456", "HOME": "/home/me", "SHORT": "abc"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("secrets %v; want %v", got, want)
	}
	for _, s := range cfg.Secrets {
		if s.Value == "not-a-secret" || s.Value == "plain" || s.Value == "mcp.example.com" {
			t.Errorf("literal or url value recorded as a secret: %+v", s)
		}
	}
}

// TestConfigSecretsInURLsAndArgs: a key in a url's query or user info, a
// url held whole in a variable, and a token on a command line are secrets,
// redacted wherever they show; a host or a home folder is not.
func TestConfigSecretsInURLsAndArgs(t *testing.T) {
	vars := map[string]string{
		"HOST": "mcp.example.com", "K": "topsecretkey12345", "USERPW": "me:hunter2pw",
		"FULL": "https://api.example.com/sse?apikey=abcdef123456", "GH_TOKEN": "tok-0123456789",
		"HOME": "/home/me", "OPENAI": "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaa", "H": "k3y-value-123456",
		"HDRV": "HdrValue5151", "CONNPW": "ConnPassw0rd2828", "DBU": "DbUserTok3n44", "DIR": "/srv/data",
		"CONNV": "Server=x;Password=ConnPassw0rd2929",
	}
	cfg := mustParse(t, `
servers:
  query:
    url: https://${HOST}/mcp?key=${K}
  userinfo:
    url: https://${USERPW}@${HOST}/mcp
  whole:
    url: ${FULL}
  prefixname:
    url: https://${HOST}/mcp?k=${H}
  local:
    command: server
    args: ["--token=${GH_TOKEN}", "--root", "${HOME}/projects", "${OPENAI}", "-H", "X-Api-Key: ${HDRV}",
      "--conn", "Server=x;Password=${CONNPW}", "postgres://${DBU}@db/x", "--data=${DIR}", "--conn", "${CONNV}"]
`, vars)
	got := map[string]bool{}
	for _, s := range cfg.Secrets {
		got[s.Var] = true
	}
	want := map[string]bool{"K": true, "USERPW": true, "FULL": true, "GH_TOKEN": true, "OPENAI": true, "H": true,
		"HDRV": true, "CONNPW": true, "DBU": true, "CONNV": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("secrets %v; want %v (not HOST, not HOME, not DIR)", got, want)
	}
	if r := Redact(`Post "https://mcp.example.com/mcp?key=topsecretkey12345": EOF`, cfg.Secrets); r != `Post "https://mcp.example.com/mcp?key=[redacted:K]": EOF` {
		t.Errorf("an error quoting the url reads %q", r)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		vars map[string]string
		line int
		want []string // all in one ConfigError's message
	}{
		// Unknown keys, at every level.
		{"unknown_top_level_key", "survers:\n  a: {command: x}\n", nil, 1,
			[]string{`unknown key "survers"`, `did you mean "servers"`, "surface, servers, skills"}},
		{"unknown_surface_key", "surface:\n  reveal: list\n  revael: call\n", nil, 3,
			[]string{`unknown key "revael" in surface`, `did you mean "reveal"`, "check the spelling"}},
		{"unknown_server_key", "servers:\n  gh:\n    comand: npx\n", nil, 3,
			[]string{`unknown key "comand" in servers.gh`, `did you mean "command"`, "a server entry takes command, args"}},
		{"unknown_server_key_flow_style", "servers: {gh: {command: x, timout: 3s}}\n", nil, 1,
			[]string{`unknown key "timout" in servers.gh`, `did you mean "timeout"`}},
		{"unknown_skills_key", "skills:\n  dir: [x]\n", nil, 2,
			[]string{`unknown key "dir" in skills`, `did you mean "dirs"`}},
		{"unknown_key_nothing_close", "servers:\n  gh:\n    command: x\n    zzzzzz: 1\n", nil, 4,
			[]string{`unknown key "zzzzzz" in servers.gh`, "command, args, env, cwd, url, transport, headers, prefix, keywords, timeout"}},

		// Tool names outside servers: a server must be able to offer them.
		{"always_on_names_no_server", "servers:\n  example: {command: x}\nsurface:\n  always_on: [example__time, exmaple__notes]\n", nil, 4,
			[]string{`surface.always_on: "exmaple__notes" names no configured server`, "server__tool"}},
		{"slash_tools_names_no_server", "servers:\n  example: {command: x}\nslash:\n  r:\n    description: R.\n    tools: [nosuch__x]\n", nil, 6,
			[]string{`slash.r.tools: "nosuch__x" names no configured server`}},
		{"slash_gated_always_on", "servers:\n  example: {command: x}\nsurface:\n  always_on: [example__fix]\nslash_gated: [example__fix]\nslash:\n  fix:\n    description: F.\n    tools: [example__fix]\n", nil, 4,
			[]string{"surface.always_on: example__fix is slash-gated", "/fix", "cannot be always on too"}},

		// Values of the wrong type.
		{"timeout_not_a_duration", "servers:\n  gh:\n    command: x\n    timeout: \"abc\"\n", nil, 4,
			[]string{"servers.gh.timeout must be a duration", "like 30s", `not "abc"`}},
		{"timeout_without_unit", "servers:\n  gh:\n    command: x\n    timeout: 30\n", nil, 4,
			[]string{"servers.gh.timeout must be a duration with a unit", `not "30"`}},
		{"args_not_a_list", "servers:\n  gh:\n    command: x\n    args: 5\n", nil, 4,
			[]string{"servers.gh.args must be a list", "[a, b]", `not "5"`}},
		{"arg_is_a_list", "servers:\n  gh:\n    command: x\n    args: [a, [b]]\n", nil, 4,
			[]string{"servers.gh.args[1] must be a single text value", "not a list"}},
		{"env_not_a_mapping", "servers:\n  gh:\n    command: x\n    env: [A=1]\n", nil, 4,
			[]string{"servers.gh.env must be a mapping", "{NAME: value}", "not a list"}},
		{"bind_turns_not_a_number", "surface:\n  bind_turns: three\n", nil, 2,
			[]string{"surface.bind_turns must be a whole number", `not "three"`}},
		{"servers_is_a_list", "servers:\n  - gh\n", nil, 2,
			[]string{"servers must be a mapping of server names", "not a list"}},
		{"entry_not_indented", "servers:\n  gh:\n  command: x\n", nil, 3,
			[]string{"servers.command must be a server entry", "indented under the server's name"}},
		{"file_is_a_list", "- a\n", nil, 1,
			[]string{"the file must be a mapping with surface, servers"}},
		{"duplicate_server", "servers:\n  gh: {command: x}\n  gh: {command: y}\n", nil, 3,
			[]string{`key "gh" appears twice`, "first at line 2", "keep one"}},
		// yaml.v3 puts a syntax error where the unclosed construct starts
		// (here one line early); the message says to look from there down.
		{"not_yaml", "servers:\n  gh: {command: x\n", nil, 1,
			[]string{"not valid YAML", "did not find expected", "check the indentation", "from this line down"}},
		{"tab_indentation", "servers:\n\tgh: {command: x}\n", nil, 2,
			[]string{"not valid YAML", "spaces, not tabs"}},

		// Entries that make no sense.
		{"empty_entry", "servers:\n  gh:\n", nil, 2,
			[]string{"servers.gh: the entry is empty", "give it a command", "or a url"}},
		{"neither_command_nor_url", "servers:\n  gh:\n    keywords: [x]\n", nil, 2,
			[]string{"servers.gh: give it a command (a local server) or a url (a remote one)"}},
		{"both_command_and_url", "servers:\n  gh:\n    command: x\n    url: https://h/mcp\n", nil, 2,
			[]string{"servers.gh: give either command", "not both"}},
		{"bad_transport_for_url", "servers:\n  gh:\n    url: https://h/mcp\n    transport: websocket\n", nil, 4,
			[]string{`servers.gh.transport: "websocket" is not a transport`, "use http or sse"}},
		{"transport_on_a_command", "servers:\n  gh:\n    command: x\n    transport: http\n", nil, 4,
			[]string{"servers.gh.transport", "speaks stdio", "remove transport or use url"}},
		{"headers_on_stdio", "servers:\n  gh:\n    command: x\n    headers: {A: b}\n", nil, 4,
			[]string{"servers.gh.headers: headers are for remote servers", "use env"}},
		{"args_on_url", "servers:\n  gh:\n    url: https://h/mcp\n    args: [x]\n", nil, 2,
			[]string{"servers.gh: args, env, env_passthrough and cwd are for local servers", "takes headers"}},
		{"url_without_scheme", "servers:\n  gh:\n    url: mcp.example.com/mcp\n", nil, 3,
			[]string{"servers.gh.url", "must start with http:// or https://"}},
		{"bad_prefix_chars", "servers:\n  gh:\n    command: x\n    prefix: git.hub\n", nil, 4,
			[]string{`servers.gh.prefix: "git.hub" may only use letters, digits, '_' and '-'`}},
		{"bad_server_name", "servers:\n  my.server:\n    command: x\n", nil, 2,
			[]string{"servers.my.server: a server name may only use letters, digits"}},
		{"same_prefix_twice", "servers:\n  gh:\n    command: x\n  other:\n    command: y\n    prefix: gh\n", nil, 4,
			[]string{"servers.other", `prefix "gh" is already used by server "gh"`, "give one of them another prefix"}},
		{"negative_timeout", "servers:\n  gh:\n    command: x\n    timeout: -5s\n", nil, 4,
			[]string{"servers.gh.timeout: must be positive, like 30s or 2m"}},
		// yaml.v3 v3.0.1 panics on this; ParseConfig must not.
		{"yaml_reader_panics", "servers:\n  a: &x {0}\n  b: {<<, *x}\n", nil, 0,
			[]string{"the YAML reader failed on this file", "simplify its anchors, aliases and merge keys"}},
		{"merge_key_for_servers", "servers:\n  <<: {gh: {command: x}}\n", nil, 2,
			[]string{"merge key (<<)", "write each server out"}},

		// Variables.
		{"not_a_variable_name", "servers:\n  gh:\n    command: ${1X}\n", nil, 3,
			[]string{`"${1X}" is not a variable reference`, "write ${NAME}"}},
		{"unclosed_variable", "servers:\n  gh:\n    command: x\n    env:\n      TOKEN: ${GH_TOKEN\n", nil, 5,
			[]string{"servers.gh.env.TOKEN", "a ${ is never closed", "write ${NAME}", "$${"}},
		{"command_expands_to_nothing", "servers:\n  gh:\n    command: ${EMPTY}\n", map[string]string{"EMPTY": ""}, 3,
			[]string{"servers.gh.command", "expands to nothing", "set the variable"}},

		// Surface bounds.
		{"bad_reveal", "surface:\n  reveal: sometimes\n", nil, 2,
			[]string{`surface.reveal: "sometimes" is not a reveal mode`, "use auto, list, call or direct"}},
		{"negative_bind_turns", "surface:\n  bind_turns: -1\n", nil, 2,
			[]string{"surface.bind_turns: -1 is too small; use at least 1"}},
		{"negative_max_bound", "surface:\n  max_bound: -3\n", nil, 2,
			[]string{"surface.max_bound: -3 is too small; use at least 1"}},
		{"max_name_len_too_small", "surface:\n  max_name_len: 8\n", nil, 2,
			[]string{"surface.max_name_len: 8 is too small; use at least 16"}},
		{"max_result_bytes_too_small", "surface:\n  max_result_bytes: 100\n", nil, 2,
			[]string{"surface.max_result_bytes: 100 is too small; use at least 1024"}},
		{"negative_turn_idle", "surface:\n  turn_idle: -1s\n", nil, 2,
			[]string{"surface.turn_idle: must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig("conf/test.yaml", []byte(tc.yaml), testLookup(tc.vars))
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("a config came back with the error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("err %v does not wrap ErrInvalidConfig", err)
			}
			ces := configErrors(err)
			if len(ces) == 0 {
				t.Fatalf("err %v holds no *ConfigError", err)
			}
			for _, ce := range ces {
				if ce.File != "conf/test.yaml" {
					t.Errorf("file %q in %v", ce.File, ce)
				}
			}
			for _, ce := range ces {
				if ce.Line != tc.line {
					continue
				}
				missing := ""
				for _, w := range tc.want {
					if !strings.Contains(ce.Msg, w) {
						missing = w
					}
				}
				if missing == "" {
					// The text a person reads leads with file:line.
					prefix := "conf/test.yaml: "
					if tc.line > 0 {
						prefix = "conf/test.yaml:" + strconv.Itoa(tc.line) + ": "
					}
					if !strings.HasPrefix(ce.Error(), prefix) || !strings.Contains(err.Error(), ce.Error()) {
						t.Errorf("error text %q; want it to start with %q", ce.Error(), prefix)
					}
					return
				}
			}
			t.Errorf("no error at line %d saying %q; got:\n%v", tc.line, tc.want, err)
		})
	}
}

func TestConfigReportsEveryError(t *testing.T) {
	_, err := ParseConfig("test.yaml", []byte(`
surface:
  bind_turns: -2
servers:
  a:
    command: ${1NOPE}
  b:
    url: ftp://x
  c:
    prefix: a
    command: x
`), testLookup(nil))
	lines := map[int]bool{}
	for _, ce := range configErrors(err) {
		lines[ce.Line] = true
	}
	for _, l := range []int{3, 6, 8, 9} {
		if !lines[l] {
			t.Errorf("no error at line %d; got:\n%v", l, err)
		}
	}
}

func TestConfigTypeErrorsAreAllReported(t *testing.T) {
	_, err := ParseConfig("test.yaml", []byte("servers:\n  a:\n    command: x\n    timeout: soon\n    comand: y\n"), testLookup(nil))
	ces := configErrors(err)
	if len(ces) != 2 || ces[0].Line != 4 || ces[1].Line != 5 {
		t.Errorf("errors %v; want one at line 4 (timeout) and one at line 5 (comand)", err)
	}
}

// FuzzParseConfig feeds ParseConfig arbitrary bytes: it never panics, and it
// returns either a valid Config or an error that wraps ErrInvalidConfig and
// is made only of *ConfigErrors pointing into the file.
func FuzzParseConfig(f *testing.F) {
	if shipped, err := os.ReadFile(filepath.Join("..", "servers.yaml")); err == nil {
		f.Add(shipped)
	}
	for _, seed := range []string{
		"",
		"servers:\n  a: {command: x, args: [\"${HOME}\"], env: {T: \"${TOKEN}\"}}\n",
		"servers:\n  r: {url: \"https://${HOST}/mcp\", transport: sse, headers: {A: \"Bearer ${TOKEN}\"}}\n",
		"surface: {reveal: call, bind_turns: -1, max_name_len: 8, turn_idle: 1s}\n",
		"servers:\n  a: &x {command: x}\n  b: *x\n  c: {<<: *x, prefix: \"\"}\n",
		"servers:\n  a:\n    comand: x\n    timeout: abc\n",
		"servers: {a: {command: $$${EMPTY}}}\n",
		"servers:\n  <<: {a: {command: x}}\n",
		"fence: {x: 1}\npolicy: [1]\n",
		"- a\n",
		"servers:\n\tgh: {command: x\n",
		"servers:\n  a: {command: x, args: [--password, lit-pw-1234, \"--api-key=${TOKEN}\"], env: {\"a]b\": ghp_0123456789abcdefghijABCDEFGHIJklmnop}, env_passthrough: [AWS_*], path_base: ~/p}\n",
		"servers:\n  r: {url: \"https://${HOST}/${TOKEN}/sse\", headers: {X-Api-Key: literal-key}, path_base: roots}\n",
	} {
		f.Add([]byte(seed))
	}
	lookup := testLookup(map[string]string{"HOME": "/home/me", "TOKEN": "secret-value", "HOST": "h", "EMPTY": ""})
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseConfig("fuzz.yaml", b, lookup)
		if err != nil {
			if cfg != nil {
				t.Fatalf("config and error both returned: %v", err)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error does not wrap ErrInvalidConfig: %v", err)
			}
			ces := configErrors(err)
			if len(ces) == 0 {
				t.Fatalf("error holds no *ConfigError: %v", err)
			}
			// yaml.v3 breaks lines at \n, \r, \r\n, NEL, LS and PS; a
			// line number may point one past the last.
			lines := 2
			for _, br := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
				lines += strings.Count(string(b), br)
			}
			for _, ce := range ces {
				if ce.Msg == "" || ce.File != "fuzz.yaml" || ce.Line < 0 || ce.Line > lines {
					t.Fatalf("bad ConfigError %#v (file has %d lines)", ce, lines)
				}
			}
			return
		}
		checkValid(t, cfg)
	})
}

// checkValid checks what every Config ParseConfig returns promises.
func checkValid(t *testing.T, cfg *Config) {
	t.Helper()
	s := cfg.Surface
	switch s.Reveal {
	case RevealAuto, RevealList, RevealCall, RevealDirect:
	default:
		t.Fatalf("reveal %q", s.Reveal)
	}
	if s.BindTurns < 1 || s.MaxBound < 1 || s.MaxNameLen < 16 || s.TurnIdle <= 0 || s.MaxResultBytes < 1024 {
		t.Fatalf("surface out of bounds: %+v", s)
	}
	names, prefixes := map[string]bool{}, map[string]bool{}
	for _, srv := range cfg.Servers {
		if !nameRE.MatchString(srv.Name) || names[srv.Name] {
			t.Fatalf("server name %q invalid or repeated", srv.Name)
		}
		names[srv.Name] = true
		if srv.Prefix != "" {
			if !nameRE.MatchString(srv.Prefix) || prefixes[srv.Prefix] {
				t.Fatalf("prefix %q invalid or repeated", srv.Prefix)
			}
			prefixes[srv.Prefix] = true
		}
		if srv.Timeout <= 0 || srv.Line < 1 {
			t.Fatalf("server %+v", srv)
		}
		switch srv.Transport {
		case TransportStdio:
			if strings.TrimSpace(srv.Command) == "" || srv.URL != "" || len(srv.Headers) > 0 {
				t.Fatalf("stdio server %+v", srv)
			}
		case TransportHTTP, TransportSSE:
			if srv.Command != "" || len(srv.Args) > 0 || len(srv.Env) > 0 || srv.Cwd != "" ||
				!(strings.HasPrefix(srv.URL, "http://") || strings.HasPrefix(srv.URL, "https://")) {
				t.Fatalf("remote server %+v", srv)
			}
		default:
			t.Fatalf("transport %q", srv.Transport)
		}
	}
	for _, sec := range cfg.Secrets {
		if sec.Value == "" || !labelRE.MatchString(sec.Var) {
			t.Fatalf("secret %+v", sec)
		}
	}
	for _, srv := range cfg.Servers {
		if pb := srv.PathBase; pb != "" && pb != PathBaseRoots && pb != PathBaseNone && pb != PathBaseCwd && (!filepath.IsAbs(pb) || filepath.Clean(pb) != pb) {
			t.Fatalf("server %s: path_base %q", srv.Name, pb)
		}
		if srv.Transport != TransportStdio && (len(srv.EnvPassthrough) > 0 || srv.Home() != "") {
			t.Fatalf("remote server %s: env_passthrough %q, home %q", srv.Name, srv.EnvPassthrough, srv.Home())
		}
	}
}

func TestDecodeSections(t *testing.T) {
	type sections struct {
		Fence struct {
			AllowedDirs []string `yaml:"allowed_dirs"`
		} `yaml:"fence"`
		Rest map[string]yaml.Node `yaml:",inline"`
	}
	t.Run("decodes_the_owners_section", func(t *testing.T) {
		cfg := mustParse(t, "fence:\n  allowed_dirs: [/tmp, /srv]\nservers:\n  a: {command: x}\n", nil)
		var v sections
		if err := cfg.DecodeSections(&v); err != nil {
			t.Fatal(err)
		}
		if strings.Join(v.Fence.AllowedDirs, ",") != "/tmp,/srv" {
			t.Errorf("fence %+v", v.Fence)
		}
	})
	t.Run("unknown_key_in_a_section", func(t *testing.T) {
		cfg := mustParse(t, "servers: {}\nfence:\n  allowed_dir: [/tmp]\n", nil)
		err := cfg.DecodeSections(&sections{})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `unknown key "allowed_dir"`) || !strings.Contains(err.Error(), ":3") {
			t.Errorf("err %v; want ErrInvalidConfig naming allowed_dir at line 3", err)
		}
	})
	t.Run("yaml_reader_panic_is_an_error", func(t *testing.T) {
		// yaml.v3 v3.0.1 panics merging a mapping into a struct here.
		cfg := mustParse(t, "policy:\n  rules: &x {0}\n  other: {<<, *x}\n", nil)
		var v struct {
			Policy struct {
				Rules map[string]string  `yaml:"rules"`
				Other struct{ A string } `yaml:"other"`
			} `yaml:"policy"`
		}
		err := cfg.DecodeSections(&v)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "simplify its anchors") {
			t.Errorf("err %v", err)
		}
	})
}

func TestConfigToolsDefaultAndWritten(t *testing.T) {
	cfg := mustParse(t, "servers:\n  gh:\n    command: npx\n    env: {TOKEN: \"${TOK}\"}\n    tools_default: off\n", map[string]string{"TOK": "s3cret"})
	s, _ := cfg.Server("gh")
	if !s.ToolsOff || s.Env["TOKEN"] != "s3cret" || s.Written.Env["TOKEN"] != "${TOK}" {
		t.Errorf("server %+v", s)
	}
	_, err := ParseConfig("servers.yaml", []byte("servers:\n  gh:\n    command: npx\n    tools_default: false\n"), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), `servers.yaml:4: servers.gh.tools_default: "false" is not on or off`) {
		t.Errorf("tools_default: false: %v", err)
	}
}

// TestShortenedNamesInConfigAreAccepted: a name ExposedName shortened (its
// prefix cut) may be named in always_on.
func TestShortenedNamesInConfigAreAccepted(t *testing.T) {
	name := ExposedName("github_enterprise_cloud_europe_west", "create_issue_with_many_lab_extra_words_here", 64)
	mustParse(t, "servers:\n  github_enterprise_cloud_europe_west: {command: x}\nsurface:\n  always_on: ["+name+"]\n", nil)
}

// TestUnsetVariableDownsOnlyItsServer is issue 17's problem 3: a ${VAR}
// that is not set makes its server unavailable, with the file, line, key
// and what to do, and leaves the file and every other server alone.
func TestUnsetVariableDownsOnlyItsServer(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"env", "servers:\n  gh:\n    command: x\n    env:\n      A: b\n      TOKEN: ${GH_TOKEN}\n",
			[]string{"test.yaml:6: servers.gh.env.TOKEN", "environment variable GH_TOKEN is not set", `a host's "env" block`}},
		{"args", "servers:\n  gh:\n    command: x\n    args:\n      - --dir=${WORKDIR}\n", []string{"servers.gh.args", "WORKDIR is not set"}},
		{"header", "servers:\n  gh:\n    url: https://h/mcp\n    headers:\n      Authorization: Bearer ${TOK}\n", []string{"test.yaml:5: servers.gh.headers.Authorization", "TOK is not set"}},
		{"url", "servers:\n  gh:\n    url: ${BASE}/mcp\n", []string{"test.yaml:3: servers.gh.url", "BASE is not set"}},
		{"path_base", "servers:\n  gh:\n    command: x\n    path_base: ${NOPE}\n", []string{"servers.gh.path_base", "NOPE is not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig("conf/test.yaml", []byte(tc.yaml+"  other:\n    command: y\n"), testLookup(nil))
			if err != nil {
				t.Fatalf("the whole file was refused: %v", err)
			}
			gh, _ := cfg.Server("gh")
			for _, w := range tc.want {
				if !strings.Contains(gh.Unavailable, w) {
					t.Errorf("Unavailable = %q; want it to say %q", gh.Unavailable, w)
				}
			}
			if other, _ := cfg.Server("other"); other.Unavailable != "" {
				t.Errorf("other server unavailable: %q", other.Unavailable)
			}
		})
	}
	// A reference that is malformed is still a fault of the file.
	if _, err := ParseConfig("conf/test.yaml", []byte("servers:\n  gh:\n    command: x\n    env: {T: \"${A} ${B\"}\n"), testLookup(nil)); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "never closed") {
		t.Errorf("err = %v; want the unclosed ${ refused", err)
	}
}

// TestSurfaceEncodesAsWritten: the surface prints (config effective, in
// JSON and YAML) with the file's keys and durations as the file takes
// them, and what it prints reads back as the same surface.
func TestSurfaceEncodesAsWritten(t *testing.T) {
	s := mustParse(t, "surface:\n  always_on: [a__b]\n  turn_idle: 1m30s\n  search_wait: 0s\nservers:\n  a: {command: x}\n", nil).Surface
	j, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"reveal":"auto"`, `"always_on":["a__b"]`, `"turn_idle":"1m30s"`, `"search_wait":"0s"`, `"max_result_bytes":65536`} {
		if !strings.Contains(string(j), want) {
			t.Errorf("JSON %s lacks %s", j, want)
		}
	}
	y, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, "surface:\n"+indent(string(y))+"servers:\n  a: {command: x}\n", nil).Surface
	if !reflect.DeepEqual(back, s) {
		t.Errorf("YAML\n%s\nreads back as %+v; want %+v", y, back, s)
	}
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "")
}

// verdictLike reads itself from its text, as gate.Verdict does.
type verdictLike int

func (v *verdictLike) UnmarshalText(b []byte) error {
	if string(b) != "allow" {
		return errors.New(strconv.Quote(string(b)) + " is not allow")
	}
	*v = 1
	return nil
}

// TestDecodeSectionsTypeSaysWhatIsWrong: a section value refused by a type
// that reads its own text is reported at its line and key with the type's
// words, not as a failure of the YAML reader.
func TestDecodeSectionsTypeSaysWhatIsWrong(t *testing.T) {
	cfg := mustParse(t, "servers: {}\npolicy:\n  verdicts:\n    read: allow\n    write: maybe\n", nil)
	var v struct {
		Policy struct {
			Verdicts map[string]verdictLike `yaml:"verdicts"`
		} `yaml:"policy"`
		Rest map[string]yaml.Node `yaml:",inline"`
	}
	err := cfg.DecodeSections(&v)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `test.yaml:5: policy.verdicts.write: "maybe" is not allow`) || strings.Contains(err.Error(), "YAML reader") {
		t.Errorf("err = %v; want line 5, the key and the type's own words", err)
	}
	cfg = mustParse(t, "servers: {}\npolicy:\n  verdicts: {read: allow}\n", nil)
	if err := cfg.DecodeSections(&v); err != nil || v.Policy.Verdicts["read"] != 1 {
		t.Errorf("a good value: %v, %v", err, v.Policy.Verdicts)
	}
}
