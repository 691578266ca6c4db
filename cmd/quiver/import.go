package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	quiver "github.com/quiver-mcp/quiver"
	"github.com/quiver-mcp/quiver/registry"
)

func importCmd() *command {
	return &command{
		summary: "turn a host's MCP server list (Claude Desktop, Claude Code, Cursor, VS Code) into servers.yaml entries",
		usage:   "import [--from HOST|PATH] [--write] [--config PATH]",
		help: `
Reads the MCP servers another host runs and prints the equivalent
servers.yaml entries. Understood: Claude Desktop's claude_desktop_config.json
and the "mcpServers" object of Claude Code (.mcp.json, ~/.claude.json,
project entries included), Cursor (mcp.json) and Windsurf; VS Code's
.vscode/mcp.json ("servers") and settings.json ("mcp": {"servers": ...}).
Comments and trailing commas (JSONC) are fine.

Secrets stay out of servers.yaml: a literal value in env or headers whose
key looks secret (TOKEN, KEY, SECRET, PASSWORD, AUTH, CREDENTIAL, COOKIE;
Authorization) becomes a ${VAR} reference, and a note on stderr says which
variables to set before starting quiver. Host-specific references become
quiver's: ${env:X} and ${X:-default} become ${X}, VS Code's ${input:id}
becomes ${ID}. An entry that runs quiver itself is skipped.

With --write the entries are added to servers.yaml (--config, else the one
quiver would use; a new one from the built-in default if there is none),
keeping the file's comments and layout; nothing is written if any name
already exists there. A running quiver picks the new servers up at once.

Flags:
  --from HOST|PATH  the host whose servers to import, from where it keeps
                    them on this system, or its file's path (default:
                    claude-desktop). Hosts and their files:
                    claude-desktop  claude_desktop_config.json: macOS
                        ~/Library/Application Support/Claude/, Windows
                        %AppData%\Claude\, Linux ~/.config/Claude/
                    claude-code     ~/.claude.json (its own servers and
                        every project's; $CLAUDE_CONFIG_DIR/.claude.json
                        first if set); a project's .mcp.json by path
                    cursor          ~/.cursor/mcp.json (Windows:
                        %USERPROFILE%\.cursor\mcp.json)
                    vscode          mcp.json, else settings.json, in Code's
                        user folder: macOS ~/Library/Application
                        Support/Code/User/, Windows %AppData%\Code\User\,
                        Linux ~/.config/Code/User/
  --write           add the entries to servers.yaml instead of printing them
  --config PATH     the servers.yaml to write to`,
		run: runImport,
	}
}

