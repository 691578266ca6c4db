package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests in this file put the published TypeScript client in front of
// quiver, as hosts on protocol 2026-07-28 meet it: input requests instead
// of server-to-client requests, and no session over HTTP. The client runs
// testdata/tsclient/driver.mjs, which takes a script of steps and prints
// what the host saw as JSON lines; each test asserts on those.

// tsClientVersion is the pinned @modelcontextprotocol/client.
const tsClientVersion = "2.4.0"

// modernVersion is the protocol revision these tests negotiate.
const modernVersion = "2026-07-28"

// goEverythingServerVersion is the pinned Go SDK whose conformance
// everything-server the tests run behind quiver (scripts/conformance.sh
// pins the same).
const goEverythingServerVersion = "v1.8.0"

// tsDriver installs the client once per machine (with the npm helper the
// other end-to-end tests use) and returns a directory holding the driver
// next to a node_modules that resolves it: node resolves an ES module's
// imports from the module's own directory.
func tsDriver(t testing.TB) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	prefix := filepath.Join(cache, "quiver-test-npm", "client@"+tsClientVersion)
	pkg := filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "client", "package.json")
	if _, err := os.Stat(pkg); err != nil {
		// The helper looks for dist/index.js, which this package does
		// not have (it ships index.mjs): call it only to install.
		npmServer(t, "client", tsClientVersion)
		if _, err := os.Stat(pkg); err != nil {
			t.Fatalf("npm installed @modelcontextprotocol/client@%s but %s is missing", tsClientVersion, pkg)
		}
	} else {
		needTool(t, "node")
	}
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(prefix, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "tsclient", "driver.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "driver.mjs"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

var goServerOnce sync.Mutex

// goEverythingServer builds the Go SDK's conformance everything-server
// once per machine, in the user cache, and returns the binary.
func goEverythingServer(t testing.TB) string {
	t.Helper()
	goServerOnce.Lock()
	defer goServerOnce.Unlock()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "quiver-test-go", "everything-server-"+goEverythingServerVersion)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/modelcontextprotocol/go-sdk/conformance/everything-server@"+goEverythingServerVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install everything-server@%s: %v\n%s", goEverythingServerVersion, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(gobin, "everything-server"))
	if err != nil {
		t.Fatal(err)
	}
	// Write and rename, so that a concurrent test run never executes a
	// half-written binary.
	tmp := bin + fmt.Sprintf(".%d", os.Getpid())
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// tsEvent is one line the driver printed.
type tsEvent struct {
	Event      string          `json:"event"`
	Step       int             `json:"step"`
	Op         string          `json:"op"`
	Era        string          `json:"era"`
	Version    string          `json:"version"`
	Names      []string        `json:"names"`
	Message    any             `json:"message"` // the card's text, or an error's
	Schema     json.RawMessage `json:"schema"`
	Answer     json.RawMessage `json:"answer"`
	Unscripted bool            `json:"unscripted"`
	Result     *tsResult       `json:"result"`
	Code       any             `json:"code"`
	Dir        string          `json:"dir"` // of a wire event: "in" or "out"
	Msg        json.RawMessage `json:"msg"` // of a wire event
}

type tsResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r *tsResult) text() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// tsRun is what one driver run saw.
type tsRun struct {
	events []tsEvent
	raw    strings.Builder // the events but the messages, for logs
}

// tsScript is the driver's input (see driver.mjs).
type tsScript struct {
	Transport   string            `json:"transport"`
	Command     string            `json:"command,omitempty"`
	Args        []string          `json:"args,omitempty"`
	URL         string            `json:"url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Negotiation string            `json:"negotiation"`
	Trace       bool              `json:"trace,omitempty"`
	Steps       []tsStep          `json:"steps"`
}

type tsStep struct {
	Op        string         `json:"op"`
	Until     []string       `json:"until,omitempty"`
	Name      string         `json:"name,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Elicit    []tsAnswer     `json:"elicit,omitempty"`
	Sample    []tsSample     `json:"sample,omitempty"`
}

type tsAnswer struct {
	Match   string         `json:"match,omitempty"`
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

type tsSample struct {
	Text string `json:"text"`
}

// runTS runs the driver with script and returns what it printed.
func runTS(t *testing.T, dir string, s tsScript) *tsRun {
	t.Helper()
	node := needTool(t, "node")
	in, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "driver.mjs"))
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = testWriter{t}
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver: %v\nscript: %s\nstdout:\n%s", err, in, out.String())
	}
	r := &tsRun{}
	var wire strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e tsEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("driver printed a line that is not JSON: %q", sc.Text())
		}
		r.events = append(r.events, e)
		if e.Event == "wire" {
			fmt.Fprintf(&wire, "%s\n", sc.Bytes())
		} else {
			fmt.Fprintf(&r.raw, "%s\n", sc.Bytes())
		}
	}
	t.Logf("host saw:\n%s", r.raw.String())
	if wire.Len() > 0 {
		// The messages themselves only when a test fails: tools/list alone
		// is pages long.
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("messages the host sent and received:\n%s", wire.String())
			}
		})
	}
	return r
}

