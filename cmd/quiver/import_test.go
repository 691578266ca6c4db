package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/registry"
)

const desktopJSON = `{
  "globalShortcut": "",
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github@2025.4.8"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "LOG_LEVEL": "debug"}
    },
    "Desktop Files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "price$5"]
    },
    "quiver": {"command": "/Users/me/bin/quiver", "args": ["serve"]},
    "db": {"command": "db-mcp", "env": {"DATABASE_URL": "postgresql://admin:hunter2@db.internal/app", "OPENAI": "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaa"}},
    "postgres": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://admin:hunter2@localhost/app"]},
    "search cli": {"command": "search-mcp", "args": ["--api-key=sk-proj-bbbbbbbbbbbbbbbbbbbbbbbb", "--token", "lit-tok-5678", "--region", "eu"]},
    "paused": {"command": "paused-mcp", "disabled": true},
    "cursorsse": {"url": "https://sse.example.com/sse"}
  }
}`

const vscodeJSONC = `// .vscode/mcp.json
{
  "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
  "servers": {
    "search": {
      "type": "stdio", "command": "uvx", "args": ["mcp-search"],
      "env": {"SEARCH_API_KEY": "${input:api-key}", "HOME_DIR": "${env:HOME}"}, /* from the prompt */
    },
    "linear": {"type": "http", "url": "https://mcp.linear.app/mcp", "headers": {"Authorization": "Bearer lin_api_123456"}},
    "old": {"type": "sse", "url": "https://old.example.com/sse?token=abcdef"},
  },
}`

const commentedServers = `# my quiver config
surface:
  reveal: auto   # keep

servers:
    # local ones
    example:
        command: quiver
        args: [example-server]

    # filesystem:
    #   command: npx

# the fence comes last
fence:
  allowed_dirs: [~/projects]
`

