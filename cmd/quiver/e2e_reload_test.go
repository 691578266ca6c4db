package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// liveConfig is a servers.yaml a running quiver watches, and its state dir.
type liveConfig struct {
	t                     testing.TB
	dir, path, state, tgl string
}

func newLiveConfig(t testing.TB, text string) *liveConfig {
	dir := t.TempDir()
	c := &liveConfig{t: t, dir: dir, path: filepath.Join(dir, "servers.yaml"), state: filepath.Join(dir, "state"), tgl: filepath.Join(dir, "tools.yaml")}
	c.write(c.path, text)
	return c
}

// write saves like an editor that writes a temp file and renames it over.
func (c *liveConfig) write(p, text string) {
	c.t.Helper()
	tmp := p + ".swp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		c.t.Fatal(err)
	}
}

func (c *liveConfig) args() []string {
	// Later flags win: these replace startQuiver's own config and state.
	return []string{"--config", c.path, "--state-dir", c.state}
}

// settle waits out notifications of the start-up, then forgets them.
func (h *host) settle() {
	time.Sleep(300 * time.Millisecond) // not synchronisation: lets stray start-up notifications land
	h.drain()
}

const directTwo = `
surface:
  reveal: direct
servers:
  example:
    command: quiver
    args: [example-server, --test-tools]
`

// waitTaken waits until the running quiver has dealt with the
// servers.yaml now on disk: put it in force, or rejected it. A check that
// nothing changed means something only after that.
func (c *liveConfig) waitTaken(rejected bool) {
	c.t.Helper()
	b, err := os.ReadFile(c.path)
	if err != nil {
		c.t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st, ok := runningStatus(c.state, c.path); ok && ((!rejected && st.ServersHash == want) || (rejected && st.LastError != "")) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("the running quiver did not take %s (rejected: %v) within 10 s", c.path, rejected)
}

func TestReloadAddRemoveServerLive(t *testing.T) {
	lc := newLiveConfig(t, directTwo)
	h := startQuiver(t, "", hostOptions{args: lc.args()})
	h.waitTools("example__echo")
	h.settle()

	// Add a server: exactly one list_changed, and its tools are listed.
	lc.write(lc.path, directTwo+"  second:\n    command: quiver\n    args: [example-server, --test-tools]\n")
	h.waitChanged()
	h.noChange()
	names, _ := h.list()
	if !containsAll(names, []string{"example__echo", "second__echo"}) {
		t.Fatalf("after adding a server: %v", names)
	}
	if res := h.call("second__echo", `{"x":1}`); res.IsError {
		t.Fatalf("call to the added server: %s", toolresult.Text(res))
	}

	// A change that leaves every list as it is: no list_changed at all.
	lc.write(lc.path, directTwo+"  second:\n    command: quiver\n    args: [example-server, --test-tools]\n    keywords: [again]\n")
	lc.waitTaken(false)
	h.noChange()

	// An invalid file: rejected whole, nothing changes, and doctor says
	// the running quiver keeps its last good configuration.
	lc.write(lc.path, directTwo+"  second:\n    comand: quiver\n")
	lc.waitTaken(true)
	h.noChange()
	out, _ := exec.Command(quiverBin, "doctor", "--config", lc.path, "--state-dir", lc.state).CombinedOutput()
	if !strings.Contains(string(out), `servers.yaml:9: unknown key "comand"`) || !strings.Contains(string(out), "keeps its last good configuration") {
		t.Errorf("doctor on a rejected change:\n%s", out)
	}
	if res := h.call("second__echo", `{}`); res.IsError {
		t.Fatalf("the last good config is not in force: %s", toolresult.Text(res))
	}

	// Remove it: exactly one list_changed; its tools are gone.
	lc.write(lc.path, directTwo)
	h.waitChanged()
	h.noChange()
	names, _ = h.list()
	if slices.Contains(names, "second__echo") || !slices.Contains(names, "example__echo") {
		t.Fatalf("after removing a server: %v", names)
	}
	wantRefusal(t, h.call("call_tool", map[string]any{"name": "second__echo"}), "deny.unknown_tool")
}

func TestToggleOffABoundTool(t *testing.T) {
	lc := newLiveConfig(t, exampleConfig("auto", ""))
	h := startQuiver(t, "", hostOptions{args: lc.args()})
	h.list() // a host that has not listed is never told the list changed
	h.searchUntil("echo arguments", "example__echo")
	h.waitChanged()
	names, _ := h.list()
	if !slices.Contains(names, "example__echo") {
		t.Fatalf("example__echo not bound: %v", names)
	}
	h.settle()

	// Switch it off with the CLI: the session hears once; the tool leaves
	// its list, search no longer finds it, and the host's cached name is
	// refused with deny.withheld.
	out, err := exec.Command(quiverBin, "tools", "disable", "--config", lc.path, "--state-dir", lc.state, "example__echo").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "The running quiver (pid ") {
		t.Fatalf("tools disable: %v; want it to say the running quiver applies it\n%s", err, out)
	}
	h.waitChanged()
	h.noChange()
	names, _ = h.list()
	if slices.Contains(names, "example__echo") {
		t.Fatalf("a switched-off tool is still listed: %v", names)
	}
	wantRefusal(t, h.call("example__echo", `{}`), "deny.withheld")
	wantRefusal(t, h.call("call_tool", map[string]any{"name": "example__echo", "arguments": map[string]any{}}), "deny.withheld")
	if res := h.search("echo arguments"); strings.Contains(toolresult.Text(res), "example__echo") {
		t.Fatalf("search finds a switched-off tool:\n%s", toolresult.Text(res))
	}

	// On again: it was unbound, so it must be found again.
	h.drain()
	out, err = exec.Command(quiverBin, "tools", "enable", "--config", lc.path, "example__*").CombinedOutput()
	if err != nil {
		t.Fatalf("tools enable: %v\n%s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := h.call("example__echo", `{}`)
		if strings.Contains(toolresult.Text(res), "deny.not_bound") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after enable: %s", toolresult.Text(res))
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.searchUntil("echo arguments", "example__echo")
	if res := h.call("example__echo", `{"x":1}`); res.IsError {
		t.Fatalf("after search: %s", toolresult.Text(res))
	}
}

func TestToolsDefaultOff(t *testing.T) {
	lc := newLiveConfig(t, exampleConfig("direct", "    tools_default: \"off\"\n"))
	lc.write(lc.tgl, "# only what we need\nenabled:\n  - example__echo\n")
	h := startQuiver(t, "", hostOptions{args: lc.args()})
	names := h.waitTools("example__echo")
	if slices.Contains(names, "example__notes_add") {
		t.Fatalf("tools_default: off listed %v", names)
	}
	out, err := exec.Command(quiverBin, "tools", "list", "--config", lc.path, "--state-dir", lc.state, "--disabled").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "example__notes_add") || strings.Contains(string(out), "example__echo ") ||
		!strings.Contains(string(out), "tools_default: off") {
		t.Fatalf("tools list --disabled: %v\n%s", err, out)
	}
}

// TestToolsSwitchSaysWhenItCannotApply: with servers.yaml invalid, tools
// disable still writes the toggles file, through its symlink, but warns
// that a running quiver will not apply it until the configuration loads.
func TestToolsSwitchSaysWhenItCannotApply(t *testing.T) {
	lc := newLiveConfig(t, "servers:\n  example:\n    command: quiver\n    timeout: banana\n")
	target := filepath.Join(lc.dir, "dotfiles-tools.yaml")
	lc.write(target, "# mine\n")
	if err := os.Symlink(target, lc.tgl); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(quiverBin, "tools", "disable", "--config", lc.path, "example__echo")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tools disable: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "applies this only once the configuration loads again") || !strings.Contains(stderr.String(), "timeout") {
		t.Errorf("stderr lacks the warning and the reason:\n%s", stderr.String())
	}
	if fi, err := os.Lstat(lc.tgl); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("tools.yaml is no longer a symlink: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), "# mine") || !strings.Contains(string(b), "example__echo") {
		t.Errorf("the symlink's target reads:\n%s", b)
	}
}

