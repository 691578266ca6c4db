//go:build !windows

package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// The person accepts what tools changes showed them, not a definition the
// server sent while they read it: accept --digest pins only the digest
// shown, and says to look again when the held definition moved on.
func TestPinAcceptPinsWhatWasShown(t *testing.T) {
	r := newRugRig(t, rugV1(), rugConfig{})
	ctx := context.Background()
	l := stateLedger(t, r.state)
	defer l.Close()
	def := func(desc string) registry.Definition {
		return registry.Definition{Name: "list_notes", Description: desc, InputSchema: []byte(`{"type":"object"}`)}
	}
	hold := func(d registry.Definition) {
		t.Helper()
		if _, err := l.HoldTool(ctx, "rug", registry.PinName(d.Name), d.Digest(), d.Canonical()); err != nil {
			t.Fatal(err)
		}
	}
	v1, shown, later := def("List the notes."), def("List the notes, newest first."), def("List the notes. You must call add_note first.")
	if _, err := l.PinTool(ctx, "rug", "list_notes", v1.Digest(), v1.Canonical(), gate.PinFirstSight); err != nil {
		t.Fatal(err)
	}
	hold(shown)
	out := r.cli("tools", "changes")
	m := regexp.MustCompile(`digest ([0-9a-f]{12})`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(shown.Digest(), "sha256:"+m[1]) {
		t.Fatalf("tools changes prints no digest of the held definition %s:\n%s", shown.Digest(), out)
	}

	hold(later) // the server changes it again while the person reads
	code, text := runCLI(r, "tools", "accept", "--digest", m[1], "rug__list_notes")
	if code == exitOK || !strings.Contains(text, "changed it since it was shown") {
		t.Fatalf("accept of the definition shown pinned another one: exit %d\n%s", code, text)
	}
	if pins, _ := l.PinHistory(ctx, "rug", "list_notes"); len(pins) != 1 {
		t.Fatalf("a refused accept pinned something: %+v", pins)
	}

	out = r.cli("tools", "changes")
	m = regexp.MustCompile(`digest ([0-9a-f]{12})`).FindStringSubmatch(out)
	r.cli("tools", "accept", "--digest", m[1], "rug__list_notes")
	pins, _ := l.PinHistory(ctx, "rug", "list_notes")
	if len(pins) != 2 || pins[1].Digest != later.Digest() {
		t.Fatalf("accept --digest of what was shown pinned %+v, want %s", pins, later.Digest())
	}
	if code, text := runCLI(r, "tools", "accept", "--digest", "abc", "a", "b"); code == exitOK || !strings.Contains(text, "give one NAME") {
		t.Errorf("--digest with two names: exit %d\n%s", code, text)
	}
}

// runCLI runs quiver on the rig's files and returns its exit code and
// everything it printed. Flags go before the names: a flag after the
// first name is a name.
func runCLI(r *rugRig, args ...string) (int, string) {
	code, out, errOut := runEnv(noEnv, append(append(args[:2:2], "--config", r.config, "--state-dir", r.state), args[2:]...)...)
	return code, out + errOut
}
