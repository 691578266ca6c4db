package proxy

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
)

// TestNormalUseIsQuiet is issue 17's point 6: what happens in every
// normal session (server-filesystem asking for roots before any call, the
// host closing stdout with answers on their way) is no INFO or WARN line.
func TestNormalUseIsQuiet(t *testing.T) {
	for _, tc := range []struct {
		method string
		err    error
		want   slog.Level
	}{
		{"roots/list", fmt.Errorf("%w: nothing is in flight", errNoSession), slog.LevelDebug},
		{"roots/list", fmt.Errorf("%w: no roots", errNoCapability), slog.LevelDebug},
		{"sampling/createMessage", fmt.Errorf("%w: no sampling", errNoCapability), slog.LevelInfo},
		{"sampling/createMessage", fmt.Errorf("%w: nothing is in flight", errNoSession), slog.LevelWarn},
	} {
		if got := notRelayedLevel(tc.method, tc.err); got != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.method, tc.err, got, tc.want)
		}
	}
	var buf bytes.Buffer
	w := slogWriter{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	fmt.Fprintf(w, "Error writing response: write /dev/stdout: %v\n", os.ErrClosed)
	if buf.Len() != 0 {
		t.Errorf("a closed stdout was logged at INFO or above: %s", &buf)
	}
	fmt.Fprintf(w, "Error writing response: invalid character\n")
	if !strings.Contains(buf.String(), "level=WARN") {
		t.Errorf("another write error must stay a WARN: %q", &buf)
	}
}