// connected checks the negotiated version.
func (r *tsRun) connected(t *testing.T, version string) {
	t.Helper()
	for _, e := range r.events {
		if e.Event == "connected" {
			if e.Version != version {
				t.Fatalf("negotiated %q (era %s), want %s", e.Version, e.Era, version)
			}
			return
		}
	}
	t.Fatalf("the host never connected:\n%s", r.raw.String())
}

// of returns the events of one kind in one step.
func (r *tsRun) of(kind string, step int) []tsEvent {
	var out []tsEvent
	for _, e := range r.events {
		if e.Event == kind && e.Step == step {
			out = append(out, e)
		}
	}
	return out
}

// result returns a step's tool result, failing on a protocol error.
func (r *tsRun) result(t *testing.T, step int) *tsResult {
	t.Helper()
	if errs := r.of("error", step); len(errs) > 0 {
		t.Fatalf("step %d failed with a protocol error: %v (code %v)", step, errs[0].Message, errs[0].Code)
	}
	res := r.of("result", step)
	if len(res) != 1 {
		t.Fatalf("step %d: no result (the driver's output is logged above)", step)
	}
	return res[0].Result
}

// modernHost is how a test reaches quiver: over stdio (the driver starts
// quiver) or over streamable HTTP (the test starts quiver --http).
type modernHost struct {
	transport string
	cfg       string
	driver    string
	http      *httpQuiver
	trace     bool // have the driver print every message
}

func newModernHost(t *testing.T, transport, cfg string) *modernHost {
	t.Helper()
	m := &modernHost{transport: transport, cfg: cfg, driver: tsDriver(t)}
	if transport == "http" {
		m.http = startHTTPQuiver(t, "127.0.0.1", cfg, nil, nil)
	}
	return m
}

