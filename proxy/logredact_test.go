package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/quiver-mcp/quiver/registry"
)

// syncBuffer is a log sink the server's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestLoggerRedactsEveryLine: the logger quiver logs through hides the
// configuration's ${VAR} secrets from every message and attribute,
// whatever the line (red team 2: a progress token a server chose, holding
// a secret, was logged in clear), in groups, in With attributes and in
// errors alike.
func TestLoggerRedactsEveryLine(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a3210"
	t.Setenv("QUIVER_TEST_LOG_TOKEN", token)
	yaml := fmt.Sprintf("servers:\n  s:\n    command: %q\n    env: {TOKEN: \"${QUIVER_TEST_LOG_TOKEN}\"}\n", os.Args[0])
	cfg, err := registry.ParseConfig("servers.yaml", []byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	var sink syncBuffer
	s, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	s.log.Info("progress from "+token, "token", token, "err", errors.New("failed: "+token),
		slog.Group("g", "v", []string{token}))
	s.log.With("session", token).WithGroup("w").Warn("x", "n", 1)
	s.opts.Logger.Debug("options logger", "token", token)
	out := sink.String()
	if strings.Contains(out, token) {
		t.Errorf("a secret reached the log in clear:\n%s", out)
	}
	if n := strings.Count(out, "[redacted:QUIVER_TEST_LOG_TOKEN]"); n < 6 {
		t.Errorf("the log shows %d redactions, want 6:\n%s", n, out)
	}
}
