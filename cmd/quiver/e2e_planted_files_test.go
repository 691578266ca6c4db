//go:build !windows

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// Nothing the model writes inside the fence changes what quiver runs or
// loads, or what it shows: a file written there is not a configuration
// quiver reads, not a file a server quiver starts obeys, and quiver's
// secrets are not under a folder a tool may be given. Each test writes
// the file as the model would (or as it could), then starts quiver or a
// server the way the next start would.

// plantedMiniEnv makes the test binary a downstream server that writes
// files where it is told and, like npx with an .npmrc, reads a file in
// the folder it starts in.
const plantedMiniEnv = "QUIVER_PLANTED_MINI"

func init() {
	serveMini(plantedMiniEnv, "planted-mini", func(s *server.MCPServer) {
		// What the process found in its working folder when it started:
		// npx obeys an .npmrc there (node-options=--require t.cjs).
		cwd, _ := os.Getwd()
		npmrc, _ := os.ReadFile(".npmrc")
		s.AddTool(mcp.NewTool("started", mcp.WithDescription("Say where the server started and what its .npmrc said."),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				b, _ := json.Marshal(map[string]string{"cwd": cwd, "npmrc": string(npmrc)})
				return mcp.NewToolResultText(string(b)), nil
			})
		s.AddTool(mcp.NewTool("exit", mcp.WithDescription("End the server process (quiver starts it again)."),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				os.Exit(3)
				return nil, nil
			})
		s.AddTool(mcp.NewTool("search_files", mcp.WithDescription("Walk a folder and say what every file under it holds."),
			mcp.WithString("path", mcp.Required()),
			mcp.WithReadOnlyHintAnnotation(true), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var out strings.Builder
				_ = filepath.WalkDir(req.GetString("path", ""), func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						b, _ := os.ReadFile(p)
						fmt.Fprintf(&out, "%s: %s\n", p, b)
					}
					return nil
				})
				return mcp.NewToolResultText(out.String()), nil
			})
		s.AddTool(mcp.NewTool("write_file", mcp.WithDescription("Write text to a file."),
			mcp.WithString("path", mcp.Required()), mcp.WithString("text"),
			mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if err := os.WriteFile(req.GetString("path", ""), []byte(req.GetString("text", "")), 0o600); err != nil {
					return mcp.NewToolResultError(err.Error()), nil
				}
				return mcp.NewToolResultText("written"), nil
			})
	})
}

// plantedConfig is a servers.yaml with the mini server (no cwd:) and the
// fence given.
func plantedConfig(t *testing.T, fence string) string {
	return fmt.Sprintf(`
surface:
  reveal: direct
servers:
  mini:
    command: %q
    env: {%s: "1"}
fence:
  allowed_dirs: [%q]
%s`, testBinary(t), plantedMiniEnv, fence, allowAll)
}

// plantedServers is the servers.yaml a model writes in the project: its
// one server would run whatever the model likes.
const plantedServers = `
surface:
  reveal: direct
servers:
  planted:
    command: quiver
    args: [example-server]
`

// A servers.yaml written in the folder quiver runs in (a host such as
// Claude Code starts it in the project, inside the fence) is not read by
// the next serve that names no --config, and quiver says so.
func TestPlantedConfigInWorkingFolderIsNotLoaded(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "servers.yaml"), []byte(plantedServers), 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	h, _, _ := launch{found: true, dir: project, stderr: &log}.start(t)
	names := h.waitTools("example__current_time") // the built-in default's
	for _, n := range names {
		if strings.HasPrefix(n, "planted__") {
			t.Fatalf("serve ran the servers.yaml a model wrote in its working folder: %v", names)
		}
	}
	if !strings.Contains(log.String(), "./servers.yaml is not read") || !strings.Contains(log.String(), "--config servers.yaml") {
		t.Errorf("quiver does not say that it left ./servers.yaml alone, nor how to use it:\n%s", log.String())
	}

	// A person who runs quiver doctor in the project (no --config) sees
	// the configuration quiver runs with, not the planted one.
	cmd := exec.Command(quiverBin, "doctor", "--wait", "10s")
	cmd.Dir = project
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(project, "no-config"), "QUIVER_STATE_DIR="+filepath.Join(t.TempDir(), "state"))
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), "planted") {
		t.Errorf("quiver doctor in the project ran the planted servers.yaml:\n%s", out)
	}
	if !strings.Contains(string(out), "./servers.yaml is not read") {
		t.Errorf("quiver doctor does not say that it left ./servers.yaml alone:\n%s", out)
	}
}

