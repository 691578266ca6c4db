package registry

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func newTestLineLogger(secrets []Secret, quiet time.Duration) (*lineLogger, *logSink) {
	sink := &logSink{}
	return &lineLogger{log: slog.New(&recordHandler{sink: sink}), redact: secrets, quiet: quiet}, sink
}

// logged is every stderr record, one a line, without the "stderr: " tag.
func logged(sink *logSink) string {
	var b strings.Builder
	for _, r := range sink.records() {
		b.WriteString(strings.TrimPrefix(r.Msg, "stderr: ") + "\n")
	}
	return b.String()
}

// leaks reports a fragment of secret (8 bytes or more) found in out: what a
// secret cut in two and redacted half by half leaves in the clear.
func leaks(out, secret string) string {
	for i := 0; i+8 <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+8]) {
			return secret[i : i+8]
		}
	}
	return ""
}

// TestStderrSecretAcrossThePieceLimit: a line longer than the piece limit
// is logged in pieces, but never cut inside a secret, known or by shape,
// wherever the secret sits and however the child's writes split it.
func TestStderrSecretAcrossThePieceLimit(t *testing.T) {
	t.Parallel()
	const known = "s3cr3t-t0ken-value-0123456789"
	const shaped = "ghp_0123456789abcdefghijABCDEFGHIJklmnopqr"
	for _, tc := range []struct {
		name, secret string
		secrets      []Secret
	}{
		{"known", known, []Secret{{Var: "TOKEN", Value: known}}},
		{"shape", shaped, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for pad := maxStderrPiece - len(tc.secret) - 2; pad <= maxStderrPiece+2; pad++ {
				for split := 1; split < len(tc.secret); split += 3 {
					l, sink := newTestLineLogger(tc.secrets, time.Hour)
					line := strings.Repeat("x", pad) + " " + tc.secret + " and more"
					at := pad + 1 + split
					l.Write([]byte(line[:at]))
					l.Write([]byte(line[at:] + "\n"))
					out := logged(sink)
					if frag := leaks(out, tc.secret); frag != "" || !strings.Contains(out, "[redacted:") {
						t.Fatalf("pad %d, split %d: %q leaked; logged:\n%s", pad, split, frag, out[max(0, len(out)-200):])
					}
					if got := strings.Count(out, "x"); got != pad {
						t.Fatalf("pad %d, split %d: %d of the x's logged", pad, split, got)
					}
				}
			}
		})
	}
}

// TestStderrSecretAcrossAPause: a child that pauses in the middle of a
// secret gets neither half logged in the clear, whether the rest comes
// after one quiet moment or never.
func TestStderrSecretAcrossAPause(t *testing.T) {
	t.Parallel()
	const known = "s3cr3t-t0ken-value-0123456789"
	const shaped = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"
	for _, tc := range []struct {
		name, secret string
		secrets      []Secret
	}{
		{"known", known, []Secret{{Var: "TOKEN", Value: known}}},
		{"shape", shaped, nil},
	} {
		for _, split := range []int{1, 4, 9, 20} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, split), func(t *testing.T) {
				t.Parallel()
				quiet := 20 * time.Millisecond
				l, sink := newTestLineLogger(tc.secrets, quiet)
				l.Write([]byte("Error: the token " + tc.secret[:split]))
				time.Sleep(3 * quiet / 2) // one quiet moment
				l.Write([]byte(tc.secret[split:] + " was refused\n"))
				out := logged(sink)
				if frag := leaks(out, tc.secret); frag != "" || !strings.Contains(out, "[redacted:") || !strings.Contains(out, "was refused") {
					t.Errorf("%q leaked or the line is missing; logged:\n%s", frag, out)
				}
				if strings.Contains(out, tc.secret[:min(split, 6)]+"\n") && split >= 4 {
					t.Errorf("the secret's start was logged at the pause:\n%s", out)
				}
			})
		}
	}
	t.Run("never_finished", func(t *testing.T) {
		t.Parallel()
		quiet := 10 * time.Millisecond
		l, sink := newTestLineLogger([]Secret{{Var: "TOKEN", Value: known}}, quiet)
		l.Write([]byte("Error: the token " + known[:12]))
		eventually(t, 5*time.Second, "the held line logged", func() bool { return len(sink.records()) > 0 })
		if out := logged(sink); out != "Error: the token [redacted:TOKEN]\n" {
			t.Errorf("logged %q", out)
		}
	})
}

// TestStderrLastWordsStayWhole: a partial line that only looks like a
// secret's start is logged whole, a moment later, as one record.
func TestStderrLastWordsStayWhole(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"Error: cannot reach github", "Error: no Bearer", "Error: bad key s3c"} {
		l, sink := newTestLineLogger([]Secret{{Var: "TOKEN", Value: "s3cr3t-token-value"}}, 10*time.Millisecond)
		l.Write([]byte(line))
		eventually(t, 5*time.Second, "the last words logged", func() bool { return len(sink.records()) > 0 })
		time.Sleep(30 * time.Millisecond)
		if out := logged(sink); out != line+"\n" {
			t.Errorf("logged %q; want %q whole, once", out, line)
		}
	}
}

// TestStderrPrivateKey: a private key printed line by line, in as many
// writes, is logged as one [redacted:private-key].
func TestStderrPrivateKey(t *testing.T) {
	t.Parallel()
	l, sink := newTestLineLogger(nil, time.Hour)
	for _, w := range []string{"loading key: -----BEGIN RSA PRI", "VATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n",
		"kTLYBpX2Cf0Gz1ZiYdSeY8bkh0zLq6a5\n-----END RSA PRIVATE KEY-----\n", "done\n"} {
		l.Write([]byte(w))
	}
	if out := logged(sink); out != "loading key: [redacted:private-key]\ndone\n" {
		t.Errorf("logged %q", out)
	}
}
