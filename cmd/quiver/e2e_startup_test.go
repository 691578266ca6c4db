package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// slowServer is a config entry for the example server that takes delay to
// start, as npx does with a cold cache.
func slowServer(name, delay string) string {
	return fmt.Sprintf(`
  %s:
    command: sh
    args: [-c, 'sleep %s; exec "$0" example-server --test-tools', %q]
`, name, delay, quiverBin)
}

// TestFirstSearchWaitsForStartingServers is issue 17's problem 1: a
// search sent before a server is up waits for it (up to
// surface.search_wait) and finds its tools on the first try, and a direct
// call of a tool of a starting server waits too instead of "tool not
// found".
func TestFirstSearchWaitsForStartingServers(t *testing.T) {
	cfg := strings.Replace(exampleConfig("direct", slowServer("slow", "1.5")+slowServer("later", "1.5")),
		"surface:\n", "surface:\n  search_wait: 20s\n", 1)
	h := startQuiver(t, cfg, hostOptions{})
	res := h.search("take a note")
	if txt := toolresult.Text(res); !strings.Contains(txt, "slow__notes_add") && !strings.Contains(txt, "\nslow: notes_add") {
		t.Errorf("the first search missed the starting server's tool:\n%s", toolresult.Text(res))
	}
	if got := h.call("later__notes_list", map[string]any{}); got.IsError {
		t.Errorf("a direct call of a starting server's tool: %s", toolresult.Text(got))
	}
}

// TestSearchNamesServersNotUp: past search_wait, the answer names the
// servers still starting and those down, in its text and in
// structuredContent.pending, and never says no server can do it.
func TestSearchNamesServersNotUp(t *testing.T) {
	cfg := strings.Replace(exampleConfig("auto", slowServer("sleepy", "60")+"\n  broken:\n    command: /nonexistent/mcp-server\n"),
		"surface:\n", "surface:\n  search_wait: 500ms\n", 1)
	h := startQuiver(t, cfg, hostOptions{})
	h.waitTools("example__current_time")
	for _, q := range []string{"take a note", "launch the rocket to mars"} {
		start := time.Now()
		res := h.search(q)
		txt := toolresult.Text(res)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%q: the search took %s; search_wait is 500ms", q, took)
		}
		for _, want := range []string{"1 server is still starting: sleepy; search again in a moment.", "1 server is down", "broken ("} {
			if !strings.Contains(txt, want) {
				t.Errorf("%q: the answer lacks %q:\n%s", q, want, txt)
			}
		}
		if strings.Contains(txt, "no connected server can do this") {
			t.Errorf("%q: the answer claims no server can do it while some are not up:\n%s", q, txt)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var sc struct {
			Pending []struct{ Name, State, Reason string } `json:"pending"`
		}
		json.Unmarshal(b, &sc)
		if len(sc.Pending) != 2 || sc.Pending[0].Name != "sleepy" || sc.Pending[0].State != "starting" ||
			sc.Pending[1].Name != "broken" || sc.Pending[1].State != "down" || !strings.Contains(sc.Pending[1].Reason, "/nonexistent/mcp-server") {
			t.Errorf("%q: structuredContent.pending = %+v; want sleepy starting, broken down with its reason", q, sc.Pending)
		}
	}
}

// TestSearchAgainWhileStartingIsNotALoop: the answer says "search again
// in a moment"; doing so in the same turn must not meet the loop guard's
// deny.repeated_search (found by following the README on a fresh clone).
func TestSearchAgainWhileStartingIsNotALoop(t *testing.T) {
	cfg := strings.Replace(exampleConfig("auto", slowServer("sleepy", "60")),
		"surface:\n", "surface:\n  search_wait: 300ms\n", 1)
	h := startQuiver(t, cfg, hostOptions{})
	h.waitTools("example__current_time")
	h.turn = 1
	for i := range 3 {
		res := h.search("launch the rocket to mars")
		if res.IsError || !strings.Contains(toolresult.Text(res), "still starting: sleepy") {
			t.Fatalf("search %d while sleepy starts: %s", i+1, toolresult.Text(res))
		}
	}
}
