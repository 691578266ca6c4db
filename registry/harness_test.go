package registry

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// testLookup resolves ${VAR} in test configs: BIN is this test binary, which
// serves MCP when childEnv is set (see TestMain); vars adds more.
func testLookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if name == "BIN" {
			return os.Args[0], true
		}
		v, ok := vars[name]
		return v, ok
	}
}

// harness is one running Registry with everything a test watches.
type harness struct {
	t    *testing.T
	reg  *Registry
	logs *logSink

	mu      sync.Mutex
	changes []*Catalog
}

// startRegistry parses yamlText (with testLookup(vars)), starts a registry
// on it and closes it when the test ends.
func startRegistry(t *testing.T, yamlText string, vars map[string]string, opts Options) *harness {
	t.Helper()
	cfg, err := ParseConfig("test.yaml", []byte(yamlText), testLookup(vars))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	h := &harness{t: t, logs: &logSink{}}
	if opts.Logger == nil {
		opts.Logger = slog.New(&recordHandler{sink: h.logs})
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 10 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 50 * time.Millisecond
	}
	opts.OnChange = func(c *Catalog) {
		h.mu.Lock()
		h.changes = append(h.changes, c)
		h.mu.Unlock()
	}
	h.reg = New(cfg, opts)
	h.reg.Start(context.Background())
	t.Cleanup(func() { h.reg.Close() })
	return h
}

// ready waits for Ready, failing the test after 15 s.
func (h *harness) ready() *Catalog {
	h.t.Helper()
	select {
	case <-h.reg.Ready():
	case <-time.After(15 * time.Second):
		h.t.Fatalf("Ready not closed after 15 s; catalog: %+v", h.reg.Catalog().Servers)
	}
	return h.reg.Catalog()
}

// seen returns the catalogs OnChange has been given so far.
func (h *harness) seen() []*Catalog {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.changes)
}

// call calls an exposed tool with a 10 s ceiling.
func (h *harness) call(exposed, args string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := h.reg.Call(ctx, exposed, []byte(args), nil)
	if err != nil {
		return "", err
	}
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		return "", err
	}
	return toolresult.Text(res), nil
}

// eventually polls cond every 10 ms until it holds, failing after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: still waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pidsIn lists the pids the children wrote into dir (see childPidDirEnv).
func pidsIn(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// needProc skips a test that watches processes through /proc where there
// is none (it fails under CI=true, where /proc is expected).
func needProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("/proc is needed: %v", err)
		}
		t.Skipf("/proc is needed to watch the children: %v", err)
	}
}

// running reports whether pid is a live process: present in /proc and not a
// zombie waiting for a parent that does not reap (PID 1 in a container may
// not).
func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// A logSink keeps every record a registry logs, flattened to text attrs.
type logSink struct {
	mu   sync.Mutex
	recs []logRecord
}

type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (s *logSink) records() []logRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs)
}

// find returns the records whose message contains msg and whose attrs
// include every key=value in attrs.
func (s *logSink) find(msg string, attrs ...string) []logRecord {
	var out []logRecord
	for _, r := range s.records() {
		if !strings.Contains(r.Msg, msg) {
			continue
		}
		ok := true
		for i := 0; i+1 < len(attrs); i += 2 {
			if r.Attrs[attrs[i]] != attrs[i+1] {
				ok = false
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

func (s *logSink) String() string {
	var b strings.Builder
	for _, r := range s.records() {
		b.WriteString(r.Level.String() + " " + r.Msg)
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range r.Attrs {
				if !yield(k) {
					return
				}
			}
		}) {
			b.WriteString(" " + k + "=" + r.Attrs[k])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// recordHandler is a slog.Handler that writes into a logSink.
type recordHandler struct {
	sink  *logSink
	attrs []slog.Attr
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.sink.mu.Lock()
	h.sink.recs = append(h.sink.recs, rec)
	h.sink.mu.Unlock()
	return nil
}

func (h *recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordHandler{sink: h.sink, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h *recordHandler) WithGroup(string) slog.Handler { return h }
