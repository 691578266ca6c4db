package telemetry_test

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// metricLines are the scrape's samples whose name begins with prefix.
func metricLines(body, prefix string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func TestMetricsFollowCalls(t *testing.T) {
	r := newRig(t, true)
	h := r.tel.Handler()
	scrape := func() string {
		t.Helper()
		code, body := get(t, h, "/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		return body
	}
	expect := func(body string, lines ...string) {
		t.Helper()
		for _, l := range lines {
			if !strings.Contains(body, "\n"+l+"\n") {
				t.Errorf("the scrape lacks %q; it has:\n%s", l, strings.Join(metricLines(body, "quiver_"), "\n"))
			}
		}
	}

	body := scrape()
	expect(body, `quiver_downstream_up{server="ex"} 1`, `quiver_approvals_pending 0`, `quiver_search_total 0`)

	for range 2 {
		if text, isErr := r.call("ex__trace_seen", nil, nil); isErr {
			t.Fatalf("refused: %s", text)
		}
	}
	r.call("ex__current_time", nil, nil) // refused by the rule
	r.call("search_tools", map[string]any{"query": "notes"}, nil)

	// An approval waiting counts as pending until it is answered.
	r.asked, r.release = make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); r.call("ex__notes_delete", map[string]any{"id": "n404"}, nil) }()
	select {
	case <-r.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("no approval card within 10s")
	}
	expect(scrape(), `quiver_approvals_pending 1`)
	close(r.release)
	<-done

	body = scrape()
	expect(body,
		`quiver_calls_total{code="allow.policy",server="ex"} 2`,
		`quiver_calls_total{code="deny.rule",server="ex"} 1`,
		`quiver_calls_total{code="allow.permit",server="ex"} 1`,
		`quiver_call_duration_seconds_count{server="ex"} 3`,
		`quiver_approvals_pending 0`,
		`quiver_search_total 1`,
		`quiver_downstream_up{server="ex"} 1`,
	)
	for _, family := range []string{"# TYPE quiver_calls_total counter", "# TYPE quiver_call_duration_seconds histogram",
		"# TYPE quiver_approvals_pending gauge", "# TYPE quiver_downstream_up gauge", "# TYPE quiver_search_total counter",
		"# TYPE go_goroutines gauge"} {
		if !strings.Contains(body, family) {
			t.Errorf("the scrape lacks the family: %q", family)
		}
	}
	if !regexp.MustCompile(`\nquiver_call_duration_seconds_bucket\{server="ex",le="\+Inf"\} 3\n`).MatchString(body) {
		t.Errorf("the histogram's +Inf bucket should hold the 3 calls that reached the server")
	}
	if n := len(metricLines(body, "quiver_calls_total{")); n != 3 {
		t.Errorf("%d series of quiver_calls_total, want 3 (search_tools is no call through the gate): %v", n, metricLines(body, "quiver_calls_total{"))
	}
}