func runImport(ctx context.Context, e *env, args []string) error {
	var c common
	var from string
	var write bool
	fs := newFlags("import")
	c.register(fs)
	fs.StringVar(&from, "from", "claude-desktop", "the host (claude-desktop, claude-code, cursor, vscode) or its config file")
	fs.BoolVar(&write, "write", false, "merge into servers.yaml")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	from, imp, err := readHost(from, runtime.GOOS, e.getenv)
	if err != nil {
		return err
	}
	for _, n := range imp.notes {
		fmt.Fprintln(e.stderr, "note: "+n)
	}
	if len(imp.names) == 0 {
		return fmt.Errorf("%s: no MCP servers to import", from)
	}
	if !write {
		_, err := e.stdout.Write(imp.yaml())
		return err
	}
	path := c.serversPath(e)
	var base []byte
	if path == "" {
		path = filepath.Join(configHome(e), "quiver", "servers.yaml")
		base = quiver.DefaultConfig
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
	} else if base, err = os.ReadFile(path); errors.Is(err, os.ErrNotExist) {
		// The help promises a new file: start it with the imported servers
		// alone (no example server), in a folder made if need be.
		base = []byte("servers:\n")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	out, err := mergeServers(base, imp)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := writeFileAtomic(path, out, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "added %s to %s\n", strings.Join(imp.names, ", "), path)
	if len(imp.vars) > 0 {
		fmt.Fprintf(e.stdout, "set these where quiver starts (a host's \"env\" block, or quiver's environment); until then the servers that use them are down: %s\n", strings.Join(imp.vars, " "))
	}
	return nil
}

// readHost reads the servers of from, a host's name (see hostFiles) or a
// file's path, and says which file they came from. A host whose first
// file is missing, or holds no server list, is looked for in the next.
func readHost(from, goos string, getenv func(string) string) (string, *imported, error) {
	files := hostFiles(from, goos, getenv)
	if files == nil {
		src, err := os.ReadFile(from)
		if err != nil {
			return from, nil, fmt.Errorf("read %s: %w", from, err)
		}
		imp, err := importServers(filepath.Base(from), src)
		if err != nil {
			return from, nil, fmt.Errorf("%s: %w", from, err)
		}
		return from, imp, nil
	}
	var err error
	for _, f := range files {
		src, rerr := os.ReadFile(f)
		if rerr != nil {
			if err = rerr; errors.Is(rerr, fs.ErrNotExist) {
				continue
			}
			return f, nil, fmt.Errorf("read %s: %w", f, rerr)
		}
		imp, ierr := importServers(filepath.Base(f), src)
		if errors.Is(ierr, errNoServerList) {
			err = fmt.Errorf("%s: %w", f, ierr)
			continue
		}
		if ierr != nil {
			return f, nil, fmt.Errorf("%s: %w", f, ierr)
		}
		return f, imp, nil
	}
	return "", nil, fmt.Errorf("found no MCP servers of %s where it keeps them on this system (%s): %w; pass --from PATH",
		from, strings.Join(files, ", "), err)
}

// hostFiles lists where a host keeps its MCP servers on goos, best first,
// or nil if host names no host import knows. Each host keeps them in the
// same place on every OS but for the folder that place is in: the OS's
// config folder for the Electron apps (Claude Desktop, VS Code), the
// home folder for the others.
func hostFiles(host, goos string, getenv func(string) string) []string {
	home := homeDir(goos, getenv)
	switch host {
	case "claude-desktop":
		return []string{claudeDesktopConfig(goos, getenv)}
	case "claude-code":
		var files []string
		if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
			files = append(files, filepath.Join(d, ".claude.json"))
		}
		return append(files, filepath.Join(home, ".claude.json"))
	case "cursor":
		return []string{filepath.Join(home, ".cursor", "mcp.json")}
	case "vscode":
		user := filepath.Join(osConfigDir(goos, getenv), "Code", "User")
		return []string{filepath.Join(user, "mcp.json"), filepath.Join(user, "settings.json")}
	}
	return nil
}

