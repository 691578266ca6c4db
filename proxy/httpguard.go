package proxy

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// DefaultMaxBody is the request body cap when GuardOptions.MaxBody is 0:
// far above any JSON-RPC message a host sends, far below what would hurt.
const DefaultMaxBody int64 = 4 << 20

// GuardOptions configure Guard.
type GuardOptions struct {
	// AllowedOrigins are the browser origins, besides loopback ones, that
	// may call ("https://app.example.com", "http://10.0.0.5:3000"). An
	// entry is a scheme and a host with an optional port, nothing else.
	AllowedOrigins []string
	// MaxBody caps a request body in bytes; 0 means DefaultMaxBody.
	MaxBody int64
	// Token, when set, must come with every request as
	// "Authorization: Bearer <Token>".
	Token string
	// Logger hears about refusals; nil means slog.Default().
	Logger *slog.Logger
}

// Guard wraps the MCP HTTP handler with the checks a network-facing MCP
// server owes its user and mcp-go does not make:
//
//   - Origin: the MCP spec says servers MUST validate it, or any web page
//     the user opens can drive their tools through the browser. A request
//     without Origin (every non-browser client) passes; a loopback origin
//     (http or https, localhost, 127.0.0.0/8 or [::1], any port) passes; so
//     does one in AllowedOrigins. Any other is refused with 403.
//   - Authorization: with a Token, a request without the right bearer token
//     is refused with 401 and WWW-Authenticate: Bearer. The comparison is
//     constant-time.
//   - Body size: a body over MaxBody is refused with 413, without reading
//     more than MaxBody bytes of it. mcp-go reads a body whole into memory
//     and answers a read error with a JSON-RPC parse error, so Guard reads
//     the body itself, within the cap, and hands mcp-go the bytes.
//
// A body that arrives too slowly is cut off by the http.Server's
// ReadTimeout; Guard answers 408 when it notices. Refusals carry a
// JSON-RPC error object that says what to change.
//
// Guard returns an error when an entry of AllowedOrigins is not an origin.
func Guard(next http.Handler, opts GuardOptions) (http.Handler, error) {
	g := &guard{next: next, maxBody: opts.MaxBody, log: opts.Logger, origins: map[string]bool{}}
	if g.maxBody == 0 {
		g.maxBody = DefaultMaxBody
	}
	if g.maxBody < 0 {
		return nil, fmt.Errorf("max body %d: must be a positive number of bytes", opts.MaxBody)
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	if opts.Token != "" {
		sum := sha256.Sum256([]byte(opts.Token))
		g.token = sum[:]
	}
	for _, o := range opts.AllowedOrigins {
		norm, err := ParseOrigin(o)
		if err != nil {
			return nil, err
		}
		g.origins[norm] = true
	}
	return g, nil
}

type guard struct {
	next    http.Handler
	maxBody int64
	token   []byte // sha256 of the token; nil means no auth
	origins map[string]bool
	log     *slog.Logger
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, o := range r.Header.Values("Origin") {
		if o == "" || g.originAllowed(o) {
			continue
		}
		g.log.Warn("http: request from a foreign origin refused", "origin", o, "remote", r.RemoteAddr)
		refuse(w, http.StatusForbidden, fmt.Sprintf(
			"origin %q may not call this server; to allow it, list it under http.allowed_origins in servers.yaml and restart quiver", o))
		return
	}
	if g.token != nil && !g.authorized(r) {
		g.log.Info("http: request without a valid bearer token refused", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="quiver"`)
		refuse(w, http.StatusUnauthorized,
			`this server requires "Authorization: Bearer <token>" with the token quiver was started with (--auth-token-file or QUIVER_AUTH_TOKEN)`)
		return
	}
	if r.ContentLength > g.maxBody {
		g.tooLarge(w, r)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		body, err := g.readBody(w, r)
		if err != nil {
			var mbe *http.MaxBytesError
			var ne net.Error
			switch {
			case errors.As(err, &mbe):
				g.tooLarge(w, r)
			case errors.As(err, &ne) && ne.Timeout():
				g.log.Info("http: request body not received in time", "remote", r.RemoteAddr)
				w.Header().Set("Connection", "close")
				refuse(w, http.StatusRequestTimeout, "the request body did not arrive in time (http.read_timeout in servers.yaml)")
			default:
				w.Header().Set("Connection", "close")
				refuse(w, http.StatusBadRequest, fmt.Sprintf("read request body: %v", err))
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	g.next.ServeHTTP(w, r)
}

// readBody reads r's body whole, at most maxBody bytes of it. With a known
// length it allocates once.
func (g *guard) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, g.maxBody)
	defer rd.Close()
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(rd)
	return buf.Bytes(), err
}

func (g *guard) tooLarge(w http.ResponseWriter, r *http.Request) {
	g.log.Info("http: request body over the cap refused", "remote", r.RemoteAddr, "content_length", r.ContentLength, "max_body", g.maxBody)
	// The rest of the body is never read: the connection cannot be reused.
	w.Header().Set("Connection", "close")
	refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(
		"the request body is larger than %d bytes; raise http.max_body in servers.yaml to allow more", g.maxBody))
}

func (g *guard) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	// Hashing first makes the comparison constant-time in the length too.
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], g.token) == 1
}

func (g *guard) originAllowed(o string) bool {
	norm, err := ParseOrigin(o)
	if err != nil {
		return false // "null", a path, garbage: never an origin we trust
	}
	return g.origins[norm] || loopbackOrigin(norm)
}

// loopbackOrigin says whether a normalized origin is a page served from
// this machine over http or https.
func loopbackOrigin(norm string) bool {
	u, err := url.Parse(norm)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ParseOrigin checks that s is a web origin (scheme://host[:port], as a
// browser sends it in the Origin header) and returns it normalized: scheme
// and host in lower case, a default port (80 for http, 443 for https) and a
// trailing slash dropped. "null" is not an origin: browsers send it for
// sandboxed frames and file: pages, which must not be trusted by name.
func ParseOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("origin %q: %w", s, err)
	}
	switch {
	case u.Scheme == "" || u.Host == "":
		return "", fmt.Errorf("origin %q: want scheme://host[:port], e.g. https://app.example.com", s)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("origin %q: an origin is only scheme://host[:port], without a path, query or user", s)
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}

// refuse writes a JSON-RPC error object (id null: the request was never
// read as one) with an HTTP status, the way mcp-go answers its own
// refusals, so a client shows the message.
func refuse(w http.ResponseWriter, status int, msg string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": -32600, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
