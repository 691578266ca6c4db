package main

// This file turns a host's server entries into servers.yaml entries:
// names made valid, host references made quiver's, literal secrets made
// ${VAR} references the user is told to set.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/registry"
)

// hostServer is one server entry as the hosts write it; each host uses a
// subset of these keys.
type hostServer struct {
	Type      string            `json:"type"`
	Command   string            `json:"command"`
	Args      []string          `json:"args"`
	Env       map[string]string `json:"env"`
	Cwd       string            `json:"cwd"`
	URL       string            `json:"url"`
	ServerURL string            `json:"serverUrl"` // Windsurf
	Headers   map[string]string `json:"headers"`
	EnvFile   string            `json:"envFile"`  // VS Code
	Disabled  bool              `json:"disabled"` // Claude Code, Cline, Windsurf
}

// imported is the result of reading a host's file.
type imported struct {
	names   []string
	entries map[string]*yaml.Node
	notes   []string
	vars    []string // variables the user must set
	// dirs are the folders the host let each server use (server-filesystem's
	// arguments), for fence.allowed_dirs.
	dirs map[string][]string
}

// errNoServerList is a host file without MCP servers: VS Code's
// settings.json before any were added, say.
var errNoServerList = errors.New(`found no "mcpServers", "servers" or "mcp.servers" object`)

