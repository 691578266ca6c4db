package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// The HTTP front as a user meets it: "quiver serve --http" refuses foreign
// origins, oversized and slow bodies, requests without the token it was
// given, and a network address without a token.

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// httpQuiver is a running "quiver serve --http".
type httpQuiver struct {
	url    string // http://127.0.0.1:PORT/mcp, whatever address it bound
	config string // its servers.yaml
	pid    int
	logs   *syncBuffer
}

// startHTTPQuiver runs quiver serve --http on host:PORT (PORT free) with
// cfg as servers.yaml, extra flags and environment, and waits until it
// listens. QUIVER_AUTH_TOKEN from the test's own environment never leaks
// in.
func startHTTPQuiver(t *testing.T, host, cfg string, args, env []string) *httpQuiver {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	cmd := exec.Command(quiverBin, append([]string{"serve", "--http", net.JoinHostPort(host, port),
		"--config", path, "--state-dir", filepath.Join(dir, "state"), "--log-level", "info"}, args...)...)
	cmd.Env = append(environWithout("QUIVER_AUTH_TOKEN"), env...)
	q := &httpQuiver{url: "http://127.0.0.1:" + port + "/mcp", config: path, logs: &syncBuffer{}}
	cmd.Stderr = io.MultiWriter(testWriter{t}, q.logs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	q.pid = cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			conn.Close()
			return q
		}
		if time.Now().After(deadline) {
			t.Fatalf("quiver --http never listened: %v\n%s", err, q.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func environWithout(name string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// post sends an initialize request with headers and returns the status
// and the body.
func (q *httpQuiver) post(t *testing.T, body io.Reader, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, q.url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", q.url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// connect is an MCP host over HTTP that sends headers with every request.
func (q *httpQuiver) connect(t *testing.T, headers map[string]string) *host {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(q.url, transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	h := &host{t: t, c: c, changed: make(chan struct{}, 16)}
	h.startHTTP(t)
	return h
}

// works checks that a host with these headers can run a tool.
func (q *httpQuiver) works(t *testing.T, headers map[string]string) {
	t.Helper()
	h := q.connect(t, headers)
	h.waitTools("example__current_time")
	if res := h.call("example__current_time", map[string]any{}); res.IsError {
		t.Fatalf("example__current_time: %s", toolresult.Text(res))
	}
}

func TestHTTPGuard(t *testing.T) {
	const readTimeout = time.Second
	q := startHTTPQuiver(t, "127.0.0.1", exampleConfig("auto", fmt.Sprintf(`
http:
  read_timeout: %v
  allowed_origins: [https://app.example.com]
`, readTimeout)), nil, nil)

	t.Run("foreign_origin_refused", func(t *testing.T) {
		code, body := q.post(t, strings.NewReader(initializeBody), map[string]string{"Origin": "https://evil.example"})
		if code != http.StatusForbidden || !strings.Contains(body, "https://evil.example") || !strings.Contains(body, "http.allowed_origins") {
			t.Fatalf("foreign Origin: %d %s; want 403 naming the origin and http.allowed_origins", code, body)
		}
	})
	t.Run("loopback_origin_works", func(t *testing.T) {
		q.works(t, map[string]string{"Origin": "http://localhost:5173"})
	})
	t.Run("allowed_origin_works", func(t *testing.T) {
		if code, body := q.post(t, strings.NewReader(initializeBody), map[string]string{"Origin": "https://app.example.com"}); code != http.StatusOK {
			t.Fatalf("an origin in http.allowed_origins: %d %s", code, body)
		}
	})
	t.Run("5MiB_body_refused", func(t *testing.T) {
		body := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`)
		code, msg := q.post(t, body, nil)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "http.max_body") {
			t.Fatalf("a 5 MiB body: %d %s; want 413 naming http.max_body", code, msg)
		}
	})
	t.Run("64MiB_stream_refused_within_the_cap", func(t *testing.T) {
		before := rssKiB(t, q.pid, "VmRSS")
		// No Content-Length: the cap must hold on the stream itself. The
		// body goes over a raw connection, read and written at once: the
		// server answers 413 at the cap and then drops the connection, and
		// an http.Client still writing may see only that reset.
		conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(q.url, "http://"), "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		go func() {
			body := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`), io.LimitReader(letters{}, 64<<20))
			buf := make([]byte, 1<<20)
			for {
				n, err := body.Read(buf)
				if n > 0 {
					if _, werr := fmt.Fprintf(conn, "%x\r\n%s\r\n", n, buf[:n]); werr != nil {
						return // the server has stopped reading: as it should
					}
				}
				if err != nil {
					fmt.Fprint(conn, "0\r\n\r\n")
					return
				}
			}
		}()
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("a 64 MiB chunked body: no answer: %v", err)
		}
		resp.Body.Close()
		// 413 at the cap; on a machine so loaded that 4 MiB take longer
		// than the test's 1 s read_timeout, 408 first: refused either way,
		// and the memory check below is the point.
		if resp.StatusCode != http.StatusRequestEntityTooLarge && resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("a 64 MiB chunked body: %s, want 413", resp.Status)
		}
		if before > 0 {
			peak := rssKiB(t, q.pid, "VmHWM")
			if grew := (peak - before) >> 10; grew > 32 {
				t.Fatalf("a refused 64 MiB body took quiver from %d to a peak of %d MiB", before>>10, peak>>10)
			}
			t.Logf("RSS %d MiB before, peak %d MiB after a 64 MiB body", before>>10, peak>>10)
		}
	})
	t.Run("slow_body_cut_by_read_timeout", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(q.url, "http://"), "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", len(initializeBody))
		answered := make(chan string, 1)
		go func() {
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				answered <- "connection closed: " + err.Error()
				return
			}
			resp.Body.Close()
			answered <- resp.Status
		}()
		// One byte of the body every 100 ms: 160 bytes would take 16 s.
		deadline := time.After(5 * readTimeout)
		for i := 0; ; i++ {
			select {
			case got := <-answered:
				if !strings.HasPrefix(got, "408") && !strings.HasPrefix(got, "connection closed") {
					t.Fatalf("a body sent a byte at a time: %q, want 408 or a closed connection", got)
				}
				return
			case <-deadline:
				t.Fatalf("a body sent a byte at a time was not cut off after %v (read_timeout %v)", 5*readTimeout, readTimeout)
			case <-time.After(100 * time.Millisecond):
				if i < len(initializeBody)-1 {
					conn.Write([]byte{initializeBody[i]}) // an error means quiver hung up, as it should
				}
			}
		}
	})
	t.Run("stream_outlives_read_timeout", func(t *testing.T) {
		// A session's GET stream still carries notifications after
		// read_timeout: the timeout is for receiving requests, never for
		// answering them.
		q.connect(t, nil).waitTools("example__current_time") // no change pending
		sid := q.rawSession(t)
		conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(q.url, "http://"), "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n", sid)
		br := bufio.NewReader(conn)
		status, err := br.ReadString('\n')
		if err != nil || !strings.Contains(status, " 200 ") {
			t.Fatalf("GET stream: %q, %v", status, err)
		}
		time.Sleep(2 * readTimeout)
		// Dropping the example server changes every session's tools.
		if err := os.WriteFile(q.config, []byte("surface:\n  reveal: auto\nservers: {}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("the GET stream, opened %v before, ended without the list_changed notification (read_timeout %v): %v", 2*readTimeout, readTimeout, err)
			}
			if strings.Contains(line, "notifications/tools/list_changed") {
				return
			}
		}
	})
}

