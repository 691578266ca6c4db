package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// The byte path (bytepath.go): a result that fits reaches the host as the
// downstream's own bytes, redacted by the exit; one that does not is cut
// on the struct path; the ledger records either alike.

const bytepathToken = "bp-s3cret-0123456789" // given to quiver as a ${VAR}

// bytepathResults are the downstream's results, by tool: "shaped" has its
// structured keys out of order, which the struct path (decode, re-encode)
// would sort; the host must see them as sent.
func bytepathResults() map[string]*mcp.CallToolResult {
	return map[string]*mcp.CallToolResult{
		"shaped": {Content: []mcp.Content{mcp.NewTextContent("a <b> & \"c\"\nline")},
			RawStructuredContent: json.RawMessage(`{"zeta":1,"alpha":[true,null,"x"],"mid":{"b":2,"a":1}}`)},
		"leaks": {Content: []mcp.Content{mcp.NewTextContent("key " + bytepathToken + " and " + testToken)},
			RawStructuredContent: json.RawMessage(`{"z":"` + bytepathToken + `","a":"` + testToken + `"}`)},
		"fails": {IsError: true, Content: []mcp.Content{mcp.NewTextContent("it failed")}},
		"fails_why": {IsError: true, Content: []mcp.Content{mcp.NewTextContent("the key " + bytepathToken + " was refused:\n" +
			strings.Repeat("a long reason ", 100))}},
		"big": {Content: []mcp.Content{mcp.NewTextContent(strings.Repeat("0123456789abcdef ", 1024))}},
	}
}

// bytepathServer runs quiver in front of a streamable HTTP downstream
// serving bytepathResults, with a 4 KiB result bound.
func bytepathServer(t *testing.T) *Server {
	t.Helper()
	ds := server.NewMCPServer("bytes", "1", server.WithToolCapabilities(false))
	for name, res := range bytepathResults() {
		ds.AddTool(mcp.NewTool(name, mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false)),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
	}
	down := httptest.NewServer(server.NewStreamableHTTPServer(ds))
	t.Cleanup(down.Close)
	t.Setenv("QUIVER_BYTEPATH_TOKEN", bytepathToken)
	yaml := fmt.Sprintf("surface: {reveal: direct, max_result_bytes: 4096}\nservers:\n  ds:\n    url: %s/mcp\n    headers: {X-Key: \"${QUIVER_BYTEPATH_TOKEN}\"}\n", down.URL)
	cfg, err := registry.ParseConfig("servers.yaml", []byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, cfg, Options{StateDir: t.TempDir()})
}

// A host speaks to quiver in raw JSON-RPC, so that the test sees the bytes.
type rawHost interface {
	// call sends one request and returns its response's result as sent.
	call(t *testing.T, method string, params any) json.RawMessage
}

const bytepathInit = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`

// stdioHost serves s over pipes, as quiver serve does over stdin/stdout.
type stdioHost struct {
	in  io.Writer
	out *bufio.Reader
	id  int
}

func newStdioHost(t *testing.T, s *Server) *stdioHost {
	in, out := servePipes(t, s)
	h := &stdioHost{in: in, out: bufio.NewReader(out)}
	h.call(t, "initialize", json.RawMessage(bytepathInit))
	fmt.Fprintln(h.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h
}

// servePipes serves s on stdio over pipes, as quiver serve does over
// stdin and stdout, until the test ends: the host writes to in and reads
// from out.
func servePipes(tb testing.TB, s *Server) (in io.WriteCloser, out io.ReadCloser) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.ServeStdio(ctx, inR, outW) }()
	tb.Cleanup(func() { cancel(); inW.Close(); <-done; outW.Close() })
	return inW, outR
}

func (h *stdioHost) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	h.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.id, "method": method, "params": params})
	if _, err := h.in.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := h.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if res, ok := responseTo(t, line, h.id); ok {
			return res
		}
	}
}

// httpHost posts to s's streamable HTTP handler.
type httpHost struct {
	url, session string
	id           int
}

func newHTTPHost(t *testing.T, s *Server) *httpHost {
	srv := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(srv.Close)
	h := &httpHost{url: srv.URL + "/mcp"}
	h.call(t, "initialize", json.RawMessage(bytepathInit))
	h.post(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return h
}

func (h *httpHost) post(t *testing.T, body []byte) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if h.session != "" {
		req.Header.Set("Mcp-Session-Id", h.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		h.session = id
	}
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (h *httpHost) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	h.id++
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.id, "method": method, "params": params})
	body := h.post(t, req)
	// A JSON body, or an event stream whose data lines are messages.
	for _, line := range bytes.Split(body, []byte("\n")) {
		line = bytes.TrimPrefix(line, []byte("data: "))
		if res, ok := responseTo(t, line, h.id); ok {
			return res
		}
	}
	t.Fatalf("%s: no response in %s", method, body)
	return nil
}

// responseTo returns the result of line when it is the response to id.
func responseTo(t *testing.T, line []byte, id int) (json.RawMessage, bool) {
	t.Helper()
	var m struct {
		ID     *int            `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != id || m.Method != "" {
		return nil, false
	}
	if m.Error != nil {
		t.Fatalf("error response: %s", line)
	}
	return m.Result, true
}

