package registry

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
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

// leaks reports a fragment of secret (6 bytes or more) found in out: what a
// secret cut in two and redacted half by half leaves in the clear.
func leaks(out, secret string) string {
	const n = 6
	for i := 0; i+n <= len(secret); i++ {
		if strings.Contains(out, secret[i:i+n]) {
			return secret[i : i+n]
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
			for pad := maxStderrPiece - len(tc.secret) - 2; pad <= maxStderrPiece+2; pad += 3 {
				for split := 1; split < len(tc.secret); split += 4 {
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
// secret gets neither part logged in the clear, whether the rest comes
// after one quiet moment (the start is held back), after two or more (the
// start was logged, redacted or too short to tell, and the rest is
// redacted as the rest of that secret), or never.
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
		for _, split := range []int{1, 2, 4, 9, 20} {
			for pauses := 1; pauses <= 3; pauses++ {
				l, sink := newTestLineLogger(tc.secrets, time.Hour)
				l.Write([]byte("Error: the token " + tc.secret[:split]))
				for range pauses {
					l.flush() // what the timer does after a quiet moment
				}
				l.Write([]byte(tc.secret[split:] + " was refused\n"))
				out := logged(sink)
				if frag := leaks(out, tc.secret); frag != "" || !strings.Contains(out, "[redacted:") || !strings.HasSuffix(out, " was refused\n") {
					t.Errorf("%s, split %d, %d pauses: %q leaked or the line is missing; logged:\n%s", tc.name, split, pauses, frag, out)
				}
				if pauses == 1 && len(sink.records()) != 1 {
					t.Errorf("%s, split %d: the line was cut at one pause:\n%s", tc.name, split, out)
				}
				if split >= 4 && strings.Contains(out, tc.secret[:4]) {
					t.Errorf("%s, split %d, %d pauses: the secret's start was logged:\n%s", tc.name, split, pauses, out)
				}
			}
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

// TestStderrRandomCuts writes lines full of secrets in random pieces with
// random quiet moments between them: no secret ever shows, in part or
// whole, and the words around them all do.
func TestStderrRandomCuts(t *testing.T) {
	t.Parallel()
	const known = "hunter2-hunter2-pw"
	shapes := []string{"ghp_0123456789abcdefghijABCDEFGHIJklmnopqr", "AKIAABCDEFGHIJKLMNOP", "Bearer abcdefghijklmnop0123456789",
		"xoxb-0123456789-abcdefghij", "sk-proj-abcdefghijklmnopqrstuvwx"}
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		var b strings.Builder
		var words []string
		for i := range 6 {
			w := fmt.Sprintf("word%d-%d", iter, i)
			words = append(words, w)
			b.WriteString(w + " ")
			switch rng.IntN(3) {
			case 0:
				b.WriteString(known + " ")
			case 1:
				b.WriteString(shapes[rng.IntN(len(shapes))] + " ")
			}
			if rng.IntN(4) == 0 {
				b.WriteString("\n")
			}
		}
		text := b.String() + "end\n"
		l, sink := newTestLineLogger([]Secret{{Var: "PW", Value: known}}, time.Hour)
		for len(text) > 0 {
			n := min(len(text), 1+rng.IntN(12))
			l.Write([]byte(text[:n]))
			text = text[n:]
			if rng.IntN(4) == 0 {
				for range 1 + rng.IntN(3) {
					l.flush()
				}
			}
		}
		out := logged(sink)
		for _, sec := range append([]string{known}, shapes...) {
			if frag := leaks(out, strings.TrimPrefix(sec, "Bearer ")); frag != "" {
				t.Fatalf("iteration %d: %q leaked:\n%s", iter, frag, out)
			}
		}
		for _, w := range words {
			// A quiet moment may cut a line, a word with it.
			if !strings.Contains(strings.ReplaceAll(out, "\n", ""), w) {
				t.Fatalf("iteration %d: %q is missing:\n%s", iter, w, out)
			}
		}
	}
}

// BenchmarkStderr measures a chatty child: 100-byte lines in 4 KiB writes,
// ten secrets to look for, none present.
func BenchmarkStderr(b *testing.B) {
	var secrets []Secret
	for i := range 10 {
		secrets = append(secrets, Secret{Var: fmt.Sprintf("S%d", i), Value: fmt.Sprintf("secret-value-%d-abcdefgh", i)})
	}
	line := strings.Repeat("request handled in 3ms path=/v1/items status=200 ", 3)[:99] + "\n"
	chunk := []byte(strings.Repeat(line, 41))
	log := slog.New(slog.DiscardHandler)
	b.Run("lineLogger", func(b *testing.B) {
		l := &lineLogger{log: log, redact: secrets, quiet: time.Hour}
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			l.Write(chunk)
		}
	})
	// The baseline: what logging costs with one Redact a line and no care
	// for cuts (the lineLogger before secrets were kept whole).
	b.Run("redact-per-line", func(b *testing.B) {
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			for _, ln := range strings.SplitAfter(string(chunk), "\n") {
				if ln != "" {
					log.Info("stderr: " + Redact(strings.TrimSuffix(ln, "\n"), secrets))
				}
			}
		}
	})
}

// TestStderrLastWordsSkipNpmChatter: the last words of a failed npx start
// are npm's error lines (the 404 naming the package), not the "new version
// available" notice printed after them; the notice is still logged
// (issue 29).
func TestStderrLastWordsSkipNpmChatter(t *testing.T) {
	t.Parallel()
	l, sink := newTestLineLogger(nil, 10*time.Millisecond)
	l.Write([]byte("npm error code E404\n" +
		"npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-filesytem - Not found\n" +
		"npm notice\nnpm notice New major version of npm available! 10.9.2 -> 11.6.0\n" +
		"npm notice Changelog: https://github.com/npm/cli/releases/tag/v11.6.0\nnpm notice To update run: npm install -g npm@11.6.0\nnpm notice\n" +
		"npm warn exec The following package was not found and will be installed\n"))
	words := l.lastWords(time.Second)
	if !strings.Contains(words, "npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-filesytem") || strings.Contains(words, "notice") || strings.Contains(words, "npm warn") {
		t.Errorf("last words %q; want npm's error lines, without its notices", words)
	}
	if !strings.Contains(logged(sink), "npm notice New major version") {
		t.Errorf("the notice must still be logged:\n%s", logged(sink))
	}
}
