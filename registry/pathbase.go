package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/quiver-mcp/quiver/internal/textdist"
)

// Home is the HOME the server's child sees, against which it expands ~:
// its env's HOME, else quiver's own HOME (which every child receives), else
// "" (and "" for a remote server, whose home quiver cannot know). On
// Windows USERPROFILE stands in for a missing HOME, as Node's os.homedir
// does.
func (s Server) Home() string { return s.home }

// RootDirs are the folders a PathBaseRoots server resolves relative paths
// against, as far as its command line says: the arguments that are
// absolute folders (or ~/… under Home) and exist now, cleaned, in order.
// The MCP roots a client gives the server come on top; they are the
// caller's to add. A remote server has none.
func (s Server) RootDirs() []string {
	if s.Transport != TransportStdio {
		return nil
	}
	var out []string
	for _, a := range s.Args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		dir := a
		if h, ok := expandTilde(a, s.home); ok {
			dir = h
		}
		if !filepath.IsAbs(dir) {
			continue
		}
		dir = filepath.Clean(dir)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			out = append(out, dir)
		}
	}
	return out
}

// childHome is the HOME a stdio child will see (Server.Home).
func childHome(env map[string]string, lookup func(string) (string, bool)) string {
	names := []string{"HOME"}
	if runtime.GOOS == "windows" {
		names = append(names, "USERPROFILE")
	}
	for _, n := range names {
		if v, ok := env[n]; ok {
			return v
		}
		if v, ok := lookup(n); ok {
			return v
		}
	}
	return ""
}

// expandTilde expands "~" and "~/…" (and "~\…" on Windows) under home; ok
// is false when p does not start so or home is "".
func expandTilde(p, home string) (string, bool) {
	if home == "" || !strings.HasPrefix(p, "~") {
		return "", false
	}
	rest := p[1:]
	if rest != "" && rest[0] != '/' && !(runtime.GOOS == "windows" && rest[0] == '\\') {
		return "", false
	}
	return filepath.Join(home, rest), true
}

// pathBase validates a path_base value into Server.PathBase: "roots", or
// a folder made absolute (~ under home, a relative one under the folder of
// the config file at configPath) and cleaned.
func pathBase(v, home, configPath string) (string, error) {
	switch {
	case v == PathBaseRoots, v == PathBaseNone, v == PathBaseCwd:
		return v, nil
	case nearKeyword(v) != "":
		// "root" meant roots far more often than a folder named root
		// beside servers.yaml; taken as a folder, it fences in silence
		// against the wrong place.
		return "", fmt.Errorf("%q is not a path_base keyword: did you mean %s? (a folder of that name beside servers.yaml is written ./%s)", v, nearKeyword(v), v)
	case strings.TrimSpace(v) == "":
		return "", errors.New("is empty; give a folder, cwd for a server that resolves paths against the folder it runs in, roots for one that resolves them against its allowed folders, or none for one whose paths are not files here")
	case strings.HasPrefix(v, "~"):
		if home == "" {
			return "", fmt.Errorf("%q starts with ~, but the server has no HOME (set one in its env, or give an absolute folder)", v)
		}
		dir, ok := expandTilde(v, home)
		if !ok {
			return "", fmt.Errorf("%q: only ~ and ~/… are understood (the server's own HOME), not ~user", v)
		}
		if !filepath.IsAbs(dir) {
			return "", fmt.Errorf("%q expands to %q, which is not absolute (the server's HOME is %q)", v, dir, home)
		}
		return filepath.Clean(dir), nil
	case filepath.IsAbs(v):
		return filepath.Clean(v), nil
	}
	base := "."
	if configPath != "" {
		base = filepath.Dir(configPath)
	}
	abs, err := filepath.Abs(filepath.Join(base, v))
	if err != nil {
		return "", fmt.Errorf("%q: %w", v, err)
	}
	return abs, nil
}

// nearKeyword is the path_base keyword v looks like a misspelling of: the
// same but for case, or one typing mistake away ("root", "cdw"); "" when
// v is none of that, or is written as a path (a separator, a leading . or
// ~).
func nearKeyword(v string) string {
	if strings.ContainsAny(v, `/\.~`) {
		return ""
	}
	low := strings.ToLower(strings.TrimSpace(v))
	for _, k := range []string{PathBaseRoots, PathBaseCwd, PathBaseNone} {
		if low == k || textdist.OSA(low, k) <= 1 {
			return k
		}
	}
	return ""
}