// Every place quiver reads a configuration, toggles or state from is
// protected whether or not a file is there: with the host naming its
// --config, a servers.yaml written in quiver's config folder would be
// read by the next quiver started without one (or a doctor run by hand),
// and a ledger in the default state dir by the next command run without
// --state-dir.
func TestPlantedConfigWhereQuiverLooksIsRefused(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	cfgHome, stateHome := filepath.Join(project, "config"), filepath.Join(project, "xstate")
	// The folders exist (a model can make them); the files do not.
	for _, d := range []string{filepath.Join(cfgHome, "quiver"), filepath.Join(stateHome, "quiver")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h, _, _ := launch{cfg: plantedConfig(t, project), dir: project,
		env: []string{"XDG_CONFIG_HOME=" + cfgHome, "XDG_STATE_HOME=" + stateHome, "QUIVER_STATE_DIR="}}.start(t)
	h.waitTools("mini__write_file")
	if res := h.call("mini__write_file", map[string]any{"path": filepath.Join(project, "notes.txt"), "text": "ok"}); res.IsError {
		t.Fatalf("control: a write inside the fence: %s", toolresult.Text(res))
	}
	for _, p := range []string{
		filepath.Join(cfgHome, "quiver", "servers.yaml"),
		filepath.Join(cfgHome, "quiver", "tools.yaml"),
		filepath.Join(stateHome, "quiver", "secrets.json"),
	} {
		res := h.call("mini__write_file", map[string]any{"path": p, "text": plantedServers})
		wantRefusal(t, res, "deny.protected_path")
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// A server with no cwd: does not run in quiver's working folder: an
// .npmrc the model writes there (inside the fence) is not what the
// server finds at its next start. Its folder is quiver's, and empty.
func TestServerWithoutCwdDoesNotRunInQuiversFolder(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	first, _, _ := launch{cfg: plantedConfig(t, project), dir: project}.start(t)
	first.waitTools("mini__write_file")
	npmrc := filepath.Join(project, ".npmrc")
	if res := first.call("mini__write_file", map[string]any{"path": npmrc, "text": "node-options=--require t.cjs"}); res.IsError {
		t.Fatalf("control: the model writes .npmrc in the project, inside the fence: %s", toolresult.Text(res))
	}
	next, _, _ := launch{cfg: plantedConfig(t, project), dir: project}.start(t)
	next.waitTools("mini__started")
	got := startedAs(t, next)
	if got.Npmrc != "" {
		t.Errorf("the server's next start read the .npmrc the model wrote (%q), in %s", got.Npmrc, got.Cwd)
	}
	real, _ := filepath.EvalSymlinks(project)
	if got.Cwd == project || got.Cwd == real {
		t.Errorf("a server with no cwd: runs in quiver's working folder %s", got.Cwd)
	}

	// The server's own folder is in the fence (quiver's state dir is)
	// and may be written; what is written there does not outlive the
	// server's next start, which empties it first.
	if res := next.call("mini__write_file", map[string]any{"path": filepath.Join(got.Cwd, ".npmrc"), "text": "node-options=--require t.cjs"}); res.IsError {
		t.Fatalf("control: a write in the server's own folder: %s", toolresult.Text(res))
	}
	next.call("mini__exit", map[string]any{})
	var again started
	next.callUntil("mini__started", map[string]any{}, "answered from a new process", func(res *mcp.CallToolResult) bool {
		return !res.IsError && json.Unmarshal([]byte(toolresult.Text(res)), &again) == nil
	})
	if again.Npmrc != "" {
		t.Errorf("the server's restart read the .npmrc written in its folder (%q), in %s", again.Npmrc, again.Cwd)
	}
}

// The red team's case, with the real npx and server-filesystem: the model
// writes an .npmrc (node-options=--require ./t.cjs) and t.cjs in the
// project quiver runs in, inside the fence; the next start of a server
// whose entry is "command: npx" and no cwd: must not run t.cjs.
func TestNpxDoesNotObeyAnNpmrcInTheProject(t *testing.T) {
	t.Parallel()
	npx := needTool(t, "npx")
	project := t.TempDir()
	cfg := fmt.Sprintf(`
surface:
  reveal: direct
servers:
  fs:
    command: %q
    args: ["-y", "@modelcontextprotocol/server-filesystem@%s", %q]
    path_base: roots
    timeout: 60s
fence:
  allowed_dirs: [%q]
%s`, npx, filesystemServerVersion, project, project, allowAll)
	first, _, _ := launch{cfg: cfg, dir: project}.start(t)
	waitToolsFor(first, 90*time.Second, "fs__write_file")
	marker := filepath.Join(project, "pwned")
	for name, text := range map[string]string{
		".npmrc": "node-options=--require ./t.cjs\nfund=false\n",
		"t.cjs":  "// the model's code\nrequire('fs').writeFileSync(" + strconv.Quote(marker) + ", 'ran')\n",
	} {
		if res := first.call("fs__write_file", map[string]any{"path": filepath.Join(project, name), "content": text}); res.IsError {
			t.Fatalf("control: the model writes %s inside the fence: %s", name, toolresult.Text(res))
		}
	}

	next, _, _ := launch{cfg: cfg, dir: project}.start(t)
	waitToolsFor(next, 90*time.Second, "fs__list_directory")
	if res := next.call("fs__list_directory", map[string]any{"path": project}); res.IsError {
		t.Fatalf("control: the server answers: %s", toolresult.Text(res))
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("npx obeyed the .npmrc the model wrote in quiver's working folder: t.cjs ran at the server's next start")
	}
}

// waitToolsFor is waitTools with a longer wait: npx may fetch a package.
func waitToolsFor(h *host, d time.Duration, names ...string) {
	h.t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		got, _ := h.list()
		if containsAll(got, names) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("tools/list = %v, want it to include %v", got, names)
		}
	}
}

// started is what the planted mini server found when it started.
type started struct{ Cwd, Npmrc string }

func startedAs(t *testing.T, h *host) started {
	t.Helper()
	var got started
	text := toolresult.Text(h.call("mini__started", map[string]any{}))
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("mini__started: %v: %s", err, text)
	}
	return got
}

