package main

import (
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
		// merge only inserts lines.
		if !isSubsequence(strings.SplitAfter(src, "\n"), strings.SplitAfter(string(out), "\n")) {
			t.Fatalf("%s: the merge changed existing lines:\n%s", f.file, out)
		}
		if strings.Contains(string(out), "ghp_16C7") || strings.Contains(string(out), "lin_api") || strings.Contains(string(out), "abcdef") ||
			strings.Contains(string(out), "hunter2") || strings.Contains(string(out), "sk-proj-") {
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
		"desktop_files": func(s registry.Server) bool { return s.Args[3] == "price$5" },
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
	// Importing again refuses, and writes nothing.
	imp, _ := importServers("claude_desktop_config.json", []byte(desktopJSON))
	if _, err := mergeServers([]byte(src), imp); err == nil || !strings.Contains(err.Error(), "github, desktop_files, db, cursorsse already exist") {
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
