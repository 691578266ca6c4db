package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/quiver-mcp/quiver/registry"
)

// The exit is the one way out. Every JSON-RPC message quiver writes to the
// host — responses, errors, server-to-client requests (approval cards,
// relayed sampling and elicitation) and notifications — passes through
// exit.message as the bytes that are actually sent, over stdio and over
// HTTP alike. There it is redacted (the configuration's secrets and the
// credential shapes, in every string and key) and, when it carries a
// result larger than the configured bound, cut.
//
// Earlier code redacted each field it knew of, and a field it did not know
// of (mcp-go's RawStructuredContent, sent as the downstream's own bytes)
// went out in clear. Working on the serialized message closes that class:
// a new method or a new field has no other way through.
//
// The typed steps before it (bound for tool results, the per-listing
// redaction) still run, because they can do better than bytes: keep a
// result valid against its output schema, keep search's index free of
// secrets. The exit is what makes them not load-bearing.
type exit struct {
	// settings gives the configuration in force at each message: its
	// secrets and its redactor.
	settings func() *settings
}

// exit is the one exit of s, reading the configuration in force at each
// message.
func (s *Server) exit() exit { return exit{settings: s.current} }

// boundSlack is room for the JSON-RPC envelope and the cut notice on top
// of the result bound: the bound is on what the tool said, not the frame.
const boundSlack = 1 << 10

// message returns msg as it may be sent: a held result's bytes in place
// (bytepath.go), redacted, and bounded when it is a result over the limit.
// msg is one JSON-RPC message without framing.
func (x exit) message(msg []byte) []byte {
	msg = spliced(msg)
	set := x.settings()
	return joinedRedact(x.strings(msg, set), set.cfg.Secrets)
}

// strings is message's work string by string: each string and key
// redacted alone, and the message bounded.
func (x exit) strings(msg []byte, set *settings) []byte {
	secrets, redact, limit := set.cfg.Secrets, set.redact.Redact, set.cfg.Surface.MaxResultBytes
	big := limit > 0 && len(msg) > limit+boundSlack
	if !big && clean(msg, secrets, redact) {
		return msg
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// Not JSON (never from mcp-go): redact the text as it is.
		return []byte(redact(string(msg)))
	}
	v, changed := redactValue(v, redact)
	if big && boundMessage(v, limit) {
		changed = true
	}
	if big {
		if r, ok := refuseOversized(v, limit); ok {
			v, changed = r, true
		}
	}
	if !changed {
		return msg
	}
	out, err := marshalPlain(v)
	if err != nil {
		return []byte(redact(string(msg)))
	}
	return out
}

// clean reports, without decoding, that msg has nothing to redact. The
// bytes of a JSON text differ from the strings it holds only at escapes,
// so it looks at a copy where each escape whose character can be part of
// no secret (\n, \t, \", <, & ...) is blanked to spaces of the same
// length: a match there is a match in the decoded strings, and a miss is a
// miss, because the blank is, like the character it stands for, neither a
// word character nor part of a secret. An escape that could stand for a
// word character (\u0067 is "g", \/ is "/") sends the message to the slow
// path, where it is decoded. A printable ASCII character (&, <, ", \\)
// is kept at the end of its escape's blanks: see below.
func clean(msg []byte, secrets []registry.Secret, redact func(string) string) bool {
	if bytes.IndexByte(msg, '\\') < 0 {
		return redact(string(msg)) == string(msg)
	}
	view := make([]byte, len(msg))
	copy(view, msg)
	for i := 0; i < len(view); i++ {
		if view[i] != '\\' || i+1 >= len(view) {
			continue
		}
		n, blank := 2, byte(' ')
		switch view[i+1] {
		case 'n', 'r':
			// A line break stays one, doubled to the escape's length: the
			// redactor judges a secret broken by one (registry's
			// spreadForms), and a blank would hide the break from it.
			view[i], view[i+1] = '\n', '\n'
			i++
			continue
		case 't', 'b', 'f', '"', '\\':
			if view[i+1] == '"' || view[i+1] == '\\' {
				if secretHas(secrets, rune(view[i+1])) {
					return false
				}
			}
		case 'u':
			if i+6 > len(view) {
				return false
			}
			r, ok := blankable(view[i+2 : i+6])
			if !ok || secretHas(secrets, r) {
				return false
			}
			n = 6
			if r == '\n' || r == '\r' {
				blank = '\n'
			}
		default:
			return false
		}
		last := view[i+n-1]
		for j := i; j < i+n; j++ {
			view[j] = blank
		}
		// The character itself, when it is one no secret has, stays at
		// the escape's end, after blanks: \\x41 and \u0026#65; are
		// escapes in text, which the redactor decodes (registry's
		// skeletons) and a blank in their first byte would hide, while
		// blanks, like white space, are nothing in a skeleton.
		switch {
		case n == 2 && (last == '"' || last == '\\'):
			view[i+n-1] = last
		case n == 6 && blank == ' ':
			if r, _ := blankable(msg[i+2 : i+6]); r >= 0x21 && r < 0x7f {
				view[i+n-1] = byte(r)
			}
		}
		i += n - 1
	}
	return redact(string(view)) == string(view)
}