// With the fence at a home folder that holds quiver's state and config
// folder, a tool given the home folder (a recursive search) would read
// quiver's secrets: it is refused, saying how to do it right; a folder
// inside that does not hold them is searched.
func TestFolderAboveQuiversSecretsIsRefused(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	canary := "canary-" + randomWord(t)
	qhome := filepath.Join(home, ".local", "share", "q") // servers.yaml and state/ go here
	cfgHome := filepath.Join(home, ".config")
	for p, text := range map[string]string{
		filepath.Join(qhome, "state", "secrets.json"):    `{"TOKEN": "` + canary + `"}`,
		filepath.Join(cfgHome, "quiver", "servers.yaml"): "# " + canary + "\n",
		filepath.Join(home, "project", "notes.txt"):      "hello " + canary[:8] + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`
surface:
  reveal: direct
servers:
  example:
    command: quiver
    args: [example-server]
    cwd: %q
fence:
  allowed_dirs: [%q]
`, t.TempDir(), home)
	// cwd: the state dir lies in the fence, and on Linux no other folder
	// (a shared /tmp) is one quiver runs a server without cwd: in.
	h, _, _ := launch{cfg: cfg, home: qhome, env: []string{"XDG_CONFIG_HOME=" + cfgHome}}.start(t)
	h.waitTools("example__search_text")
	for _, dir := range []string{home, filepath.Join(home, ".local"), cfgHome} {
		res := h.call("example__search_text", map[string]any{"dir": dir, "pattern": "canary"})
		if text := toolresult.Text(res); strings.Contains(text, canary) {
			t.Fatalf("a search of %s returned quiver's secrets:\n%s", dir, text)
		}
		wantRefusal(t, res, "deny.protected_path")
		if text := toolresult.Text(res); !strings.Contains(text, "where quiver keeps secrets") || !strings.Contains(text, "folder inside it") {
			t.Errorf("the refusal of %s does not say why, or what to do instead:\n%s", dir, text)
		}
	}
	res := h.call("example__search_text", map[string]any{"dir": filepath.Join(home, "project"), "pattern": "hello"})
	if res.IsError || !strings.Contains(toolresult.Text(res), "notes.txt") {
		t.Fatalf("control: a project folder inside the fence: %s", toolresult.Text(res))
	}
}

