package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/gate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestTurnClock(t *testing.T) {
	idle := 20 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		explicit string
		user     bool
		at       time.Duration // since t0
		respond  time.Duration // a response at this time, after the request (0: none)
		want     int
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"explicit new value starts a turn", []step{{explicit: `"1"`, want: 1}, {explicit: `1`, want: 1}, {explicit: `"2"`, want: 2}, {explicit: `"abc"`, want: 3}}},
		{"a number counts the turns it grew", []step{{explicit: `3`, want: 1}, {explicit: `7`, want: 5}, {explicit: `7`, want: 5}, {explicit: `2`, want: 6}, {explicit: `"9"`, want: 7}, {explicit: `12`, want: 8}}},
		{"a string is one turn, whatever it says", []step{{explicit: `"3"`, want: 1}, {explicit: `"7"`, want: 2}}},
		{"explicit wins over idle", []step{{explicit: `"1"`, want: 1}, {explicit: `"1"`, at: time.Hour, want: 1}}},
		{"explicit wins over a slash command", []step{{explicit: `"1"`, want: 1}, {explicit: `"1"`, user: true, want: 1}, {explicit: `"2"`, user: true, want: 2}}},
		{"a slash command starts a turn", []step{{want: 0}, {user: true, want: 1}, {user: true, want: 2}}},
		{"idle gap of turn_idle starts a turn", []step{{at: 0, want: 0}, {at: 19 * time.Second, want: 0}, {at: 39 * time.Second, want: 1}, {at: 40 * time.Second, want: 1}}},
		{"the gap counts from the last response", []step{{at: 0, respond: 30 * time.Second, want: 0}, {at: 45 * time.Second, want: 0}, {at: 65 * time.Second, want: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ss session
			for i, s := range tc.steps {
				ss.advance(turnValue(json.RawMessage(s.explicit)), s.user, t0.Add(s.at), idle)
				if s.respond > 0 {
					ss.touch(t0.Add(s.respond))
				}
				if got := ss.currentTurn(); got != s.want {
					t.Fatalf("step %d: turn %d, want %d", i, got, s.want)
				}
			}
		})
	}
}