// claudeDesktopConfig is Claude Desktop's configuration file on goos:
// in the "Claude" folder of the OS's config folder.
func claudeDesktopConfig(goos string, getenv func(string) string) string {
	return filepath.Join(osConfigDir(goos, getenv), "Claude", "claude_desktop_config.json")
}

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
	secret := func(where, key, s, varName string) string {
		v := val(where, s)
		if !registry.LooksSecret(key, v) || strings.Contains(v, "${") || v == "" {
			return v
		}
		if owner, taken := used[varName]; taken && owner != name {
			varName = strings.ToUpper(notVarRE.ReplaceAllString(name, "_")) + "_" + varName
		}
		used[varName] = name
		imp.vars = append(imp.vars, varName)
		imp.notes = append(imp.notes, fmt.Sprintf("server %q: %s %s held a literal secret in %s; it is now ${%s}: set %s in quiver's environment", name, where, key, file, varName, varName))
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
			for _, a := range hs.Args {
				seq.Content = append(seq.Content, str(val("args", a)))
			}
			add("args", seq)
		}
		if len(hs.Env) > 0 {
			env := &yaml.Node{Kind: yaml.MappingNode}
			for _, k := range sortedKeys(hs.Env) {
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
			for _, k := range sortedKeys(hs.Headers) {
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
	for _, k := range sortedKeys(map[string]string(flatten(q))) {
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

func flatten(q url.Values) map[string]string {
	out := map[string]string{}
	for k, v := range q {
		if len(v) > 0 {
			out[k] = v[0]
		}
	}
	return out
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

// yaml renders the entries as a servers: block.
func (imp *imported) yaml() []byte {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, n := range imp.names {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: n}, imp.entries[n])
	}
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "servers"}, m}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	_ = enc.Encode(doc)
	return b.Bytes()
}

// mergeServers adds the imported entries to a servers.yaml, as text, so
// that everything else in the file (comments, blank lines, layout) stays
// byte for byte; the result must parse and hold every new server.
func mergeServers(src []byte, imp *imported) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", registry.ErrInvalidConfig, err)
	}
	var root *yaml.Node
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		root = doc.Content[0]
	}
	block := imp.yaml()
	block = block[bytes.IndexByte(block, '\n')+1:] // without "servers:"
	lines := strings.SplitAfter(string(src), "\n")
	if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
		lines[len(lines)-1] += "\n"
	}
	insertAt, indent, found := len(lines), 2, false
	if root != nil {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value != "servers" {
				continue
			}
			found = true
			v := root.Content[i+1]
			var exist []string
			if v.Kind == yaml.MappingNode {
				if v.Style&yaml.FlowStyle != 0 && len(v.Content) > 0 {
					return nil, errors.New("servers: is written in flow style ({...}); write it as a block to import into it")
				}
				for j := 0; j+1 < len(v.Content); j += 2 {
					if slices.Contains(imp.names, v.Content[j].Value) {
						exist = append(exist, v.Content[j].Value)
					}
				}
				if len(v.Content) > 0 {
					indent = v.Content[0].Column - 1
				}
			}
			if len(exist) > 0 {
				return nil, fmt.Errorf("servers %s already exist; nothing was written (rename or remove them in one of the files)", strings.Join(exist, ", "))
			}
			if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle != 0 {
				// "servers: {}": make it a block.
				line := lines[root.Content[i].Line-1]
				lines[root.Content[i].Line-1] = strings.Replace(line, "{}", "", 1)
			}
			// Before the next top-level key, and before the comments and
			// blank lines just above it, which belong to that key.
			insertAt = len(lines)
			if i+2 < len(root.Content) {
				insertAt = root.Content[i+2].Line - 1
			}
			for insertAt > root.Content[i].Line {
				l := lines[insertAt-1]
				if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
					insertAt--
					continue
				}
				break
			}
		}
	}
	pad := strings.Repeat(" ", max(indent-2, 0))
	var add strings.Builder
	if !found {
		add.WriteString("\nservers:\n")
	}
	for _, l := range strings.SplitAfter(string(block), "\n") {
		if l != "" {
			add.WriteString(pad + l)
		}
	}
	out := strings.Join(lines[:insertAt], "") + add.String() + strings.Join(lines[insertAt:], "")
	// What was written must be a valid config with every new server.
	cfg, err := registry.ParseConfig("servers.yaml", []byte(out), func(string) (string, bool) { return "x", true })
	if err != nil {
		return nil, fmt.Errorf("the merged file would not be valid (nothing was written): %w", err)
	}
	for _, n := range imp.names {
		if _, ok := cfg.Server(n); !ok {
			return nil, fmt.Errorf("the merged file lost server %q (nothing was written)", n)
		}
	}
	return []byte(out), nil
}

// orderedKeys lists a JSON object's keys in the order written.
func orderedKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

// stripJSONC removes // and /* */ comments and trailing commas, outside
// strings, so that VS Code's and Cursor's files parse as JSON.
func stripJSONC(src []byte) []byte {
	var out []byte
	inStr, esc := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inStr {
			out = append(out, c)
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i += 2
			for i+1 < len(src) && !(src[i] == '*' && src[i+1] == '/') {
				i++
			}
			i++
		case c == '}' || c == ']':
			// Drop a comma that only whitespace separates from the close.
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out = append(out[:j], out[j+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
