package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// The operator page, end to end in a real browser: headless Chromium
// driven over the DevTools protocol answers approval cards and switches a
// tool off, while a real host (an MCP client over stdio, which cannot show
// cards, as Claude Desktop cannot) waits on its calls.
//
// With QUIVER_SCREENSHOTS=1 it also writes a screenshot of each page to
// docs/screenshots/ (the README shows them).
func TestOperatorPageInABrowser(t *testing.T) {
	chromium := needTool(t, "chromium")
	dir := t.TempDir()
	work, outside := filepath.Join(dir, "work"), filepath.Join(dir, "outside")
	for _, d := range []string{work, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	plan, diary, notes := filepath.Join(outside, "plan.txt"), filepath.Join(outside, "diary.txt"), filepath.Join(outside, "notes.txt")
	os.WriteFile(plan, []byte("the plan: ship the operator page on Tuesday\n"), 0o600)
	os.WriteFile(diary, []byte("dear diary\n"), 0o600)
	os.WriteFile(notes, []byte("shared notes\n"), 0o600)
	cfgPath, state := filepath.Join(dir, "servers.yaml"), filepath.Join(dir, "state")
	cfg := fmt.Sprintf(`
servers:
  example:
    command: quiver
    args: [example-server, --test-tools]
fence:
  allowed_dirs: [%q]
policy:
  approval_timeout: 60s
`, work)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	h := startQuiver(t, cfg, hostOptions{stderr: &log,
		args: []string{"--config", cfgPath, "--state-dir", state, "--ui", "127.0.0.1:0", "--log-level", "info"}})
	h.searchUntil("search text files for a pattern", "example__search_text")

	// quiver ui prints the address with its token; the log names the page
	// without the token (hosts keep their servers' logs).
	var pageURL string
	deadline := time.Now().Add(10 * time.Second)
	for pageURL == "" {
		out, err := exec.Command(quiverBin, "ui", "--config", cfgPath, "--state-dir", state).CombinedOutput()
		if err == nil {
			pageURL = strings.TrimSpace(string(out))
		} else if time.Now().After(deadline) {
			t.Fatalf("quiver ui: %v\n%s", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	logged := regexp.MustCompile(`operator page.* address="?([^"\s]+)`).FindStringSubmatch(log.String())
	if logged == nil || !strings.HasPrefix(pageURL, logged[1]) {
		t.Fatalf("quiver ui printed %q; the log line says %v", pageURL, logged)
	}
	if tok := strings.SplitN(pageURL, "token=", 2); len(tok) != 2 || strings.Contains(log.String(), tok[1]) {
		t.Fatalf("the log carries the page's token (or quiver ui printed none): %q", pageURL)
	}

	ctx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 860))...)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()
	browse := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	textOn := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("browser: the text of %s: %v", sel, err)
		}
		return s
	}
	shots := os.Getenv("QUIVER_SCREENSHOTS") == "1"
	shoot := func(name string) {
		t.Helper()
		if !shots || name == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("browser: screenshot %s: %v", name, err)
		}
		dir := filepath.Join("..", "..", "docs", "screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The first run starts the browser, and must have no deadline (it
	// would stop the browser); the later ones have one.
	// The person has allowed the page's notifications: a stand-in for the
	// browser's Notification records what the page announces.
	allowNotifications := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			window.__shown = [];
			window.Notification = function (title, opts) { window.__shown.push(title + ": " + opts.body); };
			window.Notification.permission = "granted";
			window.Notification.requestPermission = function () { return Promise.resolve("granted"); };`})
		return err
	})
	// The browser opens the page as quiver ui --open has it do: with a
	// one-time code, never the token (issue 22); the page's script keeps
	// the key every decision below needs.
	opened := pageURL
	if runtime.GOOS != "windows" {
		tok, _ := url.Parse(pageURL)
		opened = openedByUIOpen(t, cfgPath, state, tok.Query().Get("token"))
	}
	browse("open the address", allowNotifications, chromedp.Navigate(opened))
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	browse("the approvals page", chromedp.WaitVisible(chromedp.CSS(`#cards`)))
	// The page's script takes the key from the address once it has
	// loaded, which may be after #cards shows: wait for it, within ctx.
	loc, err := chromedp.Run(ctx, chromedp.Location())
	for err == nil && strings.Contains(loc, "key=") && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		loc, err = chromedp.Run(ctx, chromedp.Location())
	}
	if err != nil || strings.Contains(loc, "token") || strings.Contains(loc, "key=") {
		t.Fatalf("the token must leave the address bar for a cookie, and the page's key for the page's storage: %q %v", loc, err)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); strings.Contains(loc, "code=") {
		t.Fatalf("the one-time code must leave the address bar: %q", loc)
	}
	base := strings.Split(pageURL, "?")[0]

	// readOutside calls read_file outside the fence as the host does, in
	// the background: it waits for the page.
	readOutside := func(path string) <-chan *mcp.CallToolResult {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "read_file", map[string]any{"path": path}
			cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := h.c.CallTool(cctx, req)
			if err != nil {
				res = mcp.NewToolResultError("the call failed: " + err.Error())
			}
			done <- res
		}()
		return done
	}
	// answer waits for the card naming path, then clicks one of its
	// buttons.
	answer := func(path, button, shot string) {
		t.Helper()
		card := `article.card.waiting`
		browse("the card appears", chromedp.WaitVisible(chromedp.CSS(card)))
		text := textOn(card)
		if !strings.Contains(text, path) || !strings.Contains(text, "outside the allowed folders") || !strings.Contains(text, "read_file") {
			t.Fatalf("the card must name the tool and the path outside the fence:\n%s", text)
		}
		shoot(shot)
		browse("click "+button, chromedp.Click(chromedp.CSS(card+` button[value="`+button+`"]`)),
			chromedp.WaitNotPresent(chromedp.CSS(card)))
		if said := textOn(`main`); !strings.Contains(said, "Request") || !strings.Contains(said, "Approvals") {
			t.Fatalf("after %s the page must say what was decided:\n%s", button, said)
		}
	}
	result := func(done <-chan *mcp.CallToolResult) *mcp.CallToolResult {
		t.Helper()
		select {
		case res := <-done:
			return res
		case <-time.After(10 * time.Second):
			t.Fatal("the host's call did not return after the answer on the page")
			return nil
		}
	}

	// Allow once: the host's call returns the file's content.
	done := readOutside(plan)
	browse("the first card", chromedp.WaitVisible(chromedp.CSS(`article.card.waiting`)))
	if shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__shown`)); err != nil || len(shown) != 1 || !strings.Contains(shown[0], "a call waits for your answer") {
		t.Fatalf("a new card must be announced by one browser notification: %q %v", shown, err)
	}
	// What every other server on 127.0.0.1 the browser visits is sent:
	// its cookies. Replayed with the page's Origin and every value the
	// page shows for them, they answer no card (issue 22); the page's
	// own click below does.
	var cookies []*network.Cookie
	browse("the browser's cookies", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		res, err := cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{})
		cookies = res.Cookies
		return err
	}))
	replay := func(method, path string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, base+path, body)
		req.Header.Set("Origin", strings.TrimSuffix(base, "/"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, c := range cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, shown := replay("GET", "approvals", nil)
	id := regexp.MustCompile(`id="card-(\d+)"`).FindStringSubmatch(shown)
	if code != http.StatusOK || id == nil || len(cookies) == 0 {
		t.Fatalf("the cookies alone read the page (%d, %d cookies); they must, and it must show the card:\n%s", code, len(cookies), shown)
	}
	for _, guess := range append(regexp.MustCompile(`[0-9a-f]{32,}`).FindAllString(shown, -1), "") {
		if code, _ := replay("POST", "approvals/"+id[1], url.Values{"decision": {"session"}, "csrf": {guess}}); code != http.StatusForbidden {
			t.Fatalf("a replayed cookie with the page's Origin answered the card: %d", code)
		}
	}
	// Another page can send the browser to the page with a key of its
	// own in the address: the page keeps its real key (the click below
	// needs it).
	browse("a key from another page", chromedp.Navigate(base+"approvals?from=elsewhere#key=0123456789abcdef0123456789abcdef"),
		chromedp.WaitVisible(chromedp.CSS(`article.card.waiting`)))
	for deadline := time.Now().Add(10 * time.Second); ; {
		held, err := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem("quiver-page-key") || ""`))
		if err == nil && held != "" && held != "0123456789abcdef0123456789abcdef" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page kept a key another page sent it: %q %v", held, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	answer(plan, "once", "approvals")
	if res := result(done); res.IsError || !strings.Contains(toolresult.Text(res), "ship the operator page on Tuesday") {
		t.Fatalf("after Allow once the host must get the file: %s", toolresult.Text(res))
	}
	// Deny: the host is told so.
	done = readOutside(diary)
	answer(diary, "deny", "")
	wantRefusal(t, result(done), "deny.approval_denied")
	// Allow for this session: a grant the Grants page lists.
	done = readOutside(notes)
	answer(notes, "session", "")
	if res := result(done); res.IsError || !strings.Contains(toolresult.Text(res), "shared notes") {
		t.Fatalf("after Allow for this session the host must get the file: %s", toolresult.Text(res))
	}
	browse("grants", chromedp.Navigate(base+"grants"), chromedp.WaitVisible(chromedp.CSS(`#grants`)))
	if grants := textOn(`#grants`); !strings.Contains(grants, notes) || !strings.Contains(grants, "session") {
		t.Fatalf("the Grants page must list the session grant on %s:\n%s", notes, grants)
	}
	shoot("grants")

	browse("audit", chromedp.Navigate(base+"audit?tool=read_file"), chromedp.WaitVisible(chromedp.CSS(`#audit`)),
		chromedp.Click(chromedp.CSS(`#audit tbody tr details summary`)))
	audit, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#audit`))) // the closed chains too
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ask.read_outside_fence", "deny.approval_denied", "requested", "decided", "approved", "once", "session", "started", "ended"} {
		if !strings.Contains(audit, want) {
			t.Fatalf("the Audit page lacks %q:\n%s", want, audit)
		}
	}
	shoot("audit")

	browse("search", chromedp.Navigate(base+"search"), chromedp.WaitVisible(chromedp.CSS(`#q`)),
		chromedp.SendKeys(chromedp.CSS(`#q`), "find lines matching a pattern\n"), chromedp.WaitVisible(chromedp.CSS(`#hits`)))
	if hits := textOn(`#hits`); !strings.Contains(hits, "example__search_text") {
		t.Fatalf("the Search page must find example__search_text:\n%s", hits)
	}
	shoot("search")
	var toggles []byte

	// A toggle clicked on the Tools page: the tool leaves a live session's
	// search.
	toggle := chromedp.CSS(`#toggle-example__search_text`)
	browse("tools", chromedp.Navigate(base+"tools"), chromedp.WaitVisible(toggle))
	shoot("tools")
	browse("switch off", chromedp.Click(toggle), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	toggles, err = os.ReadFile(filepath.Join(dir, "tools.yaml"))
	if err != nil || !bytes.Contains(toggles, []byte("example__search_text")) {
		t.Fatalf("the switch must write tools.yaml beside servers.yaml: %v\n%s", err, toggles)
	}
	deadline = time.Now().Add(10 * time.Second)
	for strings.Contains(toolresult.Text(h.search("search text files for a pattern")), "example__search_text") {
		if time.Now().After(deadline) {
			t.Fatal("the tool switched off on the page is still found by the live session's search")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The page reloads itself and shows the switch applied.
	browse("tools after", chromedp.WaitVisible(chromedp.CSS(`#toggle-example__search_text.off`)))
}

// The page answers approvals: beyond loopback it needs the HTTP auth
// token, whether --ui or ui.listen asks for it; a bad ui.listen is named
// with its line; quiver ui says when no page runs.
func TestOperatorPageAddress(t *testing.T) {
	serveFails(t, exampleConfig("auto", ""), nil, []string{"--ui", "0.0.0.0:0"}, "loopback", "QUIVER_AUTH_TOKEN")
	serveFails(t, exampleConfig("auto", "ui:\n  listen: 0.0.0.0:0\n"), nil, nil, "--ui 0.0.0.0:0 listens beyond this machine")
	serveFails(t, exampleConfig("auto", "ui:\n  listen: [a, b]\n"), nil, nil, "ui.listen must be an address", "servers.yaml:")
	out, err := exec.Command(quiverBin, "ui", "--state-dir", t.TempDir(), "--config", filepath.Join(t.TempDir(), "servers.yaml")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "quiver serve --ui 127.0.0.1:8766") {
		t.Fatalf("quiver ui with no page running: %v\n%s", err, out)
	}
}