func TestBinding(t *testing.T) {
	const turns, max = 3, 12
	names := func(prefix string, n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprintf("%s%02d", prefix, i))
		}
		return out
	}
	t.Run("lifetime: bound at t, usable t..t+2, gone at t+3", func(t *testing.T) {
		ss := session{turn: 5}
		ss.bind([]string{"a"}, max, turns, true)
		for ; ss.turn <= 7; ss.turn++ {
			if !ss.isBound("a", turns) {
				t.Fatalf("turn %d: a binding from turn 5 must be usable", ss.turn)
			}
		}
		if ss.isBound("a", turns) {
			t.Fatalf("turn %d: a binding from turn 5 must be gone", ss.turn)
		}
	})
	t.Run("capacity: the 13th evicts the oldest", func(t *testing.T) {
		var ss session
		for i, n := range names("t", 13) {
			ss.turn = i / 5 // several per turn: ties go to the earliest
			ss.bind([]string{n}, max, turns, true)
		}
		got := ss.bound(turns)
		if want := names("t", 13)[1:]; !slices.Equal(got, want) {
			t.Fatalf("bound = %v, want %v", got, want)
		}
	})
	t.Run("capacity: the oldest turn goes first, its lowest ranked first", func(t *testing.T) {
		ss := session{turn: 1}
		ss.bind(names("a", 6), max, turns, true)
		ss.turn = 2
		ss.bind(names("b", 6), max, turns, true)
		ss.bind([]string{"a01"}, max, turns, true) // refreshed: now of turn 2
		ss.bind([]string{"c01"}, max, turns, true)
		got := ss.bound(turns)
		if slices.Contains(got, "a06") || !slices.Contains(got, "a01") || len(got) != 12 {
			t.Fatalf("bound = %v: a06 (turn 1, ranked last) should go, a01 (refreshed) stay", got)
		}
	})
	t.Run("capacity: found again in the same turn is newest", func(t *testing.T) {
		ss := session{turn: 1}
		ss.bind(names("a", 6), max, turns, true)
		ss.bind(names("b", 6), max, turns, true)
		ss.bind([]string{"a06"}, max, turns, true) // found again: newer than every b
		ss.bind([]string{"c01"}, max, turns, true)
		got := ss.bound(turns)
		if slices.Contains(got, "a05") || !slices.Contains(got, "a06") || len(got) != 12 {
			t.Fatalf("bound = %v: a05 should go, a06 (found again) stay", got)
		}
	})
	t.Run("capacity: within one answer the lowest ranked goes first", func(t *testing.T) {
		ss := session{turn: 1}
		ss.bind(names("a", 10), max, turns, true)
		ss.bind(names("b", 5), max, turns, true)
		got := ss.bound(turns)
		if want := append(names("a", 10)[:7], names("b", 5)...); !slices.Equal(got, want) {
			t.Fatalf("bound = %v, want %v", got, want)
		}
	})
	t.Run("no evict: a weak answer takes only free places", func(t *testing.T) {
		ss := session{turn: 1}
		ss.bind(names("a", 10), max, turns, true)
		got := ss.bind([]string{"a03", "w1", "w2", "w3"}, max, turns, false)
		if want := []string{"a03", "w1", "w2"}; !slices.Equal(got, want) {
			t.Fatalf("bind returned %v, want %v (a03 refreshed, two free places)", got, want)
		}
		if b := ss.bound(turns); len(b) != 12 || !slices.Contains(b, "a01") || slices.Contains(b, "w3") {
			t.Fatalf("bound = %v: nothing found before may go", b)
		}
	})
	t.Run("refresh keeps the place and extends the life", func(t *testing.T) {
		ss := session{turn: 1}
		ss.bind([]string{"a", "b"}, max, turns, true)
		ss.turn = 3
		ss.bind([]string{"c", "a"}, max, turns, true)
		ss.turn = 4
		if got := ss.bound(turns); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("turn 4: bound = %v, want [a c] (a refreshed in place, b expired)", got)
		}
		ss.turn = 6
		if got := ss.bound(turns); len(got) != 0 {
			t.Fatalf("turn 6: bound = %v, want none", got)
		}
	})
	t.Run("found again after expiry appends", func(t *testing.T) {
		ss := session{turn: 1}
		ss.bind([]string{"a"}, max, turns, true)
		ss.turn = 3
		ss.bind([]string{"b"}, max, turns, true)
		ss.turn = 4
		ss.bind([]string{"a"}, max, turns, true)
		if got := ss.bound(turns); !slices.Equal(got, []string{"b", "a"}) {
			t.Fatalf("bound = %v, want [b a]: a rediscovery is a discovery", got)
		}
	})
}

// TestSurfaceOrderGolden checks tools/list byte for byte: builtins and
// always-on, then forced, then found oldest first.
func TestSurfaceOrderGolden(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	c.turn = 1
	c.list()
	c.turn = 2
	c.searchOne("fetch a web page")
	c.searchOne("calendar events of a day")
	// Always-on in config order, then forced, then found oldest first.
	c.turn = 3
	c.prompt("tidy", nil)
	checkGolden(t, "surface-forced.golden", c.listBytes())
	// The review allows only ex__notes_*: what it does not allow leaves
	// for this turn, the always-on clock included.
	c.turn = 4
	c.prompt("review", map[string]string{"topic": "groceries"})
	checkGolden(t, "surface-review.golden", c.listBytes())
	// Bound in turn 2, gone in turn 5; the slash commands' turns are over.
	c.turn = 5
	checkGolden(t, "surface-after.golden", c.listBytes())
	// The same state lists the same bytes.
	if a, b := c.listBytes(), c.listBytes(); !bytes.Equal(a, b) {
		t.Fatalf("one state, two lists:\n%s\n%s", a, b)
	}
}

func builtinNames() []string {
	var out []string
	for _, t := range builtinTools("auto") {
		out = append(out, t.Name)
	}
	return out
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	got = append(bytes.TrimSpace(got), '\n')
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./proxy -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (go test ./proxy -run %s -update to accept):\ngot  %s\nwant %s", name, t.Name(), got, want)
	}
}

