package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echo answers 200 with the number of body bytes it read.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	fmt.Fprintf(w, "read %d", n)
})

func newGuard(t *testing.T, next http.Handler, opts GuardOptions) http.Handler {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g, err := Guard(next, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// guardDo sends r through a guard and returns the recorded answer.
func guardDo(g http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, r)
	return rec
}

// rpcMessage is the error message of a refusal's JSON-RPC body.
func rpcMessage(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.JSONRPC != "2.0" || body.Error.Message == "" {
		t.Fatalf("refusal body is not a JSON-RPC error (%v): %s", err, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("refusal Content-Type = %q", ct)
	}
	return body.Error.Message
}

func TestGuardOrigin(t *testing.T) {
	g := newGuard(t, echo, GuardOptions{AllowedOrigins: []string{"https://App.Example.com:443/", "http://10.0.0.5:3000"}})
	for _, tc := range []struct {
		name    string
		origins []string
		want    int
	}{
		{"no_origin_passes", nil, 200},
		{"empty_origin_passes", []string{""}, 200},
		{"localhost", []string{"http://localhost"}, 200},
		{"localhost_any_port", []string{"http://localhost:5173"}, 200},
		{"localhost_upper_case", []string{"HTTP://LOCALHOST:5173"}, 200},
		{"https_127", []string{"https://127.0.0.1:8443"}, 200},
		{"all_of_127/8", []string{"http://127.5.6.7"}, 200},
		{"ipv6_loopback", []string{"http://[::1]:3000"}, 200},
		{"listed", []string{"https://app.example.com"}, 200},
		{"listed_with_default_port", []string{"https://app.example.com:443"}, 200},
		{"listed_ip_and_port", []string{"http://10.0.0.5:3000"}, 200},
		{"listed_host_other_port", []string{"https://app.example.com:8443"}, 403},
		{"listed_host_other_scheme", []string{"http://app.example.com"}, 403},
		{"foreign", []string{"https://evil.example"}, 403},
		{"null", []string{"null"}, 403},
		{"localhost_suffix", []string{"http://localhost.evil.example"}, 403},
		{"127_prefix", []string{"http://127.0.0.1.evil.example"}, 403},
		{"lan_address", []string{"http://192.168.1.10:8080"}, 403},
		{"file_scheme", []string{"file://"}, 403},
		{"loopback_over_other_scheme", []string{"ftp://localhost"}, 403},
		{"with_user", []string{"http://evil@localhost"}, 403},
		{"garbage", []string{"localhost:3000"}, 403},
		{"second_header_foreign", []string{"http://localhost", "https://evil.example"}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			for _, o := range tc.origins {
				r.Header.Add("Origin", o)
			}
			rec := guardDo(g, r)
			if rec.Code != tc.want {
				t.Fatalf("Origin %q: status %d, want %d: %s", tc.origins, rec.Code, tc.want, rec.Body)
			}
			if tc.want == 403 {
				msg := rpcMessage(t, rec)
				if !strings.Contains(msg, "http.allowed_origins") || !strings.Contains(msg, tc.origins[len(tc.origins)-1]) {
					t.Errorf("refusal does not name the origin and how to allow it: %s", msg)
				}
			}
		})
	}
}

func TestGuardAuth(t *testing.T) {
	const token = "s3cret-token-0123456789"
	g := newGuard(t, echo, GuardOptions{Token: token})
	for _, tc := range []struct {
		name, header string
		want         int
	}{
		{"none", "", 401},
		{"right", "Bearer " + token, 200},
		{"scheme_any_case", "bearer " + token, 200},
		{"wrong", "Bearer nope-nope-nope-nope-nope", 401},
		{"prefix_of_token", "Bearer " + token[:10], 401},
		{"token_plus_more", "Bearer " + token + "x", 401},
		{"basic", "Basic " + token, 401},
		{"bare_token", token, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			rec := guardDo(g, r)
			if rec.Code != tc.want {
				t.Fatalf("Authorization %q: status %d, want %d", tc.header, rec.Code, tc.want)
			}
			if tc.want == 401 {
				if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("401 without WWW-Authenticate: Bearer: %v", rec.Header())
				}
				if msg := rpcMessage(t, rec); strings.Contains(msg, token) {
					t.Errorf("refusal shows the token: %s", msg)
				}
			}
		})
	}
	// A foreign origin with the right token is still refused: the token
	// may sit in a browser extension's storage.
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Origin", "https://evil.example")
	if rec := guardDo(g, r); rec.Code != 403 {
		t.Fatalf("foreign origin with the token: %d, want 403", rec.Code)
	}
	// Without a token configured, no header is needed.
	if rec := guardDo(newGuard(t, echo, GuardOptions{}), httptest.NewRequest(http.MethodGet, "/mcp", nil)); rec.Code != 200 {
		t.Fatalf("no token configured: %d", rec.Code)
	}
}