// importServers reads the servers of a host's config file (JSON or JSONC).
func importServers(file string, src []byte) (*imported, error) {
	// Notepad on Windows may have saved the file with a byte order mark.
	clean := stripJSONC(bytes.TrimPrefix(src, []byte("\xef\xbb\xbf")))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(clean, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	var lists []json.RawMessage
	for _, k := range []string{"mcpServers", "servers"} {
		if raw, ok := top[k]; ok {
			lists = append(lists, raw)
		}
	}
	if raw, ok := top["mcp"]; ok { // VS Code settings.json
		var mcp map[string]json.RawMessage
		if json.Unmarshal(raw, &mcp) == nil && mcp["servers"] != nil {
			lists = append(lists, mcp["servers"])
		}
	}
	if raw, ok := top["projects"]; ok { // ~/.claude.json
		var projects map[string]map[string]json.RawMessage
		if json.Unmarshal(raw, &projects) == nil {
			for _, p := range orderedKeys(raw) {
				if s := projects[p]["mcpServers"]; s != nil {
					lists = append(lists, s)
				}
			}
		}
	}
	if len(lists) == 0 {
		return nil, errNoServerList
	}
	imp := &imported{entries: map[string]*yaml.Node{}}
	used := map[string]string{} // variable -> server that uses it
	for _, raw := range lists {
		var servers map[string]hostServer
		if err := json.Unmarshal(raw, &servers); err != nil {
			return nil, fmt.Errorf("servers: %w", err)
		}
		for _, orig := range orderedKeys(raw) {
			hs := servers[orig]
			name := serverName(orig)
			if name != orig {
				imp.notes = append(imp.notes, fmt.Sprintf("server %q is named %q here (names use letters, digits, _ and -)", orig, name))
			}
			if _, dup := imp.entries[name]; dup {
				imp.notes = append(imp.notes, fmt.Sprintf("server %q appears twice; the first one is kept", name))
				continue
			}
			if hs.Disabled {
				imp.notes = append(imp.notes, fmt.Sprintf("server %q is disabled in %s; skipped", orig, file))
				continue
			}
			if isQuiver(hs.Command) && slices.Contains(hs.Args, "serve") {
				imp.notes = append(imp.notes, fmt.Sprintf("server %q is quiver itself; skipped", orig))
				continue
			}
			n, err := imp.entry(file, name, hs, used)
			if err != nil {
				return nil, fmt.Errorf("server %q: %w", orig, err)
			}
			imp.entries[name] = n
			imp.names = append(imp.names, name)
		}
	}
	return imp, nil
}

// isQuiver reports whether a host's command runs quiver: quiver by name
// or path, with either separator (a Windows host's file may be read
// anywhere) and quiver.exe in any case.
func isQuiver(command string) bool {
	base := command[strings.LastIndexAny(command, `/\`)+1:]
	return strings.EqualFold(strings.TrimSuffix(strings.ToLower(base), ".exe"), "quiver")
}

var (
	hostRefRE = regexp.MustCompile(`\$\{([^}]*)\}`)
	notVarRE  = regexp.MustCompile(`[^A-Za-z0-9_]+`)
)

// entry builds the servers.yaml entry for one host server.
func (imp *imported) entry(file, name string, hs hostServer, used map[string]string) (*yaml.Node, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(k string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }
	val := func(where, s string) string { return imp.reference(name, where, s) }
	// variable registers a variable for a literal secret and returns its
	// name, unique among the servers imported.
	variable := func(where, key, varName string) string {
		if owner, taken := used[varName]; taken && owner != name {
			varName = strings.ToUpper(notVarRE.ReplaceAllString(name, "_")) + "_" + varName
		}
		used[varName] = name
		imp.vars = append(imp.vars, varName)
		imp.notes = append(imp.notes, fmt.Sprintf("server %q: %s %s held a literal secret in %s; it is now ${%s}: set %s in quiver's environment", name, where, key, file, varName, varName))
		return varName
	}
	secret := func(where, key, s, varName string) string {
		v := val(where, s)
		if !registry.LooksSecret(key, v) || strings.Contains(v, "${") || v == "" {
			return v
		}
		varName = variable(where, key, varName)
		// Keep an auth scheme ("Bearer ...") outside the variable.
		if scheme, _, ok := strings.Cut(s, " "); ok && strings.EqualFold(key, "authorization") && !strings.ContainsAny(scheme, "$") {
			return scheme + " ${" + varName + "}"
		}
		return "${" + varName + "}"
	}
	upper := func(s string) string { return strings.Trim(strings.ToUpper(notVarRE.ReplaceAllString(s, "_")), "_") }
	rawURL := hs.URL
	if rawURL == "" {
		rawURL = hs.ServerURL
	}
	switch {
	case hs.Command != "":
		add("command", str(val("command", hs.Command)))
		if len(hs.Args) > 0 {
			seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for i, a := range hs.Args {
				// A secret in an argument is as much in clear as one in
				// env: a flag's value (--api-key=…, --token …), a url's
				// password (postgresql://admin:…@host) or query parameter,
				// or a value shaped like a credential.
				prev := ""
				if i > 0 {
					prev = hs.Args[i-1]
				}
				seq.Content = append(seq.Content, str(imp.argSecrets(name, prev, a, val, upper, variable, used)))
			}
			add("args", seq)
			if dirs := filesystemFolders(hs.Command, hs.Args); len(dirs) > 0 {
				// server-filesystem may touch its folders and nothing else;
				// the host let the model work in them without asking, so
				// the fence does too, and a relative path is read against
				// them as the server reads it.
				add("path_base", str(registry.PathBaseRoots))
				if imp.dirs == nil {
					imp.dirs = map[string][]string{}
				}
				imp.dirs[name] = dirs
				imp.notes = append(imp.notes, fmt.Sprintf("server %q: its folders %s go to fence.allowed_dirs, as the host let the model use them; path_base: roots", name, strings.Join(dirs, ", ")))
			}
		}
		if len(hs.Env) > 0 {
			env := &yaml.Node{Kind: yaml.MappingNode}
			for _, k := range slices.Sorted(maps.Keys(hs.Env)) {
				env.Content = append(env.Content, str(k), str(secret("env", k, hs.Env[k], upper(k))))
			}
			add("env", env)
		}
		if hs.Cwd != "" {
			add("cwd", str(val("cwd", hs.Cwd)))
		}
		if hs.EnvFile != "" {
			imp.notes = append(imp.notes, fmt.Sprintf("server %q: envFile %s is not read by quiver; put what it sets into env (as ${VAR} for secrets)", name, hs.EnvFile))
		}
	case rawURL != "":
		u := imp.urlSecrets(name, rawURL, used)
		add("url", str(val("url", u)))
		typ := strings.ToLower(hs.Type)
		if p, err := url.Parse(rawURL); typ == "" && err == nil && strings.HasSuffix(strings.TrimSuffix(p.Path, "/"), "/sse") {
			typ = "sse" // Cursor and Windsurf give no type; their SSE servers end in /sse
		}
		switch typ {
		case "sse":
			add("transport", str("sse"))
		case "", "http", "streamable-http", "streamablehttp", "streamable_http":
		default:
			return nil, fmt.Errorf("type %q is not a remote transport quiver knows (http, sse)", hs.Type)
		}
		if len(hs.Headers) > 0 {
			h := &yaml.Node{Kind: yaml.MappingNode}
			for _, k := range slices.Sorted(maps.Keys(hs.Headers)) {
				v := upper(name) + "_" + upper(k)
				if strings.EqualFold(k, "authorization") {
					v = upper(name) + "_TOKEN"
				}
				h.Content = append(h.Content, str(k), str(secret("header", k, hs.Headers[k], v)))
			}
			add("headers", h)
		}
	default:
		return nil, errors.New("it has neither a command nor a url")
	}
	return m, nil
}

// allowedDirs are the folders of the servers imported, once each, for
// fence.allowed_dirs.
func (imp *imported) allowedDirs() []string {
	var out []string
	for _, n := range imp.names {
		for _, d := range imp.dirs[n] {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}

// resolveClashes settles the imported names that servers.yaml has
// already (existing): "skip" leaves those servers out, "rename" imports
// them as NAME_2 (or the next number free); "" leaves them, for
// mergeServers to refuse.
func (imp *imported) resolveClashes(existing []string, mode string) {
	taken := func(n string) bool { return slices.Contains(existing, n) || slices.Contains(imp.names, n) }
	var names []string
	for _, n := range imp.names {
		if !slices.Contains(existing, n) || mode == "" {
			names = append(names, n)
			continue
		}
		if mode == "skip" {
			imp.notes = append(imp.notes, fmt.Sprintf("server %q is in servers.yaml already; skipped (--skip)", n))
			delete(imp.entries, n)
			continue
		}
		to := n
		for i := 2; taken(to); i++ {
			to = fmt.Sprintf("%s_%d", n, i)
		}
		imp.notes = append(imp.notes, fmt.Sprintf("server %q is in servers.yaml already; this one is imported as %q (--rename)", n, to))
		imp.entries[to] = imp.entries[n]
		if d, ok := imp.dirs[n]; ok {
			imp.dirs[to] = d
		}
		delete(imp.entries, n)
		names = append(names, to)
	}
	imp.names = names
}

// argSecrets is one argument of a command as servers.yaml gets it, a
// literal secret in it made a ${VAR} reference: the value of a flag named
// like a secret (--api-key=X, or --token X with prev the flag), a url's
// password, a url's secret query parameter, or a value shaped like a
// credential. val rewrites the parts that stay; variable registers a
// variable.
func (imp *imported) argSecrets(server, prev, a string, val func(where, s string) string, upper func(string) string,
	variable func(where, key, varName string) string, used map[string]string) string {
	ref := func(v string) string { return "${" + v + "}" }
	if strings.Contains(a, "${") {
		return val("args", a)
	}
	// Which flags take a secret, and which values after them are one, as
	// servers.yaml's own reading decides (--keywords and --token-file take
	// none; a path after --key is not one).
	if _, ok := registry.SecretFlag(a); ok {
		if flag, v, ok := strings.Cut(a, "="); ok && registry.FlagSecret(v) {
			return val("args", flag+"=") + ref(variable("argument", flag, upper(server)+"_"+upper(flag)))
		}
	}
	if _, ok := registry.SecretFlag(prev); ok && !strings.Contains(prev, "=") && !strings.HasPrefix(a, "--") && registry.FlagSecret(a) {
		return ref(variable("argument", prev, upper(server)+"_"+upper(prev)))
	}
	if before, _, after, ok := registry.URLPassword(a); ok {
		return val("args", before) + ref(variable("argument", "url password", upper(server)+"_PASSWORD")) + val("args", after)
	}
	if u, err := url.Parse(a); err == nil && u.Scheme != "" && u.Host != "" && u.RawQuery != "" {
		if out := imp.urlSecrets(server, a, used); out != a {
			return val("args", out)
		}
	}
	if registry.LooksSecret("", a) {
		return ref(variable("argument", "value", upper(server)+"_TOKEN"))
	}
	return val("args", a)
}

// filesystemFolders are the folders a command running
// @modelcontextprotocol/server-filesystem gives it: its absolute (or ~)
// arguments after the package's name.
func filesystemFolders(command string, args []string) []string {
	at := -1
	for i, a := range append([]string{command}, args...) {
		if strings.Contains(a, "server-filesystem") {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	var dirs []string
	for _, a := range args[at:] {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "server-filesystem") {
			continue
		}
		if strings.HasPrefix(a, "/") || strings.HasPrefix(a, "~") || (len(a) > 2 && a[1] == ':' && (a[2] == '\\' || a[2] == '/')) || strings.HasPrefix(a, `\\`) {
			dirs = append(dirs, a)
		}
	}
	return dirs
}

// urlSecrets replaces secret-looking query parameters of a url with
// ${VAR} references.
func (imp *imported) urlSecrets(name, raw string, used map[string]string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw
	}
	q := u.Query()
	changed := false
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(q)) {
		v := q.Get(k)
		if registry.LooksSecret(k, v) && !strings.Contains(v, "${") {
			varName := strings.ToUpper(notVarRE.ReplaceAllString(name+"_"+k, "_"))
			used[varName] = name
			imp.vars = append(imp.vars, varName)
			imp.notes = append(imp.notes, fmt.Sprintf("server %q: url parameter %s held a literal secret; it is now ${%s}: set %s in quiver's environment", name, k, varName, varName))
			parts = append(parts, url.QueryEscape(k)+"=${"+varName+"}")
			changed = true
			continue
		}
		parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
	}
	if !changed {
		return raw
	}
	u.RawQuery = ""
	return u.String() + "?" + strings.Join(parts, "&")
}

// reference rewrites a host's ${...} references as quiver's and escapes
// every other $ (quiver reads $$ as $).
func (imp *imported) reference(server, where, s string) string {
	var b strings.Builder
	last := 0
	for _, m := range hostRefRE.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(strings.ReplaceAll(s[last:m[0]], "$", "$$"))
		inner := s[m[2]:m[3]]
		name := inner
		switch {
		case strings.HasPrefix(inner, "env:"):
			name = strings.TrimPrefix(inner, "env:")
		case strings.HasPrefix(inner, "input:"):
			name = strings.ToUpper(notVarRE.ReplaceAllString(strings.TrimPrefix(inner, "input:"), "_"))
			imp.vars = append(imp.vars, name)
			imp.notes = append(imp.notes, fmt.Sprintf("server %q: %s asked the user for ${%s}; quiver takes it from the environment as ${%s}", server, where, inner, name))
		case strings.Contains(inner, ":-"):
			name, _, _ = strings.Cut(inner, ":-")
			imp.notes = append(imp.notes, fmt.Sprintf("server %q: %s had a default (${%s}); quiver has none, so %s must be set", server, where, inner, name))
		case inner == "workspaceFolder" || inner == "userHome" || strings.Contains(inner, ":"):
			imp.notes = append(imp.notes, fmt.Sprintf("server %q: %s uses ${%s}, which only its host knows; replace it with a path", server, where, inner))
		}
		b.WriteString("${" + name + "}")
		last = m[1]
	}
	b.WriteString(strings.ReplaceAll(s[last:], "$", "$$"))
	return b.String()
}

func serverName(s string) string {
	n := strings.Trim(notNameRE.ReplaceAllString(strings.ToLower(s), "_"), "_")
	if n == "" {
		n = "server"
	}
	return n
}

var notNameRE = regexp.MustCompile(`[^a-z0-9_-]+`)