func TestImportRoundTrips(t *testing.T) {
	env := map[string]string{
		"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
		"API_KEY":                      "k1", "HOME": "/home/me", "LINEAR_TOKEN": "lin_api_123456", "OLD_TOKEN": "abcdef",
		"DATABASE_URL": "postgresql://admin:hunter2@db.internal/app", "OPENAI": "sk-proj-aaaaaaaaaaaaaaaaaaaaaaaa",
		"POSTGRES_PASSWORD": "hunter2", "SEARCH_CLI_API_KEY": "sk-proj-bbbbbbbbbbbbbbbbbbbbbbbb", "SEARCH_CLI_TOKEN": "lit-tok-5678",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	src := commentedServers
	for _, f := range []struct{ file, text string }{{"claude_desktop_config.json", desktopJSON}, {"mcp.json", vscodeJSONC}} {
		imp, err := importServers(f.file, []byte(f.text))
		if err != nil {
			t.Fatalf("%s: %v", f.file, err)
		}
		out, err := mergeServers([]byte(src), imp)
		if err != nil {
			t.Fatalf("%s: merge: %v", f.file, err)
		}
		// Everything that was there is still there, byte for byte: the
		// merge only inserts lines, and adds server-filesystem's folders
		// to the fence's list.
		dirsLine := regexp.MustCompile(`(?m)^  allowed_dirs: .*\n`)
		if !isSubsequence(strings.SplitAfter(dirsLine.ReplaceAllString(src, ""), "\n"), strings.SplitAfter(dirsLine.ReplaceAllString(string(out), ""), "\n")) {
			t.Fatalf("%s: the merge changed existing lines:\n%s", f.file, out)
		}
		if strings.Contains(string(out), "ghp_16C7") || strings.Contains(string(out), "lin_api") || strings.Contains(string(out), "abcdef") ||
			strings.Contains(string(out), "hunter2") || strings.Contains(string(out), "sk-proj-") || strings.Contains(string(out), "lit-tok") {
			t.Fatalf("%s: a literal secret reached servers.yaml:\n%s", f.file, out)
		}
		src = string(out)
	}
	cfg, err := registry.ParseConfig("servers.yaml", []byte(src), lookup)
	if err != nil {
		t.Fatalf("merged config:\n%s\n%v", src, err)
	}
	want := map[string]func(s registry.Server) bool{
		"example": func(s registry.Server) bool { return s.Command == "quiver" },
		"github": func(s registry.Server) bool {
			return s.Command == "npx" && s.Args[1] == "@modelcontextprotocol/server-github@2025.4.8" &&
				s.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] == env["GITHUB_PERSONAL_ACCESS_TOKEN"] && s.Env["LOG_LEVEL"] == "debug" &&
				s.Written.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] == "${GITHUB_PERSONAL_ACCESS_TOKEN}"
		},
		"desktop_files": func(s registry.Server) bool { return s.Args[3] == "price$5" && s.PathBase == registry.PathBaseRoots },
		// Secrets in arguments (issue 29): a url's password, a flag's value.
		"postgres": func(s registry.Server) bool {
			return s.Written.Args[2] == "postgresql://admin:${POSTGRES_PASSWORD}@localhost/app" && s.Args[2] == "postgresql://admin:hunter2@localhost/app"
		},
		"search_cli": func(s registry.Server) bool {
			return strings.Join(s.Written.Args, " ") == "--api-key=${SEARCH_CLI_API_KEY} --token ${SEARCH_CLI_TOKEN} --region eu" &&
				strings.Join(s.Args, " ") == "--api-key=sk-proj-bbbbbbbbbbbbbbbbbbbbbbbb --token lit-tok-5678 --region eu"
		},
		// Secrets under names that do not say so, found by their shape.
		"db": func(s registry.Server) bool {
			return s.Written.Env["DATABASE_URL"] == "${DATABASE_URL}" && s.Written.Env["OPENAI"] == "${OPENAI}" && s.Env["OPENAI"] == env["OPENAI"]
		},
		"cursorsse": func(s registry.Server) bool { return s.Transport == "sse" },
		"search": func(s registry.Server) bool {
			return s.Command == "uvx" && s.Env["SEARCH_API_KEY"] == "k1" && s.Env["HOME_DIR"] == "/home/me"
		},
		"linear": func(s registry.Server) bool {
			return s.Transport == "http" && s.Headers["Authorization"] == "Bearer lin_api_123456" && s.Written.Headers["Authorization"] == "Bearer ${LINEAR_TOKEN}"
		},
		"old": func(s registry.Server) bool {
			return s.Transport == "sse" && s.URL == "https://old.example.com/sse?token=abcdef"
		},
	}
	if len(cfg.Servers) != len(want) {
		t.Errorf("servers: %d, want %d:\n%s", len(cfg.Servers), len(want), src)
	}
	for name, ok := range want {
		s, found := cfg.Server(name)
		if !found || !ok(s) {
			t.Errorf("server %s wrong or missing: %+v", name, s)
		}
	}
	// server-filesystem's folder joins the fence, once (issue 29).
	if !strings.Contains(src, "  allowed_dirs: [~/projects, \"/Users/me/Desktop\"]\n") {
		t.Errorf("the fence lacks server-filesystem's folder:\n%s", src)
	}
	// Importing again refuses, and writes nothing.
	imp, _ := importServers("claude_desktop_config.json", []byte(desktopJSON))
	if _, err := mergeServers([]byte(src), imp); err == nil || !strings.Contains(err.Error(), "github, desktop_files, db, postgres, search_cli, cursorsse already exist; nothing was written (--skip leaves them out, --rename imports them under new names)") {
		t.Errorf("second import: %v", err)
	}
}