// countingReader counts what the guard pulled from a body.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func TestGuardBody(t *testing.T) {
	const max = 1 << 20
	var called atomic.Bool
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called.Store(true)
		echo(w, r)
	})
	g := newGuard(t, next, GuardOptions{MaxBody: max})
	for _, tc := range []struct {
		name    string
		size    int64
		chunked bool // no Content-Length: the cap must hold on the stream
		want    int
	}{
		{"empty", 0, false, 200},
		{"at_the_cap", max, false, 200},
		{"at_the_cap_chunked", max, true, 200},
		{"over_by_one", max + 1, false, 413},
		{"over_by_one_chunked", max + 1, true, 413},
		{"64MiB_chunked", 64 << 20, true, 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called.Store(false)
			body := &countingReader{r: io.LimitReader(zeros{}, tc.size)}
			r := httptest.NewRequest(http.MethodPost, "/mcp", body)
			r.ContentLength = tc.size
			if tc.chunked {
				r.ContentLength = -1
			}
			rec := guardDo(g, r)
			if rec.Code != tc.want {
				t.Fatalf("%d-byte body: status %d, want %d: %s", tc.size, rec.Code, tc.want, rec.Body)
			}
			if tc.want == 200 {
				if got := rec.Body.String(); got != fmt.Sprintf("read %d", tc.size) {
					t.Fatalf("the handler saw %q, want the whole body", got)
				}
				return
			}
			if called.Load() {
				t.Fatal("the handler ran for a body over the cap")
			}
			if msg := rpcMessage(t, rec); !strings.Contains(msg, "http.max_body") || !strings.Contains(msg, fmt.Sprint(max)) {
				t.Errorf("413 does not say the cap and how to raise it: %s", msg)
			}
			if read := body.n.Load(); read > max+64<<10 {
				t.Errorf("the guard read %d bytes of a %d-byte body; the cap is %d", read, tc.size, max)
			}
			if rec.Header().Get("Connection") != "close" {
				t.Error("413 keeps a connection whose body was left unread")
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestGuardConfig(t *testing.T) {
	for _, bad := range []string{"null", "app.example.com", "https://app.example.com/path", "https://u@app.example.com", "https://app.example.com?x", "https://"} {
		if _, err := Guard(echo, GuardOptions{AllowedOrigins: []string{bad}}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("allowed origin %q: err = %v, want one naming it", bad, err)
		}
	}
	if _, err := Guard(echo, GuardOptions{MaxBody: -1}); err == nil {
		t.Error("a negative MaxBody was accepted")
	}
	for in, want := range map[string]string{
		"HTTPS://App.Example.COM:443/": "https://app.example.com",
		"http://localhost:80":          "http://localhost",
		"http://[::1]:8080":            "http://[::1]:8080",
		"vscode-webview://abc123":      "vscode-webview://abc123",
	} {
		if got, err := ParseOrigin(in); err != nil || got != want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// A real server: a body that trickles in is cut by the server's
// ReadTimeout, and a stream answering a POST outlives that timeout (net/http
// clears the read deadline once the guard has read the body to its end).
func TestGuardTimeouts(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 6 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(readTimeout / 2):
			}
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	})
	srv := httptest.NewUnstartedServer(newGuard(t, stream, GuardOptions{}))
	srv.Config.ReadTimeout = readTimeout
	srv.Start()
	defer srv.Close()

	t.Run("slow_body_is_cut", func(t *testing.T) {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
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
		deadline := time.After(10 * readTimeout)
		for {
			select {
			case got := <-answered:
				t.Log(got)
				if !strings.HasPrefix(got, "408") && !strings.HasPrefix(got, "connection closed") {
					t.Fatalf("a body sent a byte at a time got %q, want 408 or a closed connection", got)
				}
				return
			case <-deadline:
				t.Fatal("a body sent a byte at a time was never cut off")
			case <-time.After(readTimeout / 6):
				conn.Write([]byte(" ")) // an error here means the server hung up, as it should
			}
		}
	})

	t.Run("stream_outlives_read_timeout", func(t *testing.T) {
		resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Contains(b, []byte("data: 5")) {
			t.Fatalf("a stream of %v was cut by a %v ReadTimeout: %q, %v", 3*readTimeout, readTimeout, b, err)
		}
	})
}
