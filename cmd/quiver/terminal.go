package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// A terminalWriter writes text for a person's terminal with every
// character that could change what the terminal shows escaped: control
// characters (ESC starts sequences that move the cursor or hide text;
// CR rewrites a line), bidirectional overrides and isolates, line and
// paragraph separators, and bytes that are not UTF-8. A model or a server
// chose much of what quiver's commands print (tool names, reasons,
// descriptions): none of it may paint over the lines around it.
//
// Commands that speak a protocol on stdout (serve, example-server) or
// write a file's bytes (import) do not get one.
type terminalWriter struct {
	w       io.Writer
	partial []byte // the start of a character cut by the last Write
}

func (t *terminalWriter) Write(p []byte) (int, error) {
	buf := append(t.partial, p...)
	t.partial = nil
	out := make([]byte, 0, len(buf))
	for i := 0; i < len(buf); {
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(buf[i:]) {
				t.partial = append([]byte(nil), buf[i:]...)
				break
			}
			out = fmt.Appendf(out, `\x%02x`, buf[i])
			i++
			continue
		}
		if unsafeOnTerminal(r) {
			if r < 0x100 {
				out = fmt.Appendf(out, `\x%02x`, r)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, buf[i:i+size]...)
		}
		i += size
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func unsafeOnTerminal(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return false
}
