package proxy

import (
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// Where a call's paths land: the gate judges a path argument in the frame
// of the server that will open it.

// gateToolFor gives the gate the facts it needs about a catalog tool under
// the settings set.
func gateToolFor(set *settings, t registry.Tool) *gate.Tool {
	a := t.Annotations
	gt := &gate.Tool{Name: t.Exposed, Server: t.Server, Schema: t.InputSchema,
		Hints: gate.Hints{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}}
	if fr, ok := set.frames[t.Server]; ok {
		// Clipped: frame appends the session's roots to a copy, never to
		// the configuration's slice.
		gt.Home, gt.Cwd, gt.Bases, gt.RelativeElsewhere = fr.home, fr.cwd, slices.Clip(fr.bases), fr.elsewhere
		gt.PathArgs = fr.pathArgs[t.Name]
	}
	_, gt.SlashGated = set.cfg.SlashFor(t.Exposed)
	return gt
}

// A serverFrame is where a server puts the paths it is given, worked out
// once per configuration (a folder argument is looked up on disk).
type serverFrame struct {
	home, cwd string
	bases     []string
	elsewhere bool
	pathArgs  map[string][]string
}

// frames works out every server's frame for cfg, its stdio servers
// without cwd: running under workDir (registry.ChildDir).
func frames(cfg *registry.Config, workDir string) map[string]serverFrame {
	out := make(map[string]serverFrame, len(cfg.Servers))
	for _, srv := range cfg.Servers {
		fr := serverFrame{home: srv.Home(), pathArgs: srv.PathArgs}
		if srv.Transport == registry.TransportStdio && (srv.Cwd != "" || workDir != "") {
			// Where the child runs: its cwd:, else its own folder of
			// quiver's, never quiver's working folder. A bare name is
			// found there.
			fr.cwd, _ = filepath.Abs(registry.ChildDir(workDir, srv))
		}
		switch srv.PathBase {
		case "":
			// Undeclared: quiver cannot know where the server puts a
			// relative path, so the gate holds every one to be outside.
		case registry.PathBaseRoots:
			fr.bases = srv.RootDirs() // the session's roots join in frame
		case registry.PathBaseNone:
			fr.elsewhere = true
		case registry.PathBaseCwd:
			if fr.cwd != "" {
				fr.bases = []string{fr.cwd}
			}
		default:
			fr.bases = []string{srv.PathBase}
		}
		out[srv.Name] = fr
	}
	return out
}

// frame completes the server's frame for one call: a server that resolves
// relative paths against its allowed folders (path_base: roots) also has
// the session's MCP roots among them, since server-filesystem takes the
// client's roots as its allowed folders. Every base is tried by the gate.
func (v reqView) frame(t *gate.Tool, roots []string) {
	if t == nil || t.Server == "" {
		return
	}
	if srv, ok := v.cfg.Server(t.Server); ok && srv.PathBase == registry.PathBaseRoots {
		// This session's roots, and every root the server was ever given
		// by any session: it keeps them.
		for _, r := range append(slices.Clone(roots), v.s.relay.givenRoots(t.Server)...) {
			if p, err := rootPath(r); err == nil {
				t.Bases = append(t.Bases, p)
			}
		}
	}
}

// rootPath is the folder an MCP root names (a file:// URI, or a path).
func rootPath(root string) (string, error) {
	p := root
	if u, err := url.Parse(root); err == nil && u.Scheme == "file" {
		p = u.Path
		if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' {
			p = p[1:] // file:///C:/x is C:\x
		}
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("root %q is not an absolute folder", root)
	}
	return filepath.Clean(p), nil
}