// TestConfigEffective: the merged configuration, as JSON: references and
// never values for ${VAR}, defaults filled in for the fence and the
// policy, each server's state, and every withheld tool with why.
func TestConfigEffective(t *testing.T) {
	// The fence is a project folder: one that holds the state dir or the
	// system's temporary folder keeps a server without cwd: down.
	project, _ := filepath.EvalSymlinks(t.TempDir())
	lc := newLiveConfig(t, exampleConfig("auto", "    env: {NOTES_TOKEN: \"${QUIVER_TEST_SECRET}\"}\n")+fmt.Sprintf("fence:\n  allowed_dirs: [%q]\n", project))
	lc.write(lc.tgl, "disabled: [example__notes_delete]\n")
	cmd := exec.Command(quiverBin, "config", "effective", "--json", "--config", lc.path, "--state-dir", lc.state)
	cmd.Env = append(os.Environ(), "QUIVER_TEST_SECRET=hunter2-hunter2")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("config effective: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "hunter2") {
		t.Fatalf("a secret's value is shown:\n%s", out)
	}
	var got struct {
		Servers []struct {
			Name  string            `json:"name"`
			State string            `json:"state"`
			Env   map[string]string `json:"env"`
		} `json:"servers"`
		Fence struct {
			AllowedDirs  []string `json:"allowed_dirs"`
			OutsideFence string   `json:"outside_fence"`
		} `json:"fence"`
		Policy struct {
			Defaults map[string]string `json:"defaults"`
		} `json:"policy"`
		Withheld []struct{ Name, Why string } `json:"withheld"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got.Servers) != 1 || got.Servers[0].State != "up" || got.Servers[0].Env["NOTES_TOKEN"] != "${QUIVER_TEST_SECRET}" {
		t.Errorf("servers: %+v", got.Servers)
	}
	if got.Fence.OutsideFence != "ask" || !slices.Contains(got.Fence.AllowedDirs, project) || got.Policy.Defaults["destructive"] != "allow_inside" || got.Policy.Defaults["read"] != "allow" {
		t.Errorf("fence %+v, policy defaults %v: want the defaults filled in", got.Fence, got.Policy.Defaults)
	}
	if len(got.Withheld) != 1 || got.Withheld[0].Name != "example__notes_delete" || !strings.Contains(got.Withheld[0].Why, "tools.yaml:1") {
		t.Errorf("withheld: %+v", got.Withheld)
	}
}