func bytepathHosts(t *testing.T, s *Server) map[string]rawHost {
	return map[string]rawHost{"stdio": newStdioHost(t, s), "http": newHTTPHost(t, s)}
}

func callParams(tool string) map[string]any {
	return map[string]any{"name": "ds__" + tool, "arguments": map[string]any{}}
}

// TestBytePathPassesResultsAsSent: a result that fits reaches the host as
// the downstream encoded it, byte for byte: the struct path would have
// sorted its structured keys.
func TestBytePathPassesResultsAsSent(t *testing.T) {
	s := bytepathServer(t)
	for name, h := range bytepathHosts(t, s) {
		t.Run(name, func(t *testing.T) {
			for _, tool := range []string{"shaped", "fails"} {
				want, err := json.Marshal(bytepathResults()[tool]) // as the downstream, mcp-go too, sent it
				if err != nil {
					t.Fatal(err)
				}
				if got := h.call(t, "tools/call", callParams(tool)); !bytes.Equal(got, want) {
					t.Errorf("%s:\n got %s\nwant %s", tool, got, want)
				}
			}
		})
	}
}

// TestBytePathRedacts: the configuration's secret and a credential shape
// in a result that fits are redacted on the way out, in the text and in
// the structured content, over stdio and over HTTP.
func TestBytePathRedacts(t *testing.T) {
	s := bytepathServer(t)
	for name, h := range bytepathHosts(t, s) {
		t.Run(name, func(t *testing.T) {
			got := string(h.call(t, "tools/call", callParams("leaks")))
			if strings.Contains(got, bytepathToken) || strings.Contains(got, "0123456789abcdef") {
				t.Fatalf("a secret reached the host: %s", got)
			}
			if strings.Count(got, "[redacted") < 4 {
				t.Fatalf("want the four secrets marked as redacted: %s", got)
			}
		})
	}
}

// TestBytePathStillCuts: a result over the bound takes the struct path and
// is cut, with the mark hosts look for.
func TestBytePathStillCuts(t *testing.T) {
	s := bytepathServer(t)
	for name, h := range bytepathHosts(t, s) {
		t.Run(name, func(t *testing.T) {
			raw := h.call(t, "tools/call", callParams("big"))
			res, err := mcp.ParseCallToolResult(&raw)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) > 4096+boundSlack || res.Meta == nil || res.Meta.AdditionalFields["quiver/truncated"] != true || !strings.Contains(string(raw), "output cut here") {
				t.Fatalf("not cut (%d bytes): %.300s", len(raw), raw)
			}
		})
	}
}

