package registry

import (
	"cmp"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// lineLogger turns a child's stderr into log lines tagged with the server,
// redacted. A line without its newline is logged once the child has been
// quiet for a moment: a server's last words before it dies ("Error: no
// token") often lack one, and mcp-go does not say when the stream ends. A
// line longer than maxStderrPiece is logged in pieces.
//
// Redaction happens before any cut, and no cut falls inside a secret: a
// piece never ends with what could be the start of a known secret or of a
// credential's shape while more may follow, so no secret is logged half in
// one record and half in the next, where neither half would match. What is
// held back waits for the rest, or for a second quiet moment: then it is
// logged (a known secret's start, or a token being written, as
// [redacted:NAME]) and kept as context, so that if the rest comes after
// all, the rest is redacted too. A private key printed over several lines
// is logged as one [redacted:private-key].
type lineLogger struct {
	log    *slog.Logger
	redact []Secret
	quiet  time.Duration // how long a partial line waits for its end; 0: partialLineWait

	mu    sync.Mutex
	buf   []byte // output not logged yet
	timer *time.Timer
	// carry is the end of what was logged last, when it could be the start
	// of a secret: context for buf, never logged again.
	carry string
	// held is set when a quiet moment found the end of buf held back; the
	// next quiet moment without new output logs it all.
	held bool
	// inKey counts the lines of a private key being skipped (0: none).
	inKey int
	// tail holds the last lines logged (redacted), and lastWrite when the
	// child last wrote: the reason a server failed to start quotes them
	// (npm's E404 says more than "transport closed").
	tail      []string
	lastWrite time.Time
}

// tailLines and tailLineLen bound what a failure reason quotes of stderr.
const (
	tailLines   = 4
	tailLineLen = 300
)

// lastWords returns the last lines the child wrote, redacted, joined with
// " | ", once its stderr has been quiet for a moment or at most wait: the
// child's last words often come just as its stdout closes.
func (l *lineLogger) lastWords(wait time.Duration) string {
	start := time.Now()
	deadline := start.Add(wait)
	for {
		l.mu.Lock()
		// Quiet since the last write, or since the ask when nothing came
		// yet: the pipe may still hold what the child wrote as it died.
		since := start
		if l.lastWrite.After(since) {
			since = l.lastWrite
		}
		quiet := len(l.buf) == 0 && time.Since(since) > 150*time.Millisecond
		words := strings.Join(l.tail, " | ")
		l.mu.Unlock()
		if quiet || time.Now().After(deadline) {
			return words
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// chatter reports whether a child's stderr line is a package manager's
// aside rather than the server's account of what went wrong: npm's "new
// version available" notice and its warnings come after the 404 that
// says the package does not exist, and would push it out of the last
// words a failed start quotes (issue 29). They are still logged.
func chatter(line string) bool {
	l := strings.ToLower(strings.TrimSpace(line))
	return strings.HasPrefix(l, "npm notice") || strings.HasPrefix(l, "npm warn")
}

// RootsUnavailable is what quiver answers a server's roots/list with when
// no host can give roots: none is connected yet (servers start first), or
// the host has no roots. A server that logs the answer is told the usual,
// so its stderr line saying so is logged at DEBUG, not at every start.
const RootsUnavailable = "no host gives roots now; keep the folders you were given"

const (
	partialLineWait = 500 * time.Millisecond
	// maxStderrPiece is the longest piece of a line without a newline that
	// waits for the rest; more is logged in pieces.
	maxStderrPiece = 8 << 10
	// stderrWindow is how far past maxStderrPiece a cut looks for a secret
	// that would straddle it; longer secrets are not expected.
	stderrWindow = maxStderrPiece + 4<<10
	// maxKeyLines bounds the lines skipped as a private key whose END
	// never comes.
	maxKeyLines = 256
)

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	l.lastWrite = time.Now()
	l.held = false
	l.drain()
	if len(l.buf) > 0 {
		l.arm()
	}
	return len(p), nil
}

func (l *lineLogger) arm() {
	quiet := cmp.Or(l.quiet, partialLineWait)
	if l.timer == nil {
		l.timer = time.AfterFunc(quiet, l.flush)
	} else {
		l.timer.Reset(quiet)
	}
}

// drain logs every complete line of buf and, while the partial line is too
// long, pieces of it, cutting nowhere a secret could straddle.
func (l *lineLogger) drain() {
	for len(l.buf) > 0 {
		n, base := len(l.buf), len(l.carry)
		text := l.carry + string(l.buf[:min(n, stderrWindow)])
		atEnd := len(text)-base == n
		limit := len(text)
		if atEnd {
			// More may come: keep back what could be a secret's start.
			limit = max(base, l.holdFrom(text))
		}
		cut := base + strings.LastIndexByte(text[base:limit], '\n') + 1
		if n-(cut-base) > maxStderrPiece {
			cut = limit
			if !atEnd {
				cut = base + maxStderrPiece
			}
		}
		spans := l.spans(text)
		if cut = outsideSpans(spans, base, cut); cut > limit {
			cut = base // the end of a secret begun in the carry is still coming
		}
		if cut <= base {
			if atEnd {
				return // wait for the rest
			}
			cut = base + maxStderrPiece // a "secret" longer than a piece: cut it anyway
		}
		l.emit(maskCarried(text, spans, base, cut))
		l.buf = l.buf[cut-base:]
		l.carry = ""
	}
}

// flush runs when the child has been quiet for a moment. It logs the
// partial line, unless its end could be the start of a secret: that waits
// for one more quiet moment, and is then logged with that start redacted
// and kept as carry.
func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return
	}
	base := len(l.carry)
	text := l.carry + string(l.buf)
	hold := l.holdFrom(text)
	if hold == len(text) {
		l.emit(maskCarried(text, l.spans(text), base, len(text)))
		l.buf, l.carry, l.held = l.buf[:0], "", false
		return
	}
	if !l.held {
		l.held = true
		l.arm()
		return
	}
	l.held = false
	spans := l.spans(text)
	out := maskCarried(text, spans, base, len(text))
	mask := len(text)
	name := ""
	if i, v := l.knownTail(text); i < len(text) && len(text)-i >= 4 {
		mask, name = i, v
	}
	if j := credentialTail(text); j < mask {
		mask, name = j, "credential"
	}
	if mask < len(text) {
		out = maskCarried(text, spans, base, max(mask, base)) + "[redacted:" + name + "]"
	}
	l.emit(out)
	l.carry = text[hold:]
	l.buf = l.buf[:0]
}

// emit redacts text and logs its lines; a private key's lines (when its
// BEGIN and END came in different pieces) are skipped.
func (l *lineLogger) emit(text string) {
	for _, line := range strings.Split(Redact(text, l.redact), "\n") {
		line = strings.TrimRight(line, "\r")
		if l.inKey > 0 {
			end := strings.Index(line, "-----END ")
			if end < 0 || !strings.Contains(line[end:], "PRIVATE KEY-----") {
				if l.inKey++; l.inKey > maxKeyLines {
					l.inKey = 0
				}
				continue
			}
			l.inKey = 0
			rest := line[end:]
			line = rest[strings.Index(rest, "PRIVATE KEY-----")+len("PRIVATE KEY-----"):]
		}
		if i := strings.Index(line, "-----BEGIN "); i >= 0 && strings.Contains(line[i:], "PRIVATE KEY-----") {
			line, l.inKey = line[:i]+"[redacted:private-key]", 1
		}
		if strings.Contains(line, RootsUnavailable) {
			// The server quoting quiver's own answer to its roots/list
			// (server-filesystem does, at every start): normal, and not
			// what went wrong if the server fails.
			l.log.Debug("stderr: " + line)
			continue
		}
		if line != "" {
			l.log.Info("stderr: " + line)
			if strings.TrimSpace(line) != "" && !chatter(line) {
				if len(line) > tailLineLen {
					line = line[:tailLineLen] + "…"
				}
				l.tail = append(l.tail, strings.TrimSpace(line))
				if len(l.tail) > tailLines {
					l.tail = l.tail[len(l.tail)-tailLines:]
				}
			}
		}
	}
}

// holdFrom is where the tail of text starts that must wait for more output:
// the start of a known secret, of a credential's shape (a token being
// written, a word that begins one, "Bearer" and what follows), or of a
// private key's BEGIN line; len(text) when nothing must wait.
func (l *lineLogger) holdFrom(text string) int {
	hold, _ := l.knownTail(text)
	// The last word, and any part of it after a '-' (where \b lets a
	// shape begin): a token in progress, or the start of a literal.
	w := len(text)
	for w > 0 && isTokenByte(text[w-1]) {
		w--
	}
	word := text[w:]
	for i := 0; i < len(word); i++ {
		if i > 0 && word[i-1] != '-' {
			continue
		}
		if startsCredential(word[i:]) {
			hold = min(hold, w+i)
			break
		}
	}
	tail := text[max(0, len(text)-1024):]
	if m := trailingBearer.FindStringIndex(tail); m != nil {
		hold = min(hold, len(text)-len(tail)+m[0])
	}
	line := text[strings.LastIndexByte(text, '\n')+1:]
	if i := strings.Index(line, "-----BEGIN"); i >= 0 {
		hold = min(hold, len(text)-len(line)+i)
	}
	return hold
}

// knownTail finds the longest end of text that is the start of a known
// secret (as Redact knows its forms), and that secret's name; len(text)
// when there is none.
func (l *lineLogger) knownTail(text string) (int, string) {
	best, name := len(text), ""
	for _, sec := range l.redact {
		if len(sec.Value) < 4 {
			continue
		}
		for _, f := range secretForms(sec) {
			for k := min(len(f)-1, len(text)); k > len(text)-best; k-- {
				if strings.HasSuffix(text, f[:k]) {
					best, name = len(text)-k, sec.Var
					break
				}
			}
		}
	}
	return best, name
}

// A span is where a secret (a known value or a credential's shape) sits in
// a text, and its name.
type span struct {
	start, end int
	name       string
}

// spans finds every secret in text.
func (l *lineLogger) spans(text string) []span {
	var out []span
	for _, sec := range l.redact {
		if len(sec.Value) < 4 {
			continue
		}
		for _, f := range secretForms(sec) {
			for i := 0; ; {
				j := strings.Index(text[i:], f)
				if j < 0 {
					break
				}
				out = append(out, span{i + j, i + j + len(f), sec.Var})
				i += j + 1
			}
		}
	}
	for _, c := range credentialShapes {
		if slices.ContainsFunc(c.literals, func(lit string) bool { return strings.Contains(text, lit) }) {
			for _, m := range c.re.FindAllStringIndex(text, -1) {
				out = append(out, span{m[0], m[1], c.name})
			}
		}
	}
	return out
}

// outsideSpans moves cut out of any span it would fall inside: back to the
// span's start, or, for a span that started in the carry (before base,
// already logged in part), on to its end.
func outsideSpans(spans []span, base, cut int) int {
	for moved := true; moved; {
		moved = false
		for _, s := range spans {
			if s.start < cut && cut < s.end {
				if s.start < base {
					cut = s.end
				} else {
					cut = s.start
				}
				moved = true
			}
		}
	}
	return cut
}

// maskCarried is text[base:cut] with the rest of every secret that began
// in the carry (text[:base]) replaced by [redacted:NAME]: Redact would not
// know a secret's tail on its own.
func maskCarried(text string, spans []span, base, cut int) string {
	from, name := base, ""
	for _, s := range spans {
		if s.start < base && s.end > from {
			from, name = min(s.end, cut), s.name
		}
	}
	if from == base {
		return text[base:cut]
	}
	return "[redacted:" + name + "]" + text[from:cut]
}

// credentialTail is where a credential being written at the end of text
// starts (a word with a credential's first literal in it, or "Bearer" and
// some of a token); len(text) when there is none.
func credentialTail(text string) int {
	w := len(text)
	for w > 0 && isTokenByte(text[w-1]) {
		w--
	}
	word := text[w:]
	for i := 0; i < len(word); i++ {
		if (i == 0 || word[i-1] == '-') && slices.ContainsFunc(credentialStarts, func(lit string) bool { return strings.Contains(word[i:], lit) }) {
			return w + i
		}
	}
	tail := text[max(0, len(text)-1024):]
	if m := trailingBearer.FindStringSubmatchIndex(tail); m != nil && m[3] > m[2] {
		return len(text) - len(tail) + m[0]
	}
	return len(text)
}

// credentialStarts are the literals a credential's shape begins with.
var credentialStarts = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "xox", "sk-", "-----BEGIN"}

// startsCredential reports whether s, the end of a word, is or may become
// the start of a credential: it has a credential's first literal in it, or
// is the beginning of one.
func startsCredential(s string) bool {
	for _, lit := range credentialStarts {
		if strings.Contains(s, lit) || strings.HasPrefix(lit, s) {
			return true
		}
	}
	return strings.HasPrefix("bearer", strings.ToLower(s))
}

// isTokenByte reports whether b may be part of a token's word.
func isTokenByte(b byte) bool {
	return b == '_' || b == '-' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// trailingBearer matches "Bearer" and a token being written at the end.
var trailingBearer = regexp.MustCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9._~+/=-]*)$`)
