package main

import (
	"bytes"
	"testing"
)

// What a model or a server wrote reaches a person's terminal with nothing
// that moves the cursor, hides text or reverses it (red team: ESC[8m in a
// tool name hid the rows of quiver audit after it).
func TestTerminalWriter(t *testing.T) {
	var out bytes.Buffer
	w := &terminalWriter{w: &out}
	in := "tool\x1b[8m hidden\rover\u202eevil\u2066 \xff ok\tok\nnext é"
	// Written in two pieces that cut "é" in half.
	cut := len(in) - 1
	w.Write([]byte(in[:cut]))
	w.Write([]byte(in[cut:]))
	want := `tool\x1b[8m hidden\x0dover\u202eevil\u2066 \xff ok` + "\tok\nnext é"
	if got := out.String(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// Only the commands that write a protocol or a file to stdout are raw.
func TestTerminalCommands(t *testing.T) {
	for name, c := range commands() {
		raw := name == "serve" || name == "example-server" || name == "import"
		if c.raw != raw {
			t.Errorf("%s: raw = %v", name, c.raw)
		}
	}
}