func TestImportIntoFilesWithoutServers(t *testing.T) {
	imp, err := importServers("x.json", []byte(`{"mcpServers": {"a": {"url": "https://a.example/mcp"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"", "surface:\n  reveal: call\n", "servers: {}\n", "servers:\n"} {
		out, err := mergeServers([]byte(src), imp)
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if _, err := registry.ParseConfig("s.yaml", out, func(string) (string, bool) { return "", true }); err != nil {
			t.Errorf("%q -> %q: %v", src, out, err)
		}
	}
}

func isSubsequence(sub, of []string) bool {
	i := 0
	for _, l := range of {
		if i < len(sub) && sub[i] == l {
			i++
		}
	}
	return i == len(sub)
}

// TestImportHostFilesPerOS: import --from HOST looks where each host keeps
// its servers on each OS. The OS and environment are injected, so every
// case runs on every machine.
func TestImportHostFilesPerOS(t *testing.T) {
	j := filepath.Join
	mac := map[string]string{"HOME": "/Users/you", "XDG_CONFIG_HOME": "/ignored/on/macOS"}
	win := map[string]string{"USERPROFILE": `C:\Users\you`, "AppData": `C:\Users\you\AppData\Roaming`}
	linux := map[string]string{"HOME": "/home/you"}
	for _, tc := range []struct {
		host, goos string
		env        map[string]string
		want       []string
	}{
		{"claude-desktop", "darwin", mac, []string{j("/Users/you", "Library", "Application Support", "Claude", "claude_desktop_config.json")}},
		{"claude-desktop", "windows", win, []string{j(`C:\Users\you\AppData\Roaming`, "Claude", "claude_desktop_config.json")}},
		{"claude-desktop", "linux", linux, []string{j("/home/you", ".config", "Claude", "claude_desktop_config.json")}},
		{"claude-desktop", "linux", map[string]string{"HOME": "/home/you", "XDG_CONFIG_HOME": "/xdg"}, []string{j("/xdg", "Claude", "claude_desktop_config.json")}},
		{"claude-code", "darwin", mac, []string{j("/Users/you", ".claude.json")}},
		{"claude-code", "windows", win, []string{j(`C:\Users\you`, ".claude.json")}},
		{"claude-code", "linux", map[string]string{"HOME": "/home/you", "CLAUDE_CONFIG_DIR": "/cc"}, []string{j("/cc", ".claude.json"), j("/home/you", ".claude.json")}},
		{"cursor", "darwin", mac, []string{j("/Users/you", ".cursor", "mcp.json")}},
		{"cursor", "windows", win, []string{j(`C:\Users\you`, ".cursor", "mcp.json")}},
		{"windsurf", "linux", linux, []string{j("/home/you", ".codeium", "windsurf", "mcp_config.json")}},
		{"windsurf", "windows", win, []string{j(`C:\Users\you`, ".codeium", "windsurf", "mcp_config.json")}},
		{"vscode", "darwin", mac, []string{
			j("/Users/you", "Library", "Application Support", "Code", "User", "mcp.json"),
			j("/Users/you", "Library", "Application Support", "Code", "User", "settings.json")}},
		{"vscode", "windows", win, []string{
			j(`C:\Users\you\AppData\Roaming`, "Code", "User", "mcp.json"),
			j(`C:\Users\you\AppData\Roaming`, "Code", "User", "settings.json")}},
		{"vscode", "linux", linux, []string{
			j("/home/you", ".config", "Code", "User", "mcp.json"),
			j("/home/you", ".config", "Code", "User", "settings.json")}},
		{"servers.json", "linux", linux, nil}, // a path, not a host
	} {
		got := hostFiles(tc.host, tc.goos, func(k string) string { return tc.env[k] })
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s on %s: %q, want %q", tc.host, tc.goos, got, tc.want)
		}
	}
}

// TestImportReadsTheHostsFile: --from HOST reads the first of the host's
// files that holds servers, and says where it looked when none does.
func TestImportReadsTheHostsFile(t *testing.T) {
	home := t.TempDir()
	appData := filepath.Join(home, "AppData", "Roaming")
	env := map[string]string{"HOME": home, "USERPROFILE": home, "AppData": appData}
	getenv := func(k string) string { return env[k] }
	write := func(p, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	user := filepath.Join(appData, "Code", "User")

	// VS Code with a settings.json that has no servers and no mcp.json.
	write(filepath.Join(user, "settings.json"), `{"editor.fontSize": 14}`)
	_, _, err := readHost("vscode", "windows", getenv)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(user, "mcp.json")) || !strings.Contains(err.Error(), filepath.Join(user, "settings.json")) ||
		!strings.Contains(err.Error(), "--from PATH") {
		t.Errorf("vscode without servers: %v; want both files named and --from PATH suggested", err)
	}
	// Servers in settings.json ("mcp": {"servers": ...}), still no mcp.json.
	write(filepath.Join(user, "settings.json"), `{"editor.fontSize": 14, "mcp": {"servers": {"old": {"command": "old-mcp"}}}}`)
	if f, imp, err := readHost("vscode", "windows", getenv); err != nil || f != filepath.Join(user, "settings.json") || !slices.Equal(imp.names, []string{"old"}) {
		t.Errorf("vscode settings.json: %s %v %v", f, imp, err)
	}
	// mcp.json wins once it exists.
	write(filepath.Join(user, "mcp.json"), `{"servers": {"new": {"command": "new-mcp"}}}`)
	if f, imp, err := readHost("vscode", "windows", getenv); err != nil || f != filepath.Join(user, "mcp.json") || !slices.Equal(imp.names, []string{"new"}) {
		t.Errorf("vscode mcp.json: %s %v %v", f, imp, err)
	}

	// Claude Code: a CLAUDE_CONFIG_DIR without the file falls back to ~.
	env["CLAUDE_CONFIG_DIR"] = filepath.Join(home, "nowhere")
	write(filepath.Join(home, ".claude.json"), `{"mcpServers": {"a": {"command": "a-mcp"}},
		"projects": {"/p": {"mcpServers": {"b": {"type": "http", "url": "https://b.example/mcp"}}}}}`)
	if f, imp, err := readHost("claude-code", "linux", getenv); err != nil || f != filepath.Join(home, ".claude.json") || !slices.Equal(imp.names, []string{"a", "b"}) {
		t.Errorf("claude-code: %s %v %v", f, imp, err)
	}

	// Cursor, and Claude Desktop's file as Windows' Notepad saves it: a
	// byte order mark, CRLF, and quiver.exe itself, which is not imported.
	write(filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {"c": {"url": "https://c.example/sse"}}}`)
	if f, imp, err := readHost("cursor", "darwin", getenv); err != nil || f != filepath.Join(home, ".cursor", "mcp.json") || !slices.Equal(imp.names, []string{"c"}) {
		t.Errorf("cursor: %s %v %v", f, imp, err)
	}
	for _, h := range importHosts {
		if hostFiles(h, "linux", getenv) == nil {
			t.Errorf("host %q is named in messages but hostFiles does not know it", h)
		}
	}
	// A host's name misspelled is neither a host nor a file, and says so.
	if _, _, err := readHost("windsurff", "linux", getenv); err == nil || !strings.Contains(err.Error(), `"windsurff" is neither a host import knows (claude-desktop, claude-code, cursor, windsurf, vscode) nor a file`) {
		t.Errorf("misspelled host: %v", err)
	}
	// Windsurf: its remote servers by serverUrl.
	write(filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"), `{"mcpServers": {"w": {"serverUrl": "https://w.example/mcp"}}}`)
	if f, imp, err := readHost("windsurf", "linux", getenv); err != nil || f != filepath.Join(home, ".codeium", "windsurf", "mcp_config.json") || !slices.Equal(imp.names, []string{"w"}) {
		t.Errorf("windsurf: %s %v %v", f, imp, err)
	}
	write(filepath.Join(appData, "Claude", "claude_desktop_config.json"), "\xef\xbb\xbf{\r\n  \"mcpServers\": {\r\n"+
		`    "quiver": {"command": "C:\\Users\\you\\go\\bin\\QUIVER.EXE", "args": ["serve"]},`+"\r\n"+
		`    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "C:\\Users\\you\\Desktop"]}`+"\r\n  }\r\n}\r\n")
	f, imp, err := readHost("claude-desktop", "windows", getenv)
	if err != nil || f != filepath.Join(appData, "Claude", "claude_desktop_config.json") || !slices.Equal(imp.names, []string{"fs"}) {
		t.Fatalf("claude-desktop on Windows: %s %v %v", f, imp, err)
	}
	if !strings.Contains(strings.Join(imp.notes, "\n"), `server "quiver" is quiver itself; skipped`) {
		t.Errorf("notes %q; want quiver.exe skipped as quiver itself", imp.notes)
	}
	out, err := mergeServers(nil, imp)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := registry.ParseConfig("servers.yaml", out, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%s\n%v", out, err)
	}
	if s, _ := cfg.Server("fs"); len(s.Args) != 3 || s.Args[2] != `C:\Users\you\Desktop` {
		t.Errorf("fs args %q; want the Windows path as written", s.Args)
	}

	// A path is read as a path, and its error names it.
	if _, _, err := readHost(filepath.Join(home, "missing.json"), "linux", getenv); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing path: %v", err)
	}
}

// TestImportWriteCreatesTheNamedFile is issue 17's point 6: import
// --write --config new.yaml creates the file, as the help says, with the
// imported servers alone, and it parses.
func TestImportWriteCreatesTheNamedFile(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(host, []byte(`{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}`), 0o600)
	target := filepath.Join(dir, "cfg", "new.yaml")
	code, out, errOut := runEnv(noEnv, "import", "--from", host, "--write", "--config", target)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	cfg, err := registry.LoadConfig(target)
	if err != nil {
		t.Fatalf("the new file does not load: %v", err)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "memory" {
		t.Errorf("servers %+v; want memory alone", cfg.Servers)
	}
	if !strings.Contains(out, "added memory to "+target) {
		t.Errorf("output: %s", out)
	}
}

// TestMergeAllowedDirs: server-filesystem's folders join fence.allowed_dirs
// whatever shape the fence has, once each, and the file stays valid.
func TestMergeAllowedDirs(t *testing.T) {
	dirs := []string{"/srv/a", "~/b"}
	for _, tc := range []struct{ name, src, want string }{
		{"no fence", "servers:\n  x: {command: x}\n", "servers:\n  x: {command: x}\n\nfence:\n  allowed_dirs: [\"/srv/a\", \"~/b\"]\n"},
		{"empty fence", "fence:\nservers: {}\n", "fence:\n  allowed_dirs: [\"/srv/a\", \"~/b\"]\nservers: {}\n"},
		{"fence without the list", "fence:\n    outside_fence: ask\n", "fence:\n    allowed_dirs: [\"/srv/a\", \"~/b\"]\n    outside_fence: ask\n"},
		{"flow list", "fence:\n  allowed_dirs: [/srv/a]  # mine\n", "fence:\n  allowed_dirs: [/srv/a, \"~/b\"]  # mine\n"},
		{"empty flow list", "fence:\n  allowed_dirs: []\n", "fence:\n  allowed_dirs: [\"/srv/a\", \"~/b\"]\n"},
		{"block list", "fence:\n  allowed_dirs:\n    - /x\n  # after\n", "fence:\n  allowed_dirs:\n    - /x\n    - \"/srv/a\"\n    - \"~/b\"\n  # after\n"},
		{"all there", "fence:\n  allowed_dirs: [~/b, /srv/a]\n", "fence:\n  allowed_dirs: [~/b, /srv/a]\n"},
	} {
		out, err := mergeAllowedDirs([]byte(tc.src), dirs)
		if err != nil || string(out) != tc.want {
			t.Errorf("%s: %v\n got %q\nwant %q", tc.name, err, out, tc.want)
		}
	}
	if _, err := mergeAllowedDirs([]byte("fence: {allowed_dirs: [/x]}\n"), dirs); err == nil || !strings.Contains(err.Error(), "write it as one") {
		t.Errorf("a flow fence: %v", err)
	}
}

// TestImportNameClash: a name servers.yaml has already stops --write,
// which says how to go on; --skip leaves that server out, --rename
// imports it as NAME_2 (issue 29).
func TestImportNameClash(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(host, []byte(`{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
		"notes": {"command": "notes-mcp"}}}`), 0o600)
	base := "servers:\n  memory:\n    command: my-memory\n"
	for _, tc := range []struct {
		flag    string
		code    int
		servers []string
		say     string
	}{
		{"", exitFailure, []string{"memory"}, "servers memory already exist; nothing was written (--skip leaves them out, --rename imports them under new names)"},
		{"--skip", exitOK, []string{"memory", "notes"}, `note: server "memory" is in servers.yaml already; skipped (--skip)`},
		{"--rename", exitOK, []string{"memory", "memory_2", "notes"}, `note: server "memory" is in servers.yaml already; this one is imported as "memory_2" (--rename)`},
	} {
		target := filepath.Join(t.TempDir(), "servers.yaml")
		os.WriteFile(target, []byte(base), 0o600)
		args := []string{"import", "--from", host, "--write", "--config", target}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		code, out, errOut := runEnv(noEnv, args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.say) {
			t.Errorf("import %s: exit %d, want %d saying %q\n%s%s", tc.flag, code, tc.code, tc.say, out, errOut)
		}
		cfg, err := registry.LoadConfig(target)
		if err != nil {
			t.Fatalf("import %s: %v", tc.flag, err)
		}
		var names []string
		for _, s := range cfg.Servers {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.servers) {
			t.Errorf("import %s: servers %v, want %v", tc.flag, names, tc.servers)
		}
		if m, _ := cfg.Server("memory"); m.Command != "my-memory" {
			t.Errorf("import %s changed the server already there: %+v", tc.flag, m)
		}
	}
	if code, _, errOut := runEnv(noEnv, "import", "--from", host, "--skip"); code != exitUsage || !strings.Contains(errOut, "add --write") {
		t.Errorf("--skip without --write: exit %d\n%s", code, errOut)
	}
}