// run runs steps with a fresh client negotiating version ("legacy" for
// the 2025 handshake). Over stdio every run starts its own quiver.
func (m *modernHost) run(t *testing.T, negotiation string, steps ...tsStep) *tsRun {
	t.Helper()
	s := tsScript{Transport: m.transport, Negotiation: negotiation, Trace: m.trace, Steps: steps}
	if m.http != nil {
		s.URL = m.http.url
	} else {
		dir := t.TempDir()
		path := filepath.Join(dir, "servers.yaml")
		if err := os.WriteFile(path, []byte(m.cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		s.Command = quiverBin
		s.Args = []string{"serve", "--config", path, "--state-dir", filepath.Join(dir, "state"), "--log-level", "info"}
	}
	return runTS(t, m.driver, s)
}

// fenceSetup is the filesystem server (allowed all of /) behind quiver's
// fence around one folder, and a file outside it.
func fenceSetup(t *testing.T) (cfg, outsideFile string) {
	t.Helper()
	script := filesystemServer(t)
	node := needTool(t, "node")
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "fenced")
	outside := filepath.Join(base, "elsewhere")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outsideFile = filepath.Join(outside, "report.txt")
	if err := os.WriteFile(outsideFile, []byte("the outside report\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = fmt.Sprintf(`
surface:
  reveal: direct
servers:
  filesystem:
    command: %s
    args: [%q, "/"]
fence:
  allowed_dirs: [%q]
`, node, script, root)
	return cfg, outsideFile
}

const readTool = "filesystem__read_text_file"

func readOutside(path string, answers ...tsAnswer) tsStep {
	return tsStep{Op: "callTool", Name: readTool, Arguments: map[string]any{"path": path}, Elicit: answers}
}

var waitRead = tsStep{Op: "listTools", Until: []string{readTool}}

// TestModernApprovalCard: a host on 2026-07-28 gets quiver's approval card
// as an input request and its answer decides the call.
func TestModernApprovalCard(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			cfg, file := fenceSetup(t)
			m := newModernHost(t, tr, cfg)
			t.Run("allow_once", func(t *testing.T) {
				r := m.run(t, modernVersion, waitRead,
					readOutside(file, tsAnswer{Action: "accept", Content: map[string]any{"decision": "allow_once"}}))
				r.connected(t, modernVersion)
				cards := r.of("elicitation", 1)
				if len(cards) != 1 {
					t.Fatalf("the host was asked %d times, want one card", len(cards))
				}
				if msg, _ := cards[0].Message.(string); !strings.Contains(msg, file) {
					t.Errorf("the card does not name %s: %q", file, msg)
				}
				if !strings.Contains(string(cards[0].Schema), `"allow_once"`) {
					t.Errorf("the card offers no allow_once: %s", cards[0].Schema)
				}
				res := r.result(t, 1)
				if res.IsError || !strings.Contains(res.text(), "the outside report") {
					t.Fatalf("allowed once, got isError=%v: %s", res.IsError, res.text())
				}
			})
			t.Run("decline", func(t *testing.T) {
				r := m.run(t, modernVersion, waitRead, readOutside(file, tsAnswer{Action: "decline"}))
				r.connected(t, modernVersion)
				if n := len(r.of("elicitation", 1)); n != 1 {
					t.Fatalf("the host was asked %d times, want one card", n)
				}
				res := r.result(t, 1)
				if !res.IsError || !strings.HasPrefix(res.text(), "deny.approval_denied") {
					t.Fatalf("declined, want a tool error starting with deny.approval_denied, got isError=%v: %s", res.IsError, res.text())
				}
				if strings.Contains(res.text(), "the outside report") {
					t.Fatal("the declined read ran")
				}
			})
		})
	}
}

// TestModernLegacyHostCard: the same driver on the 2025-11-25 handshake
// gets the card as an elicitation/create request.
func TestModernLegacyHostCard(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			cfg, file := fenceSetup(t)
			m := newModernHost(t, tr, cfg)
			r := m.run(t, "legacy", waitRead,
				readOutside(file, tsAnswer{Action: "accept", Content: map[string]any{"decision": "allow_once"}}))
			r.connected(t, "2025-11-25")
			cards := r.of("elicitation", 1)
			if len(cards) != 1 {
				t.Fatalf("the host was asked %d times, want one card", len(cards))
			}
			if msg, _ := cards[0].Message.(string); !strings.Contains(msg, file) {
				t.Errorf("the card does not name %s: %q", file, msg)
			}
			res := r.result(t, 1)
			if res.IsError || !strings.Contains(res.text(), "the outside report") {
				t.Fatalf("allowed once, got isError=%v: %s", res.IsError, res.text())
			}
		})
	}
}

// TestModernClientsShareNothing: two 2026-07-28 clients over HTTP have no
// session, so nothing one approves may carry over to the other.
func TestModernClientsShareNothing(t *testing.T) {
	cfg, file := fenceSetup(t)
	m := newModernHost(t, "http", cfg)
	a := m.run(t, modernVersion, waitRead,
		readOutside(file, tsAnswer{Action: "accept", Content: map[string]any{"decision": "allow_session"}}),
		readOutside(file, tsAnswer{Action: "decline"}))
	a.connected(t, modernVersion)
	if n := len(a.of("elicitation", 1)); n != 1 {
		t.Fatalf("client A was asked %d times, want one card", n)
	}
	if res := a.result(t, 1); res.IsError || !strings.Contains(res.text(), "the outside report") {
		t.Fatalf("client A allowed it, got isError=%v: %s", res.IsError, res.text())
	}
	// What A's own second call sees is quiver's choice (a sessionless
	// client has nothing to hold an allow_session grant); log it.
	if res := a.of("result", 2); len(res) == 1 {
		t.Logf("client A's second read: asked %d times, isError=%v: %.200s", len(a.of("elicitation", 2)), res[0].Result.IsError, res[0].Result.text())
	}

	b := m.run(t, modernVersion, waitRead, readOutside(file, tsAnswer{Action: "decline"}))
	b.connected(t, modernVersion)
	if n := len(b.of("elicitation", 1)); n != 1 {
		t.Fatalf("client B was asked %d times, want its own card", n)
	}
	res := b.result(t, 1)
	if !res.IsError || !strings.HasPrefix(res.text(), "deny.approval_denied") || strings.Contains(res.text(), "the outside report") {
		t.Fatalf("client B declined its own card, got isError=%v: %s", res.IsError, res.text())
	}
}

// TestModernReferenceServer relays the Go SDK's everything-server's
// questions (elicitation, sampling, and a two-round input request) to the
// host and back: a 2026-07-28 host gets them as input requests, a
// 2025-11-25 host as requests of their own.
func TestModernReferenceServer(t *testing.T) {
	ref := goEverythingServer(t)
	cfg := fmt.Sprintf(`
surface:
  reveal: direct
servers:
  ev:
    command: %s
    timeout: 30s
%s`, ref, allowAll)
	const (
		elicitTool = "ev__test_elicitation"
		sampleTool = "ev__test_sampling"
		multiTool  = "ev__test_input_required_result_multi_round"
	)
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			m := newModernHost(t, tr, cfg)
			m.trace = true
			for _, version := range []string{modernVersion, "legacy"} {
				t.Run(version, func(t *testing.T) {
					r := m.run(t, version,
						tsStep{Op: "listTools", Until: []string{elicitTool, sampleTool, multiTool}},
						tsStep{Op: "callTool", Name: elicitTool, Arguments: map[string]any{"message": "Who are you?"},
							Elicit: []tsAnswer{{Action: "accept", Content: map[string]any{"username": "quinn"}}}},
						tsStep{Op: "callTool", Name: sampleTool, Arguments: map[string]any{"prompt": "say hi"},
							Sample: []tsSample{{Text: "hi from the host"}}},
						tsStep{Op: "callTool", Name: multiTool, Arguments: map[string]any{},
							Elicit: []tsAnswer{
								{Match: "name", Action: "accept", Content: map[string]any{"name": "Ann"}},
								{Match: "color", Action: "accept", Content: map[string]any{"color": "blue"}},
							}},
					)
					if version == "legacy" {
						r.connected(t, "2025-11-25")
					} else {
						r.connected(t, version)
					}
					if tools := r.of("tools", 0); len(tools) != 1 || !containsAll(tools[0].Names, []string{elicitTool, sampleTool, multiTool}) {
						t.Fatal("tools/list lacks the reference tools")
					}
					t.Run("test_elicitation", func(t *testing.T) {
						asked := r.of("elicitation", 1)
						// The server's message, labelled with the server:
						// a server's form is never taken for quiver's card.
						if len(asked) != 1 {
							t.Errorf("the host's elicitation handler was asked %d times, want once", len(asked))
						} else if msg, _ := asked[0].Message.(string); !strings.Contains(msg, "\nWho are you?\n") || !strings.Contains(msg, `The server "ev" asks`) {
							t.Errorf("the host was asked %q, want the server's message, labelled", msg)
						}
						res := r.result(t, 1)
						if res.IsError || !strings.Contains(res.text(), "action=accept") || !strings.Contains(res.text(), "quinn") {
							t.Fatalf("isError=%v: %s", res.IsError, res.text())
						}
					})
					t.Run("test_sampling", func(t *testing.T) {
						if n := len(r.of("sampling", 2)); n != 1 {
							t.Errorf("the host's sampling handler was asked %d times, want once", n)
						}
						res := r.result(t, 2)
						if res.IsError || !strings.Contains(res.text(), "LLM response: hi from the host") {
							t.Fatalf("isError=%v: %s", res.IsError, res.text())
						}
					})
					t.Run("multi_round", func(t *testing.T) {
						asked := r.of("elicitation", 3)
						if len(asked) != 2 {
							t.Errorf("the host was asked %d times, want twice (name, then color)", len(asked))
						}
						for _, e := range asked {
							if e.Unscripted {
								t.Errorf("an unexpected question: %v", e.Message)
							}
						}
						res := r.result(t, 3)
						if res.IsError || !strings.Contains(res.text(), "Multi-round complete: Ann likes blue") {
							t.Errorf("isError=%v: %q", res.IsError, res.text())
						}
						// The downstream's own state ("round=...") is its
						// business: quiver seals what it hands the host.
						for _, w := range r.of("wire", 3) {
							var m struct {
								Result *struct {
									RequestState string `json:"requestState"`
								} `json:"result"`
							}
							if w.Dir == "in" && json.Unmarshal(w.Msg, &m) == nil && m.Result != nil && strings.Contains(m.Result.RequestState, "round=") {
								t.Errorf("the host received the downstream's requestState as is: %q", m.Result.RequestState)
							}
						}
					})
				})
			}
		})
	}
}

// TestModernNegotiatesAuto: a client that lets the SDK choose ("auto")
// lands on 2026-07-28 with quiver, over stdio and HTTP.
func TestModernNegotiatesAuto(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			m := newModernHost(t, tr, exampleConfig("auto", ""))
			r := m.run(t, "auto", tsStep{Op: "listTools", Until: builtins})
			r.connected(t, modernVersion)
			if tools := r.of("tools", 0); len(tools) != 1 || !containsAll(tools[0].Names, builtins) {
				t.Fatalf("tools/list lacks quiver's own tools %v", builtins)
			}
		})
	}
}
