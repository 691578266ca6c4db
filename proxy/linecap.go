package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// MaxRequestLine is the most bytes one message from a host over stdio may
// have. mcp-go reads stdin a line at a time with no limit: a 64 MiB line
// was held whole, copied and decoded (289 MiB at peak, ~19 s, and once
// never answered; issue 22). A line over the cap is not read into memory
// at all: lineCap drops it as it streams past and quiver answers it with
// an error, so the host hears at once why, and the next request is served.
// 8 MiB is far above any request a host sends (arguments are a model's
// words and paths; file contents travel by path).
const MaxRequestLine = 8 << 20

// lineCap stands in front of a stdio server's input: it hands on whole
// lines of at most max bytes, and drops a longer one, telling tooLong the
// request's id (read from its top level as it streams past, or nil) and
// its size. It holds at most one line of max bytes.
type lineCap struct {
	src     io.Reader
	max     int
	tooLong func(id json.RawMessage, size int64)

	line  []byte // the current line, held until its newline
	ready []byte // whole lines for the reader
	chunk []byte
	err   error

	over    bool // dropping the current line
	dropped int64
	scan    idScan
}

func newLineCap(src io.Reader, max int, tooLong func(id json.RawMessage, size int64)) *lineCap {
	return &lineCap{src: src, max: max, tooLong: tooLong, chunk: make([]byte, 64<<10)}
}

func (c *lineCap) Read(p []byte) (int, error) {
	for len(c.ready) == 0 {
		if c.err != nil {
			if len(c.line) > 0 && !c.over {
				// The last line, without a newline: handed on as it is.
				c.ready, c.line = c.line, nil
				break
			}
			return 0, c.err
		}
		n, err := c.src.Read(c.chunk)
		c.feed(c.chunk[:n])
		c.err = err
	}
	n := copy(p, c.ready)
	c.ready = c.ready[n:]
	if len(c.ready) == 0 {
		c.ready = shrink(c.ready)
	}
	return n, nil
}

func (c *lineCap) feed(b []byte) {
	for len(b) > 0 {
		seg := b
		end := false
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			seg, end = b[:i+1], true
		}
		b = b[len(seg):]
		if !c.over && len(c.line)+len(seg) > c.max+1 {
			// Over the cap: what is held goes, and the rest of the line
			// is only looked at for its id.
			c.over, c.scan, c.dropped = true, idScan{}, 0
			c.scan.feed(c.line)
			c.dropped = int64(len(c.line))
			c.line = nil
		}
		if c.over {
			c.scan.feed(seg)
			c.dropped += int64(len(seg))
			if end {
				c.over = false
				c.tooLong(c.scan.id, c.dropped)
			}
			continue
		}
		c.line = append(c.line, seg...)
		if end {
			c.ready = append(c.ready, c.line...)
			c.line = shrink(c.line)
		}
	}
}

// shrink empties b for reuse, and lets a large buffer (one long line's)
// go rather than hold it for the rest of the session.
func shrink(b []byte) []byte {
	if cap(b) > 1<<20 {
		return nil
	}
	return b[:0]
}

// tooLongAnswer is the JSON-RPC error quiver sends for a dropped line.
func tooLongAnswer(id json.RawMessage, size int64, max int) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": -32600,
		"message": fmt.Sprintf("quiver: this message is %d bytes, over the %d bytes one message may have, so none of it was read. "+
			"Send less in one request: name a file by its path rather than sending its contents, or send a large text in parts.", size, max),
	}})
	return append(msg, '\n')
}

// idScan reads a JSON-RPC message's top-level "id" as the bytes stream
// past, holding nothing but the id: a host that waits on that id is
// answered, wherever in the message its encoder put it (the TypeScript
// SDK writes it last, after the params).
type idScan struct {
	id json.RawMessage // the id, once read

	depth        int
	inStr, esc   bool
	keyNext      bool // at the top level, the next string is a key
	inKey        bool
	key          []byte
	keyIsID      bool // the last key read was "id"
	wantVal      bool // after "id":
	capture      bool
	val          []byte
	valStr, done bool
}

const maxIDBytes = 128

func (s *idScan) feed(b []byte) {
	for _, c := range b {
		if s.done {
			return
		}
		s.byte(c)
	}
}

func (s *idScan) byte(c byte) {
	if s.inStr {
		closing := !s.esc && c == '"'
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		}
		if s.capture {
			s.val = append(s.val, c)
			if len(s.val) > maxIDBytes {
				s.capture, s.val = false, nil
			}
		}
		if s.inKey && !closing && len(s.key) <= 2 {
			s.key = append(s.key, c)
		}
		if closing {
			s.inStr = false
			if s.inKey {
				s.inKey = false
				s.keyIsID = string(s.key) == "id"
			}
			if s.capture {
				s.finish()
			}
		}
		return
	}
	if s.capture && !s.valStr {
		switch c {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			s.finish()
		default:
			s.val = append(s.val, c)
			if len(s.val) > maxIDBytes {
				s.capture, s.val = false, nil
			}
			return
		}
	}
	switch c {
	case '{', '[':
		s.depth++
		s.keyNext = c == '{' && s.depth == 1
	case '}', ']':
		s.depth--
	case ',':
		s.keyNext = s.depth == 1
	case ':':
		s.wantVal = s.depth == 1 && s.keyIsID && !s.done
		s.keyIsID = false
	case '"':
		s.inStr = true
		switch {
		case s.depth == 1 && s.keyNext:
			s.inKey, s.key, s.keyNext = true, s.key[:0], false
		case s.wantVal:
			s.capture, s.valStr, s.wantVal, s.val = true, true, false, []byte{'"'}
		}
	case ' ', '\t', '\r', '\n':
	default:
		if s.wantVal {
			s.capture, s.valStr, s.wantVal, s.val = true, false, false, []byte{c}
		}
	}
}

// finish ends the id's value: kept when it is a string or a number.
func (s *idScan) finish() {
	s.capture = false
	s.done = true
	var v any
	if json.Unmarshal(s.val, &v) == nil {
		switch v.(type) {
		case string, float64:
			s.id = json.RawMessage(s.val)
		}
	}
	s.val = nil
}
