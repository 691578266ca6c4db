package operator

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quiver-mcp/quiver/gate"
)

// A cookie is sent to every port of 127.0.0.1 a browser visits: a server
// on another port gets the page's session, and replayed it approved a
// card (issue 22). The session reads the pages; a change needs the page's
// key too, which no response to the cookie holds, so a replayer that
// forges the Origin and copies every value the pages show still decides
// nothing. The page's own script, holding the key, does.
func TestAReplayedCookieDecidesNothing(t *testing.T) {
	f := newFixture(t)
	page := f.client() // the person's browser: the cookie and the key
	key, cookie := f.key, page.Jar.(*oneCookie).c

	// What another port is sent: the cookie, nothing else.
	replay := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Jar: &oneCookie{c: cookie}}
	var seen []string
	for _, path := range []string{"/approvals", "/approvals/cards", "/tools", "/grants", "/audit", "/search?q=note"} {
		body := f.get(replay, path)
		if strings.Contains(body, key) {
			t.Fatalf("%s, asked with the cookie alone, holds the page's key", path)
		}
		seen = append(seen, regexp.MustCompile(`[0-9a-f]{32,}`).FindAllString(body, -1)...)
	}
	own := map[string]string{"Origin": f.srv.URL}
	decide := "/approvals/" + itoa(f.ask.ID)
	for _, guess := range append(seen, "", cookie.Value) {
		f.do(replay, "POST", decide, url.Values{"decision": {"session"}, "csrf": {guess}}, own, http.StatusForbidden)
	}
	body := f.do(replay, "POST", "/tools/switch", url.Values{"name": {"ex__notes_add"}, "on": {"0"}, "csrf": {""}}, own, http.StatusForbidden)
	if !strings.Contains(body, "quiver ui --open") {
		t.Errorf("the refusal must say how to open the page so that changes work: %q", body)
	}
	if st := f.state(); st != gate.Pending {
		t.Fatalf("a replayed cookie answered the card: %s", st)
	}
	// Another browser's key is not this session's.
	f.client()
	f.do(page, "POST", decide, url.Values{"decision": {"once"}, "csrf": {f.key}}, own, http.StatusForbidden)
	// The page's script keeps a key from an address only if it is this
	// session's: another page can send the browser here with its own.
	f.do(page, "POST", "/session/key", url.Values{"csrf": {key}}, own, http.StatusNoContent)
	f.do(page, "POST", "/session/key", url.Values{"csrf": {f.key}}, own, http.StatusForbidden)
	// The page, with its key, decides.
	f.do(page, "POST", decide, url.Values{"decision": {"once"}, "csrf": {key}}, own, http.StatusSeeOther)
	if st := f.state(); st != gate.Approved {
		t.Fatalf("the page's own answer did not decide: %s", st)
	}
}

// quiver ui --open hands the browser a one-time code, not the token (a
// process's arguments are readable by every account): POST /code with the
// token as a bearer token mints it; it opens the page once, then never.
func TestACodeOpensThePageOnce(t *testing.T) {
	f := newFixture(t)
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	f.do(plain, "POST", "/code", nil, nil, http.StatusUnauthorized)
	f.do(plain, "POST", "/code", nil, map[string]string{"Authorization": "Bearer wrong"}, http.StatusUnauthorized)
	code := strings.TrimSpace(f.do(plain, "POST", "/code", nil, map[string]string{"Authorization": "Bearer " + f.h.Token()}, http.StatusOK))
	if code == "" || strings.Contains(code, f.h.Token()) {
		t.Fatalf("POST /code: %q", code)
	}
	res, err := plain.Get(f.srv.URL + "/approvals?code=" + code)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 ||
		!strings.HasPrefix(loc, "/approvals#key=") {
		t.Fatalf("a fresh code: %d, Location %q, cookies %v; want 303 to the page, a session and the page's key", res.StatusCode, loc, res.Cookies())
	}
	first := &http.Client{Jar: &oneCookie{c: res.Cookies()[0]}}
	f.get(first, "/approvals")
	if body := f.do(plain, "GET", "/approvals?code="+code, nil, nil, http.StatusUnauthorized); !strings.Contains(body, "used already") {
		t.Errorf("a used code must be refused, saying so: %q", body)
	}
	// Used twice, a code was held by two: whoever used it first (another
	// account that read it in the opener's arguments and raced the
	// browser) loses the page too.
	f.do(first, "GET", "/approvals", nil, nil, http.StatusUnauthorized)
	// A code not used in time expires.
	late, _ := f.h.Code()
	f.h.mu.Lock()
	f.h.codes[late] = oneTimeCode{expires: time.Now().Add(-time.Second)}
	f.h.mu.Unlock()
	f.do(plain, "GET", "/approvals?code="+late, nil, nil, http.StatusUnauthorized)
}