// blankable decodes the four hex digits of a \u escape and reports whether
// the character is one encoding/json escapes of its own accord (control
// characters, <, >, &, U+2028, U+2029, U+FFFD): none is a word character.
func blankable(hex []byte) (rune, bool) {
	var r rune
	for _, h := range hex {
		switch {
		case h >= '0' && h <= '9':
			r = r<<4 | rune(h-'0')
		case h >= 'a' && h <= 'f':
			r = r<<4 | rune(h-'a'+10)
		case h >= 'A' && h <= 'F':
			r = r<<4 | rune(h-'A'+10)
		default:
			return 0, false
		}
	}
	switch {
	case r < 0x20, r == '<', r == '>', r == '&', r == 0x2028, r == 0x2029, r == utf8.RuneError:
		return r, true
	}
	return r, false
}

func secretHas(secrets []registry.Secret, r rune) bool {
	for _, s := range secrets {
		if strings.ContainsRune(s.Value, r) {
			return true
		}
	}
	return false
}

// marshalPlain encodes v as mcp-go does (json.Marshal, whose escapes
// jsonLen counts), so that a size measured here is the size sent.
func marshalPlain(v any) ([]byte, error) { return json.Marshal(v) }

// boundMessage cuts an oversized result in place: the longest strings
// first, each at a character boundary with a notice, until the result
// fits the limit, and marks it _meta["quiver/truncated"]. A message
// without a result (a request, a notification, an error) is bounded the
// same way in its params or error; listings (tools, prompts, resources)
// and initialize are never cut: they are quiver's own and a cut would
// break them. It reports whether it cut anything.
func boundMessage(v any, limit int) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	body, key := m["result"], "result"
	if body == nil {
		if body, key = m["params"], "params"; body == nil {
			body, key = m["error"], "error"
		}
	}
	obj, ok := body.(map[string]any)
	if !ok {
		return false
	}
	if key == "result" && (isListing(obj) || isInputRequired(obj)) {
		// A listing is quiver's own; an input_required result's request
		// state must come back as it went (refuseOversized judges both).
		return false
	}
	total := jsonSize(obj)
	if total <= limit {
		return false
	}
	if key == "result" && fitCompletion(obj, limit-200) {
		total = jsonSize(obj)
	}
	shorten(obj, total-limit+200) // room for the mark
	if key == "result" {
		leaveOut(obj, limit-200) // many small parts (output.go)
	} else if key == "params" {
		// A notification (a log record's data, say) or a request of many
		// small parts: no item of it is long enough to cut, so what does
		// not fit is left out (red team 3: 40,000 short records in one
		// notifications/message reached the host whole). A request a
		// downstream makes of the host is refused to it before it gets
		// here when it is too large (relay_asks.go): what is left is
		// quiver's own.
		fitParams(obj, limit-200)
	}
	meta, _ := obj["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["quiver/truncated"] = true
	obj["_meta"] = meta
	return true
}

// isListing reports whether a result is a listing or initialize's: quiver's
// own, never cut.
func isListing(obj map[string]any) bool {
	for _, listing := range []string{"tools", "prompts", "resources", "resourceTemplates", "protocolVersion"} {
		if _, ok := obj[listing]; ok {
			return true
		}
	}
	return false
}

// isInputRequired reports whether a result asks the host for input
// (2026-07-28): its requests and its state go as they are, or not at all.
func isInputRequired(obj map[string]any) bool {
	_, reqs := obj["inputRequests"]
	_, state := obj["requestState"]
	return reqs || state || obj["resultType"] == "input_required"
}

// maxCompletionValues is the most values a completion result may hold
// (the MCP specification: "values: ... max 100 items").
const maxCompletionValues = 100

