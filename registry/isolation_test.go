package registry

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestServerThatCannotStartSaysWhy is issue 17's problem 4: a child that
// dies before initialize is down with its last stderr lines (redacted) as
// the reason, logged at WARN, not "transport closed" alone.
func TestServerThatCannotStartSaysWhy(t *testing.T) {
	t.Parallel()
	const token = "ghp_s3cr3tT0kenValue1234"
	h := startRegistry(t, fmt.Sprintf("servers:\n"+exampleServer("good", "")+
		"  dying:\n    command: ${BIN}\n    env: {%s: dying, TOKEN: \"${TOKEN}\", %s: \"npm error 404 Not Found - @nobody/no-such-server (token ${TOKEN})\\n\"}\n",
		childEnv, childStderrEnv), map[string]string{"TOKEN": token}, Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	cat := h.ready()
	st, _ := cat.Status("dying")
	// The child's words are kept apart from quiver's account, and shown
	// quoted and labelled as the server's (issue 22).
	if st.State != StateDown || strings.Contains(st.LastError, "npm error") ||
		!strings.Contains(st.Why(), `its stderr ended (the server's words, not quiver's): "npm error 404 Not Found - @nobody/no-such-server`) {
		t.Errorf("dying: state %q, why %q; want down with the child's last words, quoted and labelled", st.State, st.Why())
	}
	if strings.Contains(st.Why(), token) || !strings.Contains(st.LastWords, "[redacted:TOKEN]") {
		t.Errorf("last words %q; want the token redacted", st.LastWords)
	}
	var warned bool
	for _, r := range h.logs.find("server failed to start; retrying", "server", "dying") {
		warned = warned || r.Level == slog.LevelWarn && strings.Contains(r.Attrs["stderr"], "404 Not Found")
	}
	if !warned {
		t.Errorf("no WARN with the reason in the log:\n%s", h.logs)
	}
	if good, _ := cat.Status("good"); good.State != StateUp {
		t.Errorf("good: %q (%s); want up", good.State, good.LastError)
	}
}

// TestUnsetVariableLeavesTheOthersRunning is problem 3 at run time: the
// server whose ${VAR} is unset is down with the reason (file, line, key)
// at WARN, and the other servers start and answer.
func TestUnsetVariableLeavesTheOthersRunning(t *testing.T) {
	t.Parallel()
	h := startRegistry(t, "servers:\n"+exampleServer("good", "")+
		"  github:\n    command: ${BIN}\n    env: {GITHUB_PERSONAL_ACCESS_TOKEN: \"${GITHUB_PERSONAL_ACCESS_TOKEN}\"}\n", nil, Options{})
	cat := h.ready()
	gh, _ := cat.Status("github")
	if gh.State != StateDown || !strings.Contains(gh.LastError, "servers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN") ||
		!strings.Contains(gh.LastError, "GITHUB_PERSONAL_ACCESS_TOKEN is not set") {
		t.Errorf("github: state %q, last error %q; want down, naming the key and the variable", gh.State, gh.LastError)
	}
	if len(h.logs.find("server cannot start", "server", "github")) != 1 {
		t.Errorf("want one WARN for github:\n%s", h.logs)
	}
	if _, err := h.call("good__echo", `{}`); err != nil {
		t.Errorf("a call to the good server failed: %v", err)
	}
}
