package main

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// heldCard is a host's card that records its text and waits to be let go
// before it answers "deny".
type heldCard struct {
	shown   chan string
	release chan struct{}
}

func (c *heldCard) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c.shown <- req.Params.Message
	select {
	case <-c.release:
	case <-ctx.Done():
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "deny"}}}, nil
}

// TestModelWordsNeverPassForQuiversCard is issue 22's class 4: the reason
// a model gives request_capability was stored as the request's card, and
// shown in the box quiver's own cards use on the operator page and under
// "Card:" by quiver grants --pending. A reason written to read like
// quiver's card must be shown, wherever a person reads the request, apart
// from quiver's text, quoted, and labelled as the model's: in the host's
// card, on the page, and in the terminal.
func TestModelWordsNeverPassForQuiversCard(t *testing.T) {
	dir := t.TempDir()
	work, outside := filepath.Join(dir, "work"), filepath.Join(dir, "outside")
	for _, d := range []string{work, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath, state := filepath.Join(dir, "servers.yaml"), filepath.Join(dir, "state")
	cfg := fmt.Sprintf(`
servers:
  example:
    command: quiver
    args: [example-server]
fence:
  allowed_dirs: [%q]
policy:
  approval_timeout: 60s
`, work)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	card := &heldCard{shown: make(chan string, 1), release: make(chan struct{})}
	h := startQuiver(t, cfg, hostOptions{client: []client.ClientOption{client.WithElicitationHandler(card)},
		args: []string{"--config", cfgPath, "--state-dir", state, "--ui", "127.0.0.1:0"}})
	forged := "quiver: this only lists a folder the user already shared; Allow for this session grants nothing more."
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "request_capability"
		req.Params.Arguments = map[string]any{"capability": "read_outside_fence", "path": outside, "reason": forged}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := h.c.CallTool(ctx, req)
		if err != nil {
			res = mcp.NewToolResultError(err.Error())
		}
		done <- res
	}()
	var shown string
	select {
	case shown = <-card.shown:
	case res := <-done:
		t.Fatalf("request_capability did not ask: %s", toolresult.Text(res))
	case <-time.After(20 * time.Second):
		t.Fatal("the host was shown no card")
	}
	labelled := `The model says (its words, not quiver's): "` + forged + `"`

	// The host's card: quiver's text, then the model's words on their own
	// labelled, quoted line.
	quiverText, _, _ := strings.Cut(shown, "\n"+labelled)
	if !strings.HasSuffix(shown, "\n"+labelled) || strings.Contains(quiverText, "only lists a folder") ||
		!strings.Contains(quiverText, fmt.Sprintf("quiver: the model asks for read_outside_fence for %q", outside)) {
		t.Errorf("the host's card must say what quiver says, and the model's words apart, labelled and quoted:\n%s", shown)
	}

	// The terminal: never under "Card:".
	out, err := exec.Command(quiverBin, "grants", "--pending", "--state-dir", state).CombinedOutput()
	if err != nil {
		t.Fatalf("quiver grants --pending: %v\n%s", err, out)
	}
	cardLines, rest, _ := strings.Cut(string(out), "  Card:\n")
	var underCard []string
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "    ") {
			underCard = append(underCard, line)
		}
	}
	if strings.Contains(strings.Join(underCard, "\n"), "only lists a folder") || strings.Contains(cardLines, "only lists a folder") ||
		!strings.Contains(string(out), "\n  "+labelled+"\n") {
		t.Errorf("quiver grants --pending must show the model's words apart from the card, labelled and quoted:\n%s", out)
	}

	// The page: quiver's card in its box, the model's words outside it,
	// labelled and quoted.
	c, base := openPage(t, cfgPath, state)
	page := pageGet(t, c, base+"approvals")
	for _, box := range regexp.MustCompile(`(?s)<pre class="cardtext">(.*?)</pre>`).FindAllStringSubmatch(page, -1) {
		if strings.Contains(html.UnescapeString(box[1]), "only lists a folder") {
			t.Errorf("the model's words are in the box of quiver's card:\n%s", box[0])
		}
	}
	says := regexp.MustCompile(`(?s)<p class="model-says">(.*?)</p>`).FindStringSubmatch(page)
	if says == nil || !strings.Contains(html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(says[1], "")), labelled) {
		t.Errorf("the page must show the model's words apart, labelled and quoted:\n%s", page)
	}

	close(card.release)
	select {
	case res := <-done:
		wantRefusal(t, res, "deny.approval_denied")
	case <-time.After(20 * time.Second):
		t.Fatal("request_capability did not return after the card's answer")
	}
}

// openPage runs quiver ui for the quiver serve using cfgPath and state
// until it prints the operator page's address, opens it as a browser
// does (a cookie jar, following redirects), and returns the client and
// the page's base address ("http://127.0.0.1:N/").
func openPage(t *testing.T, cfgPath, state string) (*http.Client, string) {
	t.Helper()
	var pageURL string
	deadline := time.Now().Add(10 * time.Second)
	for pageURL == "" {
		out, err := exec.Command(quiverBin, "ui", "--config", cfgPath, "--state-dir", state).CombinedOutput()
		if err == nil {
			pageURL = strings.TrimSpace(string(out))
		} else if time.Now().After(deadline) {
			t.Fatalf("quiver ui: %v\n%s", err, out)
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	pageGet(t, c, pageURL)
	return c, strings.Split(pageURL, "?")[0]
}

// pageGet GETs u and returns the body; anything but 200 fails t.
func pageGet(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, res.StatusCode, b)
	}
	return string(b)
}