func TestSearchBindsForTheNextRound(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	c.turn = 1
	always := append(builtinNames(), "ex__current_time")
	if got := c.list(); !slices.Equal(got, always) {
		t.Fatalf("first list = %v, want %v", got, always)
	}
	wantCode(t, c.call("ex__calendar_events", map[string]any{}), "deny.not_bound")
	res := c.search("calendar events of a day")
	if !strings.Contains(res.text(), "Bound for your next step: ex__calendar_events") {
		t.Fatalf("search: %s", res.text())
	}
	if n := c.changes(); n != 1 {
		t.Fatalf("%d list_changed after a search that bound, want 1", n)
	}
	if got := c.list(); !slices.Equal(got, append(always, "ex__calendar_events")) {
		t.Fatalf("list after search = %v", got)
	}
	wantCode(t, c.call("ex__calendar_events", map[string]any{}), "")
	wantCode(t, c.call("call_tool", map[string]any{"name": "ex__calendar_events", "arguments": map[string]any{}}), "")
	for c.turn = 2; c.turn.(int) <= 3; c.turn = c.turn.(int) + 1 {
		wantCode(t, c.call("ex__calendar_events", map[string]any{}), "")
	}
	c.turn = 4
	wantCode(t, c.call("ex__calendar_events", map[string]any{}), "deny.not_bound")
	if n := c.changes(); n != 1 {
		t.Fatalf("%d list_changed when the binding expired, want 1", n)
	}
	if got := c.list(); slices.Contains(got, "ex__calendar_events") {
		t.Fatalf("expired binding still listed: %v", got)
	}
	line := fmt.Sprintf("surface: bound %d tools (%d always-on, 0 forced, 1 found by search; filtered from %d)",
		len(always)+1, len(always), len(builtinNames())+len(rigTools()))
	if !strings.Contains(r.logText(), line) ||
		!strings.Contains(r.logText(), "session=a") {
		t.Errorf("log lacks the surface line:\n%s", r.logText())
	}
}

func TestIdleGapExpiresBindings(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a") // no explicit turns: the idle heuristic decides
	c.list()
	c.search("calendar events of a day")
	for i := 0; i < 2; i++ {
		r.sleep(25 * time.Second)
		wantCode(t, c.call("ex__calendar_events", map[string]any{}), "")
	}
	r.sleep(10 * time.Second) // not idle long enough: the same turn
	wantCode(t, c.call("ex__calendar_events", map[string]any{}), "")
	r.sleep(25 * time.Second)
	wantCode(t, c.call("ex__calendar_events", map[string]any{}), "deny.not_bound")
}

func TestExplicitTurnOnAnyRequest(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	c.turn = "t1"
	c.search("calendar events of a day")
	for _, turn := range []string{"t2", "t3", "t4"} {
		c.turn = turn
		c.list() // a tools/list carrying the meta moves the clock too
	}
	wantCode(t, c.call("ex__calendar_events", map[string]any{}), "deny.not_bound")
	// 7 and "7" are one turn.
	c.turn = 7
	c.list()
	c.turn = "7"
	c.list()
	if got := r.s.session(c.ctx).currentTurn(); got != 5 {
		t.Fatalf("turn = %d, want 5", got)
	}
}

