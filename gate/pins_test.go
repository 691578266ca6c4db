package gate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

func TestLedgerPins(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTestLedger(t, path)
	v1, v2, v3 := []byte(`{"name":"list_notes","description":"v1"}`), []byte(`{"name":"list_notes","description":"v2"}`), []byte(`{"name":"list_notes","description":"v3"}`)
	clock := func() int64 {
		t.Helper()
		n, err := l.PinClock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	c0 := clock()

	got, err := l.PinTool(ctx, "notes", "list_notes", "d1", v1, PinFirstSight)
	if err != nil || got != "d1" {
		t.Fatalf("first sight pinned %q, %v; want d1", got, err)
	}
	// A second process that first sees another definition finds d1 pinned.
	if got, err := l.PinTool(ctx, "notes", "list_notes", "d2", v2, PinFirstSight); err != nil || got != "d1" {
		t.Fatalf("a later first sight pinned %q, %v; want d1 kept", got, err)
	}
	if clock() == c0 {
		t.Fatal("the pin clock did not move at a pin")
	}

	rejected, err := l.HoldTool(ctx, "notes", "list_notes", "d2", v2)
	if err != nil || rejected {
		t.Fatalf("hold = %v, %v", rejected, err)
	}
	held, err := l.HeldTools(ctx, "")
	if err != nil || len(held) != 1 || held[0].Digest != "d2" || held[0].Pinned != "d1" || held[0].State != HoldPending {
		t.Fatalf("held = %+v, %v", held, err)
	}
	c1 := clock()
	if err := l.RejectTool(ctx, "notes", "list_notes"); err != nil {
		t.Fatal(err)
	}
	if clock() == c1 {
		t.Fatal("the pin clock did not move at a reject")
	}
	if rejected, _ := l.HoldTool(ctx, "notes", "list_notes", "d2", v2); !rejected {
		t.Fatal("the rejected definition, offered again, is not known as rejected")
	}
	// A newer definition replaces the rejected one and waits afresh.
	if rejected, _ := l.HoldTool(ctx, "notes", "list_notes", "d3", v3); rejected {
		t.Fatal("a new definition inherited the last one's rejection")
	}
	if err := l.RejectTool(ctx, "notes", "other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rejecting what is not held: %v, want ErrNotFound", err)
	}

	if got, err := l.PinTool(ctx, "notes", "list_notes", "d3", v3, PinAccepted); err != nil || got != "d3" {
		t.Fatalf("accept pinned %q, %v", got, err)
	}
	pinned, heldNow, err := l.ToolPins(ctx, "notes")
	if err != nil || pinned["list_notes"] != "d3" || len(heldNow) != 0 {
		t.Fatalf("after accept: pinned %v held %v, %v", pinned, heldNow, err)
	}

	// History survives a restart and replays every accepted definition.
	l.Close()
	l = openTestLedger(t, path)
	hist, err := l.PinHistory(ctx, "notes", "list_notes")
	if err != nil || len(hist) != 2 || hist[0].Digest != "d1" || hist[0].How != PinFirstSight || hist[1].Digest != "d3" || hist[1].How != PinAccepted {
		t.Fatalf("history = %+v, %v", hist, err)
	}
	for i, want := range [][]byte{v1, v3} {
		def, err := l.ToolDefinition(ctx, hist[i].Digest)
		if err != nil || string(def) != string(want) {
			t.Fatalf("definition %d = %s, %v; want %s", i, def, err, want)
		}
	}
	if _, err := l.ToolDefinition(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown digest: %v", err)
	}
	if err := l.UnholdTool(ctx, "notes", "list_notes"); err != nil {
		t.Fatal(err)
	}
}

// A server that changes a tool at every list must not grow the ledger:
// only pinned and currently held definitions are kept.
func TestLedgerPinsKeepOnlyWhatMatters(t *testing.T) {
	ctx := context.Background()
	l := openTestLedger(t, filepath.Join(t.TempDir(), "ledger.db"))
	if _, err := l.PinTool(ctx, "s", "a", "p", []byte(`{"v":0}`), PinFirstSight); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := l.HoldTool(ctx, "s", "a", fmt.Sprintf("h%d", i), []byte(fmt.Sprintf(`{"v":%d}`, i+1))); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		var n int
		if err := l.db.QueryRowContext(ctx, `SELECT count(*) FROM tool_defs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("after 50 changes the ledger keeps %d definitions, want 2 (the pinned one and the one held)", n)
	}
	if err := l.UnholdTool(ctx, "s", "a"); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after the hold ended the ledger keeps %d definitions, want the pinned one", n)
	}
	if _, err := l.ToolDefinition(ctx, "p"); err != nil {
		t.Fatalf("the pinned definition is gone: %v", err)
	}
}