// TestBytePathLedger: the ledger records a call whose result went as bytes
// exactly as one whose result was decoded (an in-process host has no exit,
// so its results take the struct path), and a failed call's detail is the
// server's error text, redacted and bounded (issue 29).
func TestBytePathLedger(t *testing.T) {
	s := bytepathServer(t)
	h := newStdioHost(t, s)
	c := connectInProcess(t, s)
	for _, tool := range []string{"shaped", "fails", "fails_why"} {
		h.call(t, "tools/call", callParams(tool))
		req := mcp.CallToolRequest{}
		req.Params.Name = "ds__" + tool
		if _, err := c.CallTool(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	var calls []gate.CallEntry
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if calls, err = s.ledger.Audit(context.Background(), gate.AuditQuery{Tool: "ds__*"}); err != nil {
			t.Fatal(err)
		}
		ended := 0
		for _, e := range calls {
			if !e.Ended.IsZero() {
				ended++
			}
		}
		if ended == 6 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	type record struct {
		tool, verdict, code string
		outcome             gate.Outcome
		detail              string
	}
	seen := map[record]int{}
	for _, e := range calls {
		seen[record{e.Tool, e.Verdict, e.Code, e.Outcome, e.Detail}]++
	}
	for r, n := range seen {
		want, detail := gate.OutcomeOK, ""
		switch r.tool {
		case "ds__fails":
			want, detail = gate.OutcomeError, `the server said: "it failed"`
		case "ds__fails_why":
			want, detail = gate.OutcomeError, `the server said: "the key [redacted:QUIVER_BYTEPATH_TOKEN] was refused: a long reason`
		}
		if n != 2 || r.outcome != want || r.verdict != "allow" || !strings.HasPrefix(r.detail, detail) || len(r.detail) > maxDetail+len("…") {
			t.Errorf("%+v recorded %d times (want twice, outcome %s, detail %q, at most %d bytes): every record %+v", r, n, want, detail, maxDetail, calls)
		}
		if strings.Contains(r.detail, bytepathToken) {
			t.Errorf("the ledger keeps the secret: %q", r.detail)
		}
	}
	if len(seen) != 3 {
		t.Errorf("want one record shape per tool, got %v", seen)
	}
}

// heldBytes takes only what mcp-go's client would have decoded as well:
// anything else is decoded on the struct path, which refuses it as before.
func TestHeldBytesShapes(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"content":[{"type":"text","text":"hi"}]}`, true},
		{`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}],"isError":true}`, true},
		{`{"content":[],"structuredContent":{"b":1,"a":2},"_meta":{"x":1}}`, true},
		{`{"content":[{"type":"text","text":"` + strings.Repeat("x", 200) + `"}]}`, false}, // over the bound
		{`{"structuredContent":{}}`, false},                                                // no content
		{`{"content":[{"type":"text","text":5}]}`, false},                                  // a number for text
		{`{"content":[{"type":"resource_link","uri":"x","name":"y"}]}`, false},
		{`{"content":[{"type":"widget"}]}`, false},
		{`{"content":[],"isError":"yes"}`, false},
		{`{"content":[],"resultType":"input_required"}`, false},
		{`{"content":[],"inputRequests":{}}`, false},
		{`{"content":[],"_meta":[]}`, false},
		{`{"content":[{"type":"text","text":"a"},{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"text","text":"b"}]}`, true},
		{`{"content":[{"type":"text","text":"RT_SECRET=abc"},{"type":"text","text":"def"}]}`, false}, // texts read as one: bound redacts across them
	} {
		res, ok := heldBytes(json.RawMessage(tc.raw), 128)
		if ok != tc.want {
			t.Errorf("%s: held %v, want %v", tc.raw, ok, tc.want)
			continue
		}
		if !ok {
			continue
		}
		msg, err := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(7), res))
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		_ = json.Compact(&want, []byte(`{"jsonrpc":"2.0","id":7,"result":`+tc.raw+`}`))
		if got := spliced(msg); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("spliced:\n got %s\nwant %s", got, want.Bytes())
		}
	}
}

// A stand-in of a shape spliced does not expect is still replaced: none
// reaches the host.
func TestSplicedSlowly(t *testing.T) {
	res, ok := heldBytes(json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`), 0)
	if !ok {
		t.Fatal("not held")
	}
	res.ResultType = "complete" // as mcp-go decorates a result for a host on 2026-07-28
	msg, _ := json.Marshal(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(1), res))
	got := string(spliced(msg))
	if strings.Contains(got, rawMark) || !strings.Contains(got, `"result":{"content":[{"type":"text","text":"hi"}]}`) {
		t.Fatalf("got %s", got)
	}
}

// serverSaid stays within maxDetail however much quoting expands the
// text (a text of control characters grows six-fold).
func TestServerSaidIsBounded(t *testing.T) {
	for _, text := range []string{strings.Repeat("\x01", 5000), strings.Repeat("é\x1b", 3000), "short"} {
		if d := serverSaid(text); len(d) > maxDetail || !strings.HasPrefix(d, `the server said: "`) {
			t.Errorf("%d bytes: %q", len(d), d)
		}
	}
}
