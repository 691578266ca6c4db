// Package operator is quiver's operator page: a small local web
// application where a person answers approval cards, switches tools on and
// off, tries searches, reads the audit and revokes grants.
//
// It is for the host that cannot show an approval card (Claude Desktop
// does not elicit): with the page on, a call that needs an approval waits
// for the answer given here, exactly as it waits for a card answered in
// the host. Every page reads through the packages the command line uses
// (the gate's ledger, the registry's toggles file, the proxy's search);
// nothing here keeps a second copy of a query.
//
// The page runs tools with the user's rights, so it is guarded like a
// door: a random token in the address "quiver ui" prints opens it once per
// browser, which then holds a session secret of its own in a cookie (so
// the token in an address is not what a browser keeps, nor what it sends
// to every other server on 127.0.0.1, cookies being blind to ports);
// every change carries a CSRF token and must come from the page's own
// origin; and the Host header must name a loopback host, or beyond
// loopback be an IP address, never a name (DNS rebinding). Beyond
// loopback, the token is the HTTP auth token the operator set.
package operator

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/quiver-mcp/quiver/gate"
	"github.com/quiver-mcp/quiver/registry"
)

// A Proxy is what the page needs of the running quiver (proxy.Server).
type Proxy interface {
	// Ledger is the ledger calls are recorded in; nil without a state dir.
	Ledger() *gate.Ledger
	// Answer records an answer to a pending approval and wakes the call
	// that waits for it.
	Answer(ctx context.Context, id int64, r gate.Resolution) (gate.Approval, error)
	// Waiting lists the approvals whose calls wait now.
	Waiting() []int64
	// WatchApprovals ticks when a call starts or stops waiting.
	WatchApprovals() (<-chan struct{}, func())
	Catalog() *registry.Catalog
	Class(t registry.Tool) gate.Class
	// Search runs search_tools as a fresh session would.
	Search(ctx context.Context, args json.RawMessage) *mcp.CallToolResult
	// Redact hides quiver's secrets in text shown on the page.
	Redact(text string) string
}

// Options configure a Handler.
type Options struct {
	// Toggles is the toggles file the Tools page writes (tools.yaml).
	Toggles string
	// Token opens the page; New makes a random one when it is empty.
	// Beyond loopback it must be the HTTP auth token (cmd/quiver does so):
	// the page is then as hard to open as the MCP endpoint.
	Token  string
	Logger *slog.Logger
}

// A Handler serves the operator page.
type Handler struct {
	p    Proxy
	opts Options
	csrf string
	// sessions are the secrets of the browsers that opened the page with
	// the token; a cookie is worth nothing unless it is one of these.
	mu       sync.Mutex
	sessions map[string]bool
	pages    *template.Template
	mux      *http.ServeMux
	log      *slog.Logger
}

//go:embed assets
var assets embed.FS

// cookieName is the cookie that holds a browser's session secret on the
// page at local address addr. Cookies do not tell ports apart, so the
// name carries the port: two quivers on one machine keep their own.
func cookieName(r *http.Request) string {
	if tcp, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		return fmt.Sprintf("quiver_operator_%d", tcp.Port)
	}
	return "quiver_operator"
}

// randomHex is n random bytes, in hex.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// New returns the page's handler for p.
func New(p Proxy, opts Options) (*Handler, error) {
	if opts.Token == "" {
		tok, err := randomHex(24)
		if err != nil {
			return nil, err
		}
		opts.Token = tok
	}
	// The CSRF token comes from a key that never leaves the process, not
	// from the page token: knowing an address does not forge a form.
	key, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("csrf"))
	h := &Handler{p: p, opts: opts, csrf: hex.EncodeToString(mac.Sum(nil)), sessions: map[string]bool{},
		pages: t, mux: http.NewServeMux(), log: opts.Logger}
	h.routes()
	return h, nil
}

// Token is the token that opens the page.
func (h *Handler) Token() string { return h.opts.Token }

// URL is the address that opens the page on a server listening at addr.
func (h *Handler) URL(addr string) string {
	return "http://" + addr + "/?token=" + url.QueryEscape(h.opts.Token)
}

func (h *Handler) routes() {
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/approvals", http.StatusSeeOther)
	})
	h.mux.HandleFunc("GET /approvals", h.approvals)
	h.mux.HandleFunc("GET /approvals/cards", h.cards)
	h.mux.HandleFunc("GET /approvals/events", h.events)
	h.mux.HandleFunc("POST /approvals/{id}", h.decide)
	h.mux.HandleFunc("GET /tools", h.tools)
	h.mux.HandleFunc("POST /tools/switch", h.switchTool)
	h.mux.HandleFunc("POST /tools/accept", h.decideChange)
	h.mux.HandleFunc("POST /tools/reject", h.decideChange)
	h.mux.HandleFunc("GET /search", h.search)
	h.mux.HandleFunc("GET /audit", h.audit)
	h.mux.HandleFunc("GET /grants", h.grants)
	h.mux.HandleFunc("POST /grants/{id}/revoke", h.revoke)
	h.mux.Handle("GET /static/", http.FileServerFS(staticFS()))
}

// ServeHTTP checks the door, then serves the page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	// same-origin, not no-referrer: with no-referrer Chromium sends
	// "Origin: null" on the page's own form posts.
	w.Header().Set("Referrer-Policy", "same-origin")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !hostOK(r) {
		http.Error(w, "quiver: this page answers to its own address only: a loopback host, or beyond loopback an IP address (the Host header named another)", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		http.Error(w, "quiver: a request from another site ("+o+") is refused", http.StatusForbidden)
		return
	}
	if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet {
		if !h.tokenOK(tok) {
			h.unauthorized(w)
			return
		}
		// The token leaves the address (history, screen shares) for a
		// session secret of this browser's own, in a cookie no script
		// and no other site can read.
		sess, err := randomHex(24)
		if err != nil {
			h.fail(w, http.StatusInternalServerError, err)
			return
		}
		h.mu.Lock()
		h.sessions[sess] = true
		h.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: sess, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(cookieName(r))
	if err != nil || !h.sessionOK(c.Value) {
		h.unauthorized(w)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// A change must come from this page: its own origin, and the
		// CSRF token only its forms carry.
		if r.Header.Get("Origin") == "" && !sameOriginReferer(r) {
			http.Error(w, "quiver: a change needs the page's Origin header; submit it from the page", http.StatusForbidden)
			return
		}
		if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(h.csrf)) {
			http.Error(w, "quiver: the form's CSRF token is missing or wrong; reload the page and try again", http.StatusForbidden)
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.Token)) == 1
}

func (h *Handler) sessionOK(sess string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[sess]
}

func (h *Handler) unauthorized(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("quiver: this page needs its token. Open the address that `quiver ui` prints, which carries it (a cookie from an earlier run of quiver is not enough).\n"))
}

// sameOriginReferer accepts a change whose browser sent no Origin but a
// Referer of this page (older browsers on a same-origin form post).
func sameOriginReferer(r *http.Request) bool {
	u, err := url.Parse(r.Referer())
	return err == nil && u.Scheme == "http" && u.Host == r.Host
}

// hostOK reports whether r's Host header may name this page: a loopback
// host; or, when the page listens beyond loopback, an IP address. Never
// another name, which is how a DNS-rebinding page would reach it.
func hostOK(r *http.Request) bool {
	host := r.Host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		host = hh
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	tcp, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && !tcp.IP.IsLoopback()
}

// errBadForm is a form the page did not send.
var errBadForm = errors.New("bad form")
