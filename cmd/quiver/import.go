package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	quiver "github.com/quiver-mcp/quiver"
)

func importCmd() *command {
	return &command{
		summary: "turn a host's MCP server list (Claude Desktop, Claude Code, Cursor, Windsurf, VS Code) into servers.yaml entries",
		usage:   "import [--from HOST|PATH] [--write [--skip|--rename]] [--config PATH]",
		help: `
Reads the MCP servers another host runs and prints the equivalent
servers.yaml entries. Understood: Claude Desktop's claude_desktop_config.json
and the "mcpServers" object of Claude Code (.mcp.json, ~/.claude.json,
project entries included), Cursor (mcp.json) and Windsurf; VS Code's
.vscode/mcp.json ("servers") and settings.json ("mcp": {"servers": ...}).
Comments and trailing commas (JSONC) are fine.

Secrets stay out of servers.yaml: a literal value in env or headers whose
key looks secret (TOKEN, KEY, SECRET, PASSWORD, AUTH, CREDENTIAL, COOKIE;
Authorization) becomes a ${VAR} reference, and so does one in args (the
value of such a flag, --api-key=X or --token X; a url's password,
postgresql://admin:X@host; a url's secret parameter) and any value shaped
like a credential; a note on stderr says which variables to set before
starting quiver.

@modelcontextprotocol/server-filesystem's folders (its arguments) are
added to fence.allowed_dirs, as the host let the model use them without
asking, and the server gets path_base: roots. Host-specific references become
quiver's: ${env:X} and ${X:-default} become ${X}, VS Code's ${input:id}
becomes ${ID}. An entry that runs quiver itself is skipped.

With --write the entries are added to servers.yaml (--config, else the one
quiver would use; a new one from the built-in default if there is none),
keeping the file's comments and layout; nothing is written if any name
already exists there, unless --skip (leave those servers out) or --rename
(import them as NAME_2) says what to do. A running quiver picks the new servers up at once.

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
                    windsurf        ~/.codeium/windsurf/mcp_config.json
                        (Windows: %USERPROFILE%\.codeium\windsurf\)
                    vscode          mcp.json, else settings.json, in Code's
                        user folder: macOS ~/Library/Application
                        Support/Code/User/, Windows %AppData%\Code\User\,
                        Linux ~/.config/Code/User/
  --write           add the entries to servers.yaml instead of printing them
  --skip            with --write, leave out servers whose names it has
  --rename          with --write, import those as NAME_2 (the next free)
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
	fs.StringVar(&from, "from", "claude-desktop", "the host (claude-desktop, claude-code, cursor, windsurf, vscode) or its config file")
	fs.BoolVar(&write, "write", false, "merge into servers.yaml")
	var skip, rename bool
	fs.BoolVar(&skip, "skip", false, "leave out the servers servers.yaml has already")
	fs.BoolVar(&rename, "rename", false, "import the servers servers.yaml has already under new names")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if skip && rename {
		return fmt.Errorf("%w: --skip and --rename: choose one", errUsage)
	}
	if (skip || rename) && !write {
		return fmt.Errorf("%w: --skip and --rename say what --write does with a name servers.yaml has already; add --write", errUsage)
	}
	from, imp, err := readHost(from, runtime.GOOS, e.getenv)
	if err != nil {
		return err
	}
	if !write {
		for _, n := range imp.notes {
			fmt.Fprintln(e.stderr, "note: "+n)
		}
		if len(imp.names) == 0 {
			return fmt.Errorf("%s: no MCP servers to import", from)
		}
		_, err := e.stdout.Write(append(imp.yaml(), imp.fenceYAML()...))
		return err
	}
	path := c.serversPath(e)
	var base []byte
	if path == "" {
		path = filepath.Join(quiverConfigDir(e), "servers.yaml")
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
	mode := ""
	switch {
	case skip:
		mode = "skip"
	case rename:
		mode = "rename"
	}
	imp.resolveClashes(serverNames(base), mode)
	for _, n := range imp.notes {
		fmt.Fprintln(e.stderr, "note: "+n)
	}
	if len(imp.names) == 0 {
		return fmt.Errorf("%s: no MCP servers to import into %s", from, path)
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

// importHosts are the hosts hostFiles knows, for messages.
var importHosts = []string{"claude-desktop", "claude-code", "cursor", "windsurf", "vscode"}

// readHost reads the servers of from, a host's name (see hostFiles) or a
// file's path, and says which file they came from. A host whose first
// file is missing, or holds no server list, is looked for in the next.
func readHost(from, goos string, getenv func(string) string) (string, *imported, error) {
	files := hostFiles(from, goos, getenv)
	if files == nil {
		src, err := os.ReadFile(from)
		if errors.Is(err, fs.ErrNotExist) && !strings.ContainsAny(from, `/\.`) {
			return from, nil, fmt.Errorf("%q is neither a host import knows (%s) nor a file; name one of those hosts, or give the path of a host's config file",
				from, strings.Join(importHosts, ", "))
		}
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
	case "windsurf":
		return []string{filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")}
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
