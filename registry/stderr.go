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
// credential's shape while more may follow, so no secret is ever logged
// half in one record and half in the next, where neither half would match.
// What is held back waits for the rest (or for a second quiet moment, when
// a known secret's start is logged as [redacted:VAR]). A private key
// printed over several lines is logged as one [redacted:private-key].
type lineLogger struct {
	log    *slog.Logger
	redact []Secret
	quiet  time.Duration // how long a partial line waits for its end; 0: partialLineWait

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer
	// held is set when a quiet moment found the end of buf held back; the
	// next quiet moment without new output logs it all.
	held bool
	// inKey counts the lines of a private key being skipped (0: none).
	inKey int
}

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
		n := len(l.buf)
		text := string(l.buf[:min(n, stderrWindow)])
		atEnd := len(text) == n
		limit := len(text)
		if atEnd {
			// More may come: keep back what could be a secret's start.
			limit = l.holdFrom(text)
		}
		cut := strings.LastIndexByte(text[:limit], '\n') + 1
		if n-cut > maxStderrPiece {
			cut = limit
			if !atEnd {
				cut = maxStderrPiece
			}
		}
		cut = l.outsideSpans(text, cut)
		if cut == 0 {
			if atEnd {
				return // wait for the rest
			}
			cut = maxStderrPiece // a "secret" longer than a piece: cut it anyway
		}
		l.emit(text[:cut])
		l.buf = l.buf[cut:]
	}
}

// flush runs when the child has been quiet for a moment. It logs the
// partial line, unless its end could be the start of a secret: that waits
// for one more quiet moment, and is then logged with the start redacted.
func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return
	}
	text := string(l.buf)
	if !l.held && len(text) <= stderrWindow && l.holdFrom(text) < len(text) {
		l.held = true
		l.arm()
		return
	}
	l.held = false
	if i, v := l.knownTail(text); i < len(text) && len(text)-i >= 4 {
		text = text[:i] + "[redacted:" + v + "]"
	}
	l.emit(text)
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
		if line != "" {
			l.log.Info("stderr: " + line)
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

// outsideSpans moves cut back to the start of any secret in text (a known
// value or a credential's shape) that it would fall inside.
func (l *lineLogger) outsideSpans(text string, cut int) int {
	if cut <= 0 || cut >= len(text) {
		return cut
	}
	var spans [][]int
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
				spans = append(spans, []int{i + j, i + j + len(f)})
				i += j + 1
			}
		}
	}
	for _, c := range credentialShapes {
		if slices.ContainsFunc(c.literals, func(lit string) bool { return strings.Contains(text, lit) }) {
			spans = append(spans, c.re.FindAllStringIndex(text, -1)...)
		}
	}
	for moved := true; moved; {
		moved = false
		for _, s := range spans {
			if s[0] < cut && cut < s[1] {
				cut, moved = s[0], true
			}
		}
	}
	return cut
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
var trailingBearer = regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]*$`)