// rawSession initializes a session by hand and returns its id.
func (q *httpQuiver) rawSession(t *testing.T) string {
	t.Helper()
	send := func(body, sid string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, q.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	sid := send(initializeBody, "").Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("initialize gave no session id")
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, sid)
	return sid
}

// letters is an endless stream of 'a'.
type letters struct{}

func (letters) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// rssKiB reads a memory figure of pid from /proc (0 where there is none).
func rssKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	if runtime.GOOS != "linux" {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// serveFails runs quiver serve with args and wants it to exit non-zero
// at once with a message containing each of want.
func serveFails(t *testing.T, cfg string, env []string, args []string, want ...string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "servers.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, quiverBin, append([]string{"serve", "--config", path, "--state-dir", filepath.Join(dir, "state")}, args...)...)
	cmd.Env = append(environWithout("QUIVER_AUTH_TOKEN"), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("quiver serve %v did not exit: it started", args)
	}
	if err == nil {
		t.Fatalf("quiver serve %v exited 0; want a refusal:\n%s", args, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("quiver serve %v says:\n%s\nwant it to mention %q", args, out, w)
		}
	}
}

func TestHTTPNetworkAddressNeedsToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		serveFails(t, exampleConfig("auto", ""), nil, []string{"--http", addr}, "--auth-token-file", "QUIVER_AUTH_TOKEN")
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("short\n"), 0o600)
	serveFails(t, exampleConfig("auto", ""), nil, []string{"--http", "0.0.0.0:0", "--auth-token-file", tokenFile}, "at least 16")
	serveFails(t, exampleConfig("auto", ""), nil, []string{"--auth-token-file", tokenFile}, "--http")
}