// fitCompletion cuts a completion/complete result's values to the
// specification's 100 and to budget bytes, from the end, and says so the
// way the specification has it: hasMore, and total (a host shows "and N
// more"). It reports whether the result was a completion it cut.
func fitCompletion(obj map[string]any, budget int) bool {
	c, ok := obj["completion"].(map[string]any)
	if !ok {
		return false
	}
	values, ok := c["values"].([]any)
	if !ok {
		return false
	}
	n := len(values)
	if n > maxCompletionValues {
		values = values[:maxCompletionValues]
	}
	c["values"] = values
	// Measured once, then less each value left out: a value may be
	// large, and measuring the whole again for each would cost its size
	// a hundred times.
	for size := jsonSize(obj); len(values) > 0 && size > budget; {
		size -= jsonSize(values[len(values)-1]) + 1
		values = values[:len(values)-1]
	}
	c["values"] = values
	if len(values) == n {
		return false
	}
	total := n
	if t, ok := c["total"].(json.Number); ok {
		if v, err := t.Int64(); err == nil && int(v) > total {
			total = int(v)
		}
	}
	c["total"], c["hasMore"] = total, true
	return true
}

// refuseOversized is the last word on a message still over the bound once
// it has been cut where it could be: a response (an input_required result,
// an error whose data is many small parts, anything no cut could bring
// within the bound) becomes a JSON-RPC error for its id that says so, and
// is not sent whole. Listings and initialize are quiver's own and pass; a
// request or a notification has been cut to fit (boundMessage).
func refuseOversized(v any, limit int) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, false
	}
	id, hasID := m["id"]
	if _, method := m["method"]; method || !hasID {
		return v, false
	}
	if res, ok := m["result"].(map[string]any); ok && isListing(res) {
		return v, false
	}
	size := jsonSize(m)
	if size <= limit+boundSlack {
		return v, false
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": -32603,
		"message": fmt.Sprintf("quiver: the answer is %d bytes, over the %d bytes quiver sends a host in one message "+
			"(surface.max_result_bytes), and it could not be cut to fit; ask for less (a narrower query, a range, fewer items).", size, limit),
	}}, true
}

// cutNotice ends a string shortened by shorten.
const cutNotice = "\n[quiver: cut here: %d of %d bytes not shown; ask for less]"

// shorten cuts the longest strings under v, each at a character boundary
// with a notice saying how much is gone, until their JSON forms have lost
// at least over bytes. The cut is level: every string longer than some
// length is cut to that length, so that when the text and a structured
// copy of it are both large, each keeps a readable part (cutting the
// longest by the whole excess left nothing of it). Short strings are
// names, URIs and types: cutting them would break the value and cannot be
// what made it large. It reports whether it cut anything.
func shorten(v any, over int) bool {
	const minCut = 512
	var strs []*cutString
	collectStrings(v, func(s *cutString) {
		if len(s.get()) >= minCut {
			strs = append(strs, s)
		}
	})
	if over <= 0 || len(strs) == 0 {
		return false
	}
	sizes := make([]int, len(strs))
	for i, s := range strs {
		sizes[i] = jsonLen(s.get())
	}
	noticeLen := len(fmt.Sprintf(cutNotice, 1<<40, 1<<40))
	// saved is what cutting every string longer than level to level
	// saves, after the notices it adds.
	saved := func(level int) int {
		n := 0
		for _, sz := range sizes {
			if sz > level+noticeLen {
				n += sz - level - noticeLen
			}
		}
		return n
	}
	// The highest level that still saves enough.
	lo, hi := 0, slices.Max(sizes)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if saved(mid) >= over {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	level := lo
	cut := false
	for i, s := range strs {
		if sizes[i] <= level+noticeLen {
			continue
		}
		cur := s.get()
		keep := prefixWithin(cur, level)
		s.set(cur[:keep] + fmt.Sprintf(cutNotice, len(cur)-keep, len(cur)))
		cut = true
	}
	return cut
}

// cutString is a handle on one string inside a decoded JSON value.
type cutString struct {
	get func() string
	set func(string)
}

// collectStrings hands every string value under v (not keys: a cut key
// would change the shape) to f.
func collectStrings(v any, f func(*cutString)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, ok := e.(string); ok {
				f(&cutString{get: func() string { return x[k].(string) }, set: func(n string) { x[k] = n }})
				continue
			}
			collectStrings(e, f)
		}
	case []any:
		for i, e := range x {
			if _, ok := e.(string); ok {
				f(&cutString{get: func() string { return x[i].(string) }, set: func(n string) { x[i] = n }})
				continue
			}
			collectStrings(e, f)
		}
	}
}

