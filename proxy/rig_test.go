package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/registry"
)

// The rig drives a real Server through mcp-go's HandleMessage, with
// hand-made sessions: the bytes it checks are the bytes a transport would
// write, and the clock is the rig's.

const rigConfig = rigServer + `
surface:
  always_on: [ex__current_time]
slash:
  review:
    description: Review the notes without changing anything.
    arguments:
      - name: topic
        description: What to review.
        required: true
    tools: [ex__notes_list, ex__notes_search]
    activity: review
    allow: ["ex__notes_*"]
    pins:
      ex__notes_search: {limit: 5}
  tidy:
    description: Delete stale notes.
    tools: [ex__notes_delete]
    activity: run
    gated: true
`

// rigServer declares the server the rig's tools belong to; the rig never
// starts it, it installs catalogs itself.
const rigServer = `
servers:
  ex:
    command: never-started
`

func rigTools() []registry.Tool {
	yes, no := true, false
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"limit":{"type":"integer"}},"additionalProperties":false}`)
	tool := func(name, desc string, readOnly, destructive bool) registry.Tool {
		ro, de := &no, &no
		if readOnly {
			ro = &yes
		}
		if destructive {
			de = &yes
		}
		return registry.Tool{Server: "ex", Name: strings.TrimPrefix(name, "ex__"), Exposed: name, Description: desc,
			InputSchema: schema, Annotations: mcp.ToolAnnotation{ReadOnlyHint: ro, DestructiveHint: de, OpenWorldHint: &no}}
	}
	return []registry.Tool{
		tool("ex__current_time", "Tell the current time.", true, false),
		tool("ex__notes_add", "Save a new note with a title and a body.", false, false),
		tool("ex__notes_list", "List every saved note.", true, false),
		tool("ex__notes_search", "Find saved notes whose text matches a query.", true, false),
		tool("ex__notes_delete", "Delete a saved note for good.", false, true),
		tool("ex__web_fetch", "Fetch a web page over the network and return its text.", true, false),
		tool("ex__calendar_events", "List the calendar events of a day.", true, false),
	}
}

type rig struct {
	t   *testing.T
	s   *Server
	mu  sync.Mutex
	now time.Time
	log *bytes.Buffer
}

func newRig(t *testing.T, cfgText string, tools ...registry.Tool) *rig {
	t.Helper()
	cfg, err := registry.ParseConfig("test.yaml", []byte(cfgText), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), log: &bytes.Buffer{}}
	s, err := New(cfg, Options{
		Now:      func() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now },
		Logger:   slog.New(slog.NewTextHandler(lockedWriter{r}, nil)),
		StateDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	s.install(registry.NewCatalog(1, tools...))
	t.Cleanup(func() { _ = s.Close() })
	return r
}

type lockedWriter struct{ r *rig }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	return w.r.log.Write(p)
}

func (r *rig) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

func (r *rig) sleep(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

type testSession struct {
	id    string
	notes chan mcp.JSONRPCNotification
	ready atomic.Bool
}

func (ts *testSession) Initialize()                                         { ts.ready.Store(true) }
func (ts *testSession) Initialized() bool                                   { return ts.ready.Load() }
func (ts *testSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return ts.notes }
func (ts *testSession) SessionID() string                                   { return ts.id }

// A conn is one host session; turn, when set, goes out as _meta["quiver/turn"].
type conn struct {
	r    *rig
	sess *testSession
	ctx  context.Context
	turn any
	id   int
}

func (r *rig) connect(id string) *conn {
	r.t.Helper()
	sess := &testSession{id: id, notes: make(chan mcp.JSONRPCNotification, 64)}
	ctx := context.Background()
	if err := r.s.mcp.RegisterSession(ctx, sess); err != nil {
		r.t.Fatal(err)
	}
	c := &conn{r: r, sess: sess, ctx: r.s.mcp.WithContext(ctx, sess)}
	c.rpc("initialize", map[string]any{"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "rig", "version": "1"}})
	sess.Initialize()
	return c
}

// rpc sends one request and returns the response as written on the wire.
func (c *conn) rpc(method string, params map[string]any) []byte {
	c.r.t.Helper()
	c.id++
	if params == nil {
		params = map[string]any{}
	}
	if c.turn != nil && method != "initialize" {
		params["_meta"] = map[string]any{TurnMeta: c.turn}
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	out, err := json.Marshal(c.r.s.mcp.HandleMessage(c.ctx, msg))
	if err != nil {
		c.r.t.Fatalf("%s: marshal response: %v", method, err)
	}
	return out
}

// result decodes the result of a response, failing on a protocol error.
func (c *conn) result(resp []byte, v any) {
	c.r.t.Helper()
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp, &env); err != nil || env.Error != nil {
		c.r.t.Fatalf("response %s: %v", resp, err)
	}
	if err := json.Unmarshal(env.Result, v); err != nil {
		c.r.t.Fatalf("result %s: %v", env.Result, err)
	}
}

func (c *conn) list() []string {
	c.r.t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	c.result(c.rpc("tools/list", nil), &res)
	names := make([]string, 0, len(res.Tools))
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names
}

type callResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
}

func (r callResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func (c *conn) call(name string, args any) callResult {
	c.r.t.Helper()
	var res callResult
	c.result(c.rpc("tools/call", map[string]any{"name": name, "arguments": args}), &res)
	return res
}

func (c *conn) search(q string) callResult {
	c.r.t.Helper()
	return c.call("search_tools", map[string]any{"query": q})
}

// searchOne binds only the best hit, so a test knows what is bound.
func (c *conn) searchOne(q string) callResult {
	c.r.t.Helper()
	return c.call("search_tools", map[string]any{"query": q, "limit": 1})
}

// listBytes is the result of a tools/list exactly as written on the wire.
func (c *conn) listBytes() []byte {
	c.r.t.Helper()
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	resp := c.rpc("tools/list", nil)
	if err := json.Unmarshal(resp, &env); err != nil || env.Result == nil {
		c.r.t.Fatalf("tools/list: %s", resp)
	}
	return env.Result
}

func (c *conn) prompt(name string, args map[string]string) string {
	c.r.t.Helper()
	var res struct {
		Messages []struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	c.result(c.rpc("prompts/get", map[string]any{"name": name, "arguments": args}), &res)
	var parts []string
	for _, m := range res.Messages {
		parts = append(parts, m.Content.Text)
	}
	return strings.Join(parts, "\n")
}

// changes counts the list_changed notifications received since last asked.
func (c *conn) changes() int {
	n := 0
	for {
		select {
		case note := <-c.sess.notes:
			if note.Method == string(mcp.MethodNotificationToolsListChanged) {
				n++
			}
		default:
			return n
		}
	}
}

// code is the refusal code of a result, "" when it ran (or failed
// downstream: the rig has no downstream servers, so an allowed call ends
// in error.*).
func code(res callResult) string {
	if !res.IsError {
		return ""
	}
	c, _, _ := strings.Cut(res.text(), ":")
	if strings.HasPrefix(c, "error.") {
		return ""
	}
	return c
}

func wantCode(t *testing.T, res callResult, want string) {
	t.Helper()
	if got := code(res); got != want {
		t.Fatalf("want %s, got %q: %s", orRan(want), got, res.text())
	}
}

func orRan(code string) string {
	if code == "" {
		return "the call to run"
	}
	return fmt.Sprintf("refusal %s", code)
}