func TestSlashCommand(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	c.turn = 1
	c.list()
	c.searchOne("fetch a web page")
	c.changes()

	var prompts struct {
		Prompts []struct {
			Name      string `json:"name"`
			Arguments []struct {
				Name     string `json:"name"`
				Required bool   `json:"required"`
			} `json:"arguments"`
		} `json:"prompts"`
	}
	c.result(c.rpc("prompts/list", nil), &prompts)
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "review") || !slices.Contains(names, "tidy") {
		t.Fatalf("prompts/list = %v", names)
	}

	// A required argument missing is a protocol error, and nothing changes.
	if resp := c.rpc("prompts/get", map[string]any{"name": "review"}); !bytes.Contains(resp, []byte(`needs the argument \"topic\"`)) {
		t.Fatalf("prompts/get without topic: %s", resp)
	}

	c.turn = 2
	text := c.prompt("review", map[string]string{"topic": "groceries"})
	for _, want := range []string{
		"/review: Review the notes without changing anything.",
		`Arguments: topic="groceries"`,
		"- ex__notes_list — List every saved note.",
		"- ex__notes_search — Find saved notes whose text matches a query.",
		"call_tool",
		"Activity: review, read-only",
		`ex__notes_search {"limit":5}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, text)
		}
	}
	if n := c.changes(); n != 1 {
		t.Fatalf("%d list_changed after the slash command, want 1", n)
	}
	if got, want := c.list(), append(builtinNames(), "ex__notes_list", "ex__notes_search"); !slices.Equal(got, want) {
		t.Fatalf("list in the review turn = %v, want %v", got, want)
	}
	wantCode(t, c.call("ex__notes_list", map[string]any{}), "")
	wantCode(t, c.call("ex__notes_add", map[string]any{"title": "x"}), "deny.not_bound")

	// Withheld stays withheld: outside the allow list, not offered, not
	// bound, not callable, whatever a search says.
	res := c.search("fetch a web page")
	if strings.Contains(res.text(), "ex__web_fetch") {
		t.Fatalf("a withheld tool was offered: %s", res.text())
	}
	wantCode(t, c.call("ex__web_fetch", map[string]any{}), "deny.withheld")
	wantCode(t, c.call("ex__current_time", map[string]any{}), "deny.withheld")
	// Read-only: a found write tool is refused by the gate.
	c.searchOne("save a new note")
	wantCode(t, c.call("ex__notes_add", map[string]any{"title": "x"}), "deny.read_only_activity")

	// The next turn: the command's tools, activity and narrowing are gone;
	// what the earlier turn bound is back.
	c.turn = 3
	c.changes()
	got := c.list()
	if slices.Contains(got, "ex__notes_search") || !slices.Contains(got, "ex__web_fetch") || !slices.Contains(got, "ex__current_time") {
		t.Fatalf("list after the review turn = %v", got)
	}
	if n := c.changes(); n != 1 {
		t.Fatalf("the new turn changed the list: want 1 list_changed, got %d", n)
	}
	// ex__notes_search was forced, never found: gone with its turn.
	wantCode(t, c.call("ex__notes_search", map[string]any{}), "deny.not_bound")
	wantCode(t, c.call("ex__notes_add", map[string]any{"title": "x"}), "")
}

func TestSlashGated(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	c.turn = 1
	c.list()
	res := c.search("delete a saved note")
	if !strings.Contains(res.text(), "- ex__notes_delete [mcp] [slash: /tidy] — ") {
		t.Fatalf("a slash-gated tool must be found and marked: %s", res.text())
	}
	if strings.Contains(res.text(), "Bound for your next step: ex__notes_delete") || slices.Contains(c.list(), "ex__notes_delete") {
		t.Fatalf("a slash-gated tool must never be bound: %s", res.text())
	}
	wantCode(t, c.call("ex__notes_delete", map[string]any{}), "deny.slash_gated")
	wantCode(t, c.call("call_tool", map[string]any{"name": "ex__notes_delete"}), "deny.slash_gated")

	c.turn = 2
	c.prompt("tidy", nil)
	if !slices.Contains(c.list(), "ex__notes_delete") {
		t.Fatalf("the tidy turn must list its tool")
	}
	// Destructive tools ask by default: the gate got past the slash gate.
	if got := code(c.call("ex__notes_delete", map[string]any{})); got == "deny.slash_gated" || got == "deny.not_bound" {
		t.Fatalf("in its slash turn the gated tool must pass resolve, got %s", got)
	}
	c.turn = 3
	wantCode(t, c.call("ex__notes_delete", map[string]any{}), "deny.slash_gated")
}

func TestSessionsAreIsolated(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	a, b := r.connect("a"), r.connect("b")
	a.turn, b.turn = 1, 1
	before := b.list()
	a.list()
	a.search("calendar events of a day")
	a.prompt("tidy", nil)
	if n := b.changes(); n != 0 {
		t.Fatalf("session b got %d list_changed for a's search and slash command", n)
	}
	if got := b.list(); !slices.Equal(got, before) {
		t.Fatalf("b's list changed: %v -> %v", before, got)
	}
	wantCode(t, b.call("ex__calendar_events", map[string]any{}), "deny.not_bound")
	wantCode(t, b.call("ex__notes_delete", map[string]any{}), "deny.slash_gated")
	if n := a.changes(); n == 0 {
		t.Fatalf("session a was not told its list changed")
	}
}

func TestLoopGuardResetsOnANewCatalog(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	c.turn = 1
	c.search("calendar events")
	wantCode(t, c.search("events calendar"), "deny.repeated_search")
	r.s.install(r.s.Catalog()) // a server came up, say: the answer may differ
	wantCode(t, c.search("calendar events"), "")
}

// TestToolLeftOutIsUnknown: a downstream tool whose schema mcp-go cannot
// take (a header annotation on an object) is left out of the surface, and
// call_tool treats it as unknown rather than forwarding it.
func TestToolLeftOutIsUnknown(t *testing.T) {
	bad := rigTools()[0]
	bad.Name, bad.Exposed = "bad_headers", "ex__bad_headers"
	bad.InputSchema = json.RawMessage(`{"type":"object","properties":{"x":{"type":"object","x-mcp-header":"X-Thing"}}}`)
	r := newRig(t, rigServer+"surface:\n  reveal: call\n", append(rigTools(), bad)...)
	c := r.connect("a")
	if !strings.Contains(r.logText(), "tool left out: invalid header annotations") {
		t.Fatalf("no log line for the left-out tool:\n%s", r.logText())
	}
	wantCode(t, c.call("call_tool", map[string]any{"name": "ex__bad_headers", "arguments": map[string]any{}}), "deny.unknown_tool")
}

// TestClosestNamesLeaveWithheldOut: the closest names a refusal suggests
// never include a tool the session cannot have, and there are still three.
func TestClosestNamesLeaveWithheldOut(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	c.prompt("review", map[string]string{"topic": "notes"}) // allow: ex__notes_* only
	res := c.call("call_tool", map[string]any{"name": "ex__web_fetc", "arguments": map[string]any{}})
	got := res.text()
	_, list, ok := strings.Cut(got, "Closest names: ")
	if !ok {
		t.Fatalf("no closest names in %q", got)
	}
	list, _, _ = strings.Cut(list, ".")
	names := strings.Split(list, ", ")
	if len(names) != 3 || slices.Contains(names, "ex__web_fetch") {
		t.Fatalf("closest names %q; want three, none withheld in this turn", names)
	}
}

// TestExpiredBindingSaysItExpired is issue 17's point 6: a tool whose
// binding lapsed is refused as expired, with how to search again, not as
// "not available yet"; a tool never found still gets "search first".
func TestExpiredBindingSaysItExpired(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	c.turn = 1
	first := c.call("ex__calendar_events", map[string]any{})
	wantCode(t, first, "deny.not_bound")
	if !strings.Contains(first.text(), "not available yet") {
		t.Errorf("never found: %s", first.text())
	}
	c.search("calendar events of a day")
	c.turn = 4
	res := c.call("ex__calendar_events", map[string]any{})
	wantCode(t, res, "deny.not_bound")
	for _, want := range []string{"no longer bound", "its binding from turn 1 expired after 3 turns", "Search for it again with search_tools"} {
		if !strings.Contains(res.text(), want) {
			t.Errorf("expired binding: %q lacks %q", res.text(), want)
		}
	}
	if strings.Contains(res.text(), "yet") {
		t.Errorf("expired binding called not available yet: %s", res.text())
	}
	c.search("take a note") // another search drops the lapsed binding; the reason stays
	res = c.call("ex__calendar_events", map[string]any{})
	if !strings.Contains(res.text(), "expired after 3 turns") {
		t.Errorf("after another search: %s", res.text())
	}
}

// TestPlainCallOfUnknownName: a tools/call of a name quiver does not have
// is answered as call_tool answers it, deny.unknown_tool with the closest
// names, and recorded; not with mcp-go's -32602 "tool not found" (issue
// 29). The name the unknown calls are routed through is itself unknown.
func TestPlainCallOfUnknownName(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	c := r.connect("a")
	plain := c.call("ex__notes_serch", map[string]any{"title": "x"})
	wantCode(t, plain, "deny.unknown_tool")
	viaCallTool := c.call("call_tool", map[string]any{"name": "ex__notes_serch", "arguments": map[string]any{"title": "x"}})
	if plain.text() != viaCallTool.text() || !strings.Contains(plain.text(), "Closest names: ex__notes_search") {
		t.Fatalf("a plain call answers\n%s\ncall_tool answers\n%s", plain.text(), viaCallTool.text())
	}
	wantCode(t, c.call(unknownTool, map[string]any{}), "deny.unknown_tool")
	if got := c.call(unknownTool, map[string]any{}).text(); !strings.Contains(got, `"`+unknownTool+`"`) {
		t.Fatalf("a call of %s: %s", unknownTool, got)
	}
	calls, err := r.s.ledger.Audit(context.Background(), gate.AuditQuery{Tool: "ex__notes_serch"})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].Code != gate.CodeUnknownTool || calls[1].Code != gate.CodeUnknownTool {
		t.Fatalf("the ledger has %+v, want both calls recorded as %s", calls, gate.CodeUnknownTool)
	}
	if l := c.list(); slices.Contains(l, unknownTool) {
		t.Fatalf("tools/list names %s: %v", unknownTool, l)
	}
}