func jsonSize(v any) int {
	b, err := marshalPlain(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// jsonLen is the exact length of s as a JSON string (quotes included) the
// way encoding/json writes it: control characters, quotes and backslashes
// escaped, <, > and & as \u escapes, invalid UTF-8 as \ufffd, U+2028
// and U+2029 as \u escapes.
func jsonLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n += asciiLen(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == 0x2028 || r == 0x2029:
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

func asciiLen(c byte) int {
	switch c {
	case '"', '\\', '\n', '\r', '\t', '\b', '\f':
		return 2
	}
	if c < 0x20 || c == '<' || c == '>' || c == '&' {
		return 6
	}
	return 1
}

// prefixWithin is the length of the longest prefix of s, ending at a
// character boundary, whose JSON string form is at most budget bytes.
func prefixWithin(s string, budget int) int {
	n := 2
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		w := size
		switch {
		case size == 1 && s[i] < utf8.RuneSelf:
			w = asciiLen(s[i])
		case r == utf8.RuneError && size == 1, r == 0x2028, r == 0x2029:
			w = 6
		}
		if n+w > budget {
			return i
		}
		n += w
		i += size
	}
	return len(s)
}

// lineExit is the exit for a stream of newline-framed messages (stdio).
type lineExit struct {
	mu  sync.Mutex
	w   io.Writer
	x   exit
	buf []byte
}

func (l *lineExit) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(p); len(l.buf) == 0 && n > 1 && p[n-1] == '\n' && bytes.IndexByte(p[:n-1], '\n') < 0 {
		// One whole message, as mcp-go writes them: no copy, and when it
		// needs no change, written as it came.
		if out := l.x.message(p[:n-1]); len(out) != n-1 || &out[0] != &p[0] {
			p = append(out[:len(out):len(out)], '\n')
		}
		if _, err := l.w.Write(p); err != nil {
			return n, err
		}
		return n, nil
	}
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		line := l.buf[:i]
		var err error
		if len(bytes.TrimSpace(line)) == 0 {
			_, err = l.w.Write([]byte("\n"))
		} else {
			out := l.x.message(line)
			_, err = l.w.Write(append(out[:len(out):len(out)], '\n'))
		}
		l.buf = l.buf[i+1:]
		if err != nil {
			return len(p), err
		}
	}
	if len(l.buf) == 0 {
		l.buf = nil
	}
	return len(p), nil
}

// httpExit puts the exit in front of an HTTP handler: a JSON answer is
// rewritten whole, an event stream event by event.
func httpExit(next http.Handler, x exit) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ew := &exitWriter{ResponseWriter: w, x: x}
		next.ServeHTTP(ew, r.WithContext(throughExit(r.Context())))
		ew.finish()
	})
}

// exitWriter is the ResponseWriter httpExit hands on.
type exitWriter struct {
	http.ResponseWriter
	x           exit
	wroteHeader bool
	mode        int // 0 pass, 1 JSON body, 2 event stream
	code        int
	body        bytes.Buffer
}

const (
	passBody = iota
	jsonBody
	eventBody
)

func (w *exitWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	ct := w.Header().Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		// Written at finish, when its new length is known.
		w.mode, w.code = jsonBody, code
		w.Header().Del("Content-Length")
		return
	case strings.HasPrefix(ct, "text/event-stream"):
		w.mode = eventBody
		w.Header().Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *exitWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	switch w.mode {
	case jsonBody:
		return w.body.Write(p)
	case eventBody:
		w.body.Write(p)
		for {
			b := w.body.Bytes()
			i := bytes.Index(b, []byte("\n\n"))
			if i < 0 {
				return len(p), nil
			}
			ev := w.event(b[:i])
			w.body.Next(i + 2)
			if _, err := w.ResponseWriter.Write(ev); err != nil {
				return len(p), err
			}
		}
	}
	return w.ResponseWriter.Write(p)
}

// event rewrites one server-sent event: its data lines are one message.
func (w *exitWriter) event(ev []byte) []byte {
	var out, data bytes.Buffer
	hasData := false
	for _, line := range bytes.Split(ev, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(d, []byte(" ")))
			hasData = true
			continue
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	if hasData {
		msg := w.x.message(data.Bytes())
		for _, l := range bytes.Split(msg, []byte("\n")) {
			out.WriteString("data: ")
			out.Write(l)
			out.WriteByte('\n')
		}
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func (w *exitWriter) Flush() {
	if w.mode == jsonBody {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *exitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *exitWriter) finish() {
	switch w.mode {
	case jsonBody:
		body := bytes.TrimSpace(w.body.Bytes())
		if len(body) > 0 {
			body = w.x.message(body)
		}
		w.ResponseWriter.WriteHeader(w.code)
		_, _ = w.ResponseWriter.Write(body)
	case eventBody:
		if rest := bytes.TrimSpace(w.body.Bytes()); len(rest) > 0 {
			_, _ = w.ResponseWriter.Write(w.event(rest))
		}
	}
}