func TestHTTPToken(t *testing.T) {
	const token = "e2e-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, host string
		args, env  []string
	}{
		{"file_on_all_interfaces", "0.0.0.0", []string{"--auth-token-file", tokenFile}, nil},
		{"env_on_loopback", "127.0.0.1", nil, []string{"QUIVER_AUTH_TOKEN=" + token}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := startHTTPQuiver(t, tc.host, exampleConfig("auto", ""), tc.args, tc.env)
			for _, auth := range []string{"", "Bearer wrong-token-0123456789"} {
				req, _ := http.NewRequest(http.MethodPost, q.url, strings.NewReader(initializeBody))
				req.Header.Set("Content-Type", "application/json")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Fatalf("Authorization %q: %d %v; want 401 with WWW-Authenticate: Bearer", auth, resp.StatusCode, resp.Header)
				}
			}
			q.works(t, map[string]string{"Authorization": "Bearer " + token})
			nonLoopback := strings.Contains(q.logs.String(), "non-loopback")
			if nonLoopback != (tc.host != "127.0.0.1") {
				t.Errorf("WARN about a non-loopback address: %v, want %v:\n%s", nonLoopback, !nonLoopback, q.logs)
			}
			if strings.Contains(q.logs.String(), token) {
				t.Errorf("the log shows the token:\n%s", q.logs)
			}
		})
	}
}

func TestHTTPConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, section string
		want          []string
	}{
		{"decimal_unit", "http:\n  max_body: 4MB\n", []string{"servers.yaml:", "max_body", "MiB"}},
		{"negative_size", "http:\n  max_body: -1\n", []string{"max_body", "positive"}},
		{"not_an_origin", "http:\n  allowed_origins: [app.example.com, \"null\"]\n", []string{"allowed_origins", "app.example.com", "null"}},
		{"unknown_key", "http:\n  max_bodies: 1\n", []string{"max_bodies"}},
		{"negative_timeout", "http:\n  read_timeout: -1s\n", []string{"read_timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serveFails(t, exampleConfig("auto", tc.section), nil, []string{"--http", "127.0.0.1:0"}, tc.want...)
		})
	}
}

func TestHTTPByteSize(t *testing.T) {
	for in, want := range map[string]int64{"4194304": 4 << 20, "4MiB": 4 << 20, "512 KiB": 512 << 10, "1GiB": 1 << 30, "100B": 100} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1", "4MB", "4 mib", "1.5MiB", "MiB", "99999999999GiB"} {
		if _, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) accepted", in)
		}
	}
}

// serve hands proxy the toggles file in use, wherever --toggles puts it:
// a downstream call may not read it even inside the fence, or a model
// could switch tools on for itself.
func TestHTTPServeProtectsTogglesFile(t *testing.T) {
	dir := t.TempDir()
	toggles := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(toggles, []byte("# no switches\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o700); err != nil {
		t.Fatal(err)
	}
	q := startHTTPQuiver(t, "127.0.0.1", fencedExample(dir), []string{"--toggles", toggles}, nil)
	h := q.connect(t, nil)
	h.waitTools("example__search_text")
	if res := h.call("example__search_text", map[string]any{"dir": filepath.Join(dir, "work"), "pattern": "x"}); res.IsError {
		t.Fatalf("a folder inside the fence: %s", toolresult.Text(res))
	}
	wantRefusal(t, h.call("example__search_text", map[string]any{"dir": toggles, "pattern": "switch"}), "deny.protected_path")
}

// fencedExample is a config with the example server, every tool listed,
// and a fence of dir.
func fencedExample(dir string) string {
	return fmt.Sprintf(`
surface:
  reveal: direct
servers:
  example:
    command: quiver
    args: [example-server, --test-tools]
fence:
  allowed_dirs: [%q]
`, dir)
}

// TestHTTPGetWithoutSessionIsRefused is issue 17's point 6: GET /mcp
// without a session used to open an event stream that never ended; it is
// 405 with a sentence, at once, and a real client still works.
func TestHTTPGetWithoutSessionIsRefused(t *testing.T) {
	q := startHTTPQuiver(t, "127.0.0.1", exampleConfig("auto", ""), nil, nil)
	req, _ := http.NewRequest(http.MethodGet, q.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("GET /mcp without a session did not answer within 5s: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(body), "initialize with POST first") {
		t.Errorf("GET /mcp without a session: %d %s; want 405 saying to initialize first", resp.StatusCode, body)
	}
	q.works(t, nil)
}