// The red team's 48b and 48c: a server with path_base: cwd and no cwd:
// (as the shipped example server) writes, with relative paths only, next
// to its own folder: ../package.json, ../.npmrc and ../t.cjs (npx walks
// up to the first package.json and obeys the .npmrc there), or
// ../.git/config with a core.fsmonitor command (git walks up to the
// first .git). The folder above a server's is quiver's run folder: every
// such write is refused, and nothing lands there; the server's own folder
// stays the model's to write.
func TestNothingWrittenAboveAServersFolder(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	cfg := fmt.Sprintf(`
surface:
  reveal: direct
servers:
  w:
    command: %[1]q
    env: {%[2]s: "1"}
    path_base: cwd
  mini:
    command: %[1]q
    env: {%[2]s: "1"}
fence:
  allowed_dirs: [%[3]q]
%[4]s`, testBinary(t), plantedMiniEnv, project, allowAll)
	h, _, _ := launch{cfg: cfg, dir: project}.start(t)
	h.waitTools("w__write_file", "mini__started")
	if res := h.call("w__write_file", map[string]any{"path": "notes.txt", "text": "ok"}); res.IsError {
		t.Fatalf("control: a plain name lands in the server's own folder, inside the fence: %s", toolresult.Text(res))
	}
	got := startedAs(t, h)
	run := filepath.Dir(got.Cwd)
	for name, text := range map[string]string{
		"../package.json":            "{}",
		"../.npmrc":                  "node-options=--require ../t.cjs",
		"../t.cjs":                   "require('fs').writeFileSync('pwned', 'ran')",
		"../.git/config":             "[core] fsmonitor = \"echo ran > pwned; false\"",
		"../.git/HEAD":               "ref: refs/heads/main",
		filepath.Join(run, ".npmrc"): "node-options=--require ./t.cjs",
		filepath.Join(filepath.Dir(run), "package.json"): "{}",
	} {
		wantRefusal(t, h.call("w__write_file", map[string]any{"path": name, "text": text}), "deny.protected_path")
	}
	entries, _ := os.ReadDir(run)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "srv-") {
			continue
		}
		t.Errorf("the run folder above the servers' holds %s, which a call wrote", e.Name())
	}
}

// When the fence holds every place quiver could make its servers' folders
// in (here the system's temporary folder, which holds the state dir too),
// a server without cwd: does not start: it is down with a sentence that
// says to give it a cwd:. A server with one runs.
func TestServerWithoutCwdUnderAFencedFolderDoesNotStart(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	cfg := fmt.Sprintf(`
surface:
  reveal: direct
servers:
  mini:
    command: %[1]q
    env: {%[2]s: "1"}
  placed:
    command: %[1]q
    env: {%[2]s: "1"}
    cwd: %[3]q
fence:
  allowed_dirs: [%[4]q]
%[5]s`, testBinary(t), plantedMiniEnv, project, os.TempDir(), allowAll)
	var log syncBuffer
	h, _, _ := launch{cfg: cfg, stderr: &log}.start(t)
	h.waitTools("placed__started")
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(log.String(), `server \"mini\" has no cwd:`) ||
		!strings.Contains(log.String(), `Give server \"mini\" a cwd:`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("quiver never said why mini is down nor how to fix it:\n%s", log.String())
		}
	}
	if names, _ := h.list(); slices.Contains(names, "mini__started") {
		t.Errorf("mini started in a folder under the fence: %v", names)
	}
}
