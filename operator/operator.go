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
// door: a random token in the address "quiver ui" prints, or a one-time
// code "quiver ui --open" hands the browser (argv is readable by every
// account on the machine, so it carries nothing reusable), opens it once
// per browser. The browser then holds two secrets of its own: a session
// in a cookie, which lets it read the pages, and the page's key, which
// only the page's own script holds (in the origin's storage, which is
// per port) and every change must carry. Cookies are blind to ports, so
// every other server on 127.0.0.1 the browser visits is sent the session;
// the key it never sees, and no response to the cookie holds it: a
// replayed cookie reads, it never decides. Every change must also come
// from the page's own origin, and the Host header must name a loopback
// host, or beyond loopback be an IP address, never a name (DNS
// rebinding). Beyond loopback, the token is the HTTP auth token the
// operator set.
package operator

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
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
	"os"
	"strings"
	"sync"
	"time"

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
	// OpenerDir is a folder only this user reads (0700, in quiver's state
	// dir) where POST /code?as=file leaves a code for a browser: a small
	// page that posts the code to this page, so that the browser's
	// arguments hold the file's path, never the code ("" turns it off).
	OpenerDir string
}

// A Handler serves the operator page.
type Handler struct {
	p    Proxy
	opts Options
	// sessions are the secrets of the browsers that opened the page with
	// the token or a code, each with the page key its changes carry; a
	// cookie is worth nothing unless it is one of these. codes are the
	// one-time codes, with when they expire and, once used, the session
	// they opened.
	mu       sync.Mutex
	sessions map[string]string
	codes    map[string]oneTimeCode
	pages    *template.Template
	mux      *http.ServeMux
	log      *slog.Logger
	now      func() time.Time
}

// codeTTL is how long a one-time code opens the page: long enough for a
// browser to start.
const codeTTL = 2 * time.Minute

// A oneTimeCode is a code Code made: when it expires, and the session it
// opened once used ("" before).
type oneTimeCode struct {
	expires time.Time
	session string
	// file is the opener file that holds the code ("" for none): removed
	// once the code is used or expired.
	file string
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
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	h := &Handler{p: p, opts: opts, sessions: map[string]string{}, codes: map[string]oneTimeCode{},
		pages: t, mux: http.NewServeMux(), log: opts.Logger, now: time.Now}
	h.routes()
	return h, nil
}

// Token is the token that opens the page.
func (h *Handler) Token() string { return h.opts.Token }

// URL is the address that opens the page on a server listening at addr.
func (h *Handler) URL(addr string) string {
	return "http://" + addr + "/?token=" + url.QueryEscape(h.opts.Token)
}

// Code returns a new one-time code that opens the page once, within
// codeTTL: what "quiver ui --open" puts in the browser's arguments
// instead of the token (POST /code, with the token as a bearer token).
func (h *Handler) Code() (string, error) {
	code, err := randomHex(24)
	if err != nil {
		return "", err
	}
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for c, oc := range h.codes {
		if now.After(oc.expires) {
			removeOpener(oc.file)
			delete(h.codes, c)
		}
	}
	h.codes[code] = oneTimeCode{expires: now.Add(codeTTL)}
	return code, nil
}

// openerFile leaves code in a page in OpenerDir that posts it to this
// page at base (http://host:port): a process's arguments are readable by
// every account on the machine (/proc), a file of mode 0600 in a 0700
// folder by this user alone, as Jupyter's redirect file is. The form
// posts (a code in an address would stay in the history); without
// scripts, its button does. The file goes once the code is used, or
// when it expires.
func (h *Handler) openerFile(code, base string) (string, error) {
	dir := h.opts.OpenerDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "open-*.html")
	if err != nil {
		return "", err
	}
	page := `<!doctype html><meta charset="utf-8"><title>quiver</title>` +
		`<form method="post" action="` + template.HTMLEscapeString(base+"/open") + `">` +
		`<input type="hidden" name="code" value="` + template.HTMLEscapeString(code) + `">` +
		`<button>Open quiver's page</button></form><script>document.forms[0].submit()</script>` + "\n"
	_, werr := f.WriteString(page)
	if err := errors.Join(werr, f.Chmod(0o600), f.Close()); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	h.mu.Lock()
	oc, ok := h.codes[code]
	oc.file = f.Name()
	h.codes[code] = oc
	h.mu.Unlock()
	if !ok {
		os.Remove(f.Name())
		return "", errors.New("the code expired as it was written")
	}
	time.AfterFunc(codeTTL, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if oc, ok := h.codes[code]; ok && oc.file != "" {
			removeOpener(oc.file)
			oc.file = ""
			h.codes[code] = oc
		}
	})
	return f.Name(), nil
}

// removeOpener removes an opener file ("" for none).
func removeOpener(file string) {
	if file != "" {
		os.Remove(file)
	}
}

// useCode uses code up: it reports whether code opens the page (made by
// Code, not expired, not used). A code used a second time is one two
// parties hold, as when another account read it in the opener's
// arguments and raced the browser to it: the session the first use
// opened is closed too, whoever holds it, and the person, refused,
// opens the page again.
func (h *Handler) useCode(code string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	oc, ok := h.codes[code]
	if !ok || h.now().After(oc.expires) {
		return false
	}
	removeOpener(oc.file)
	oc.file = ""
	if oc.session != "" {
		delete(h.sessions, oc.session)
		oc.session = burnedCode // a session still being made is closed as it is recorded
		h.codes[code] = oc
		return false
	}
	oc.session = pendingSession
	h.codes[code] = oc
	return true
}

// pendingSession marks a code used while its session is being made;
// burnedCode, a code used twice.
const (
	pendingSession = "-"
	burnedCode     = "!"
)

// codeOpened records the session code opened.
func (h *Handler) codeOpened(code, sess string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch oc := h.codes[code]; oc.session {
	case pendingSession:
		oc.session = sess
		h.codes[code] = oc
	case burnedCode:
		delete(h.sessions, sess)
	}
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
	// The page's script asks whether a key handed to it in an address is
	// this session's (ServeHTTP checks it as it checks every change), so
	// that a page that sends the browser here with a key of its own does
	// not replace the real one.
	h.mux.HandleFunc("POST /session/key", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h.mux.Handle("GET /static/", http.FileServerFS(staticFS()))
	// Browsers ask for /favicon.ico whatever the page links; a 404 there
	// was the one error every page load logged in the console.
	h.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, staticFS(), "static/favicon.svg")
	})
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
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && !(o == "null" && r.Method == http.MethodPost && r.URL.Path == "/open") {
		http.Error(w, "quiver: a request from another site ("+o+") is refused", http.StatusForbidden)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/code" {
		h.mintCode(w, r)
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/open" {
		// An opener file's form (its origin is a file's, "null"): the
		// code in the body opens a session once, as ?code= does.
		code := r.PostFormValue("code")
		if code == "" || !h.useCode(code) {
			h.codeUsed(w)
			return
		}
		if sess, ok := h.openVia(w, r, true); ok {
			h.codeOpened(code, sess)
		}
		return
	}
	q := r.URL.Query()
	if tok, code := q.Get("token"), q.Get("code"); (tok != "" || code != "") && r.Method == http.MethodGet {
		if tok != "" && !h.tokenOK(tok) {
			h.unauthorized(w)
			return
		}
		if tok == "" && !h.useCode(code) {
			h.codeUsed(w)
			return
		}
		q.Del("token")
		q.Del("code")
		if sess, ok := h.open(w, r, q); ok && tok == "" {
			h.codeOpened(code, sess)
		}
		return
	}
	c, err := r.Cookie(cookieName(r))
	key, ok := "", false
	if err == nil {
		key, ok = h.session(c.Value)
	}
	if !ok {
		h.unauthorized(w)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// A change must come from this page: its own origin, and the
		// page's key, which only the page's script holds.
		if r.Header.Get("Origin") == "" && !sameOriginReferer(r) {
			http.Error(w, "quiver: a change needs the page's Origin header; submit it from the page", http.StatusForbidden)
			return
		}
		if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(key)) {
			http.Error(w, "quiver: this change does not carry the page's key. The key is given to the tab that opens the page's address "+
				"(the one quiver ui prints, or quiver ui --open), and kept by the page's script: open the page that way, with scripts on, and try again.", http.StatusForbidden)
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

// open starts a session for a browser that came with the token or a
// code: the address loses them (history, screen shares) for a session
// secret in a cookie no script and no other site can read, and the
// page's key, in the fragment of the address it is sent on to. A
// fragment is never sent to a server: the page's script keeps the key
// in its origin's storage and drops it from the address.
func (h *Handler) open(w http.ResponseWriter, r *http.Request, rest url.Values) (string, bool) {
	u := *r.URL
	u.RawQuery = rest.Encode()
	r2 := r.Clone(r.Context())
	r2.URL = &u
	return h.openVia(w, r2, false)
}

// openVia opens a session and sends the browser on to r's address with
// the key in the fragment: by a redirect, or, for a form an opener file
// posted (viaPage), by a page of this origin that moves on, because a
// navigation a file started is another site's and a redirect in it would
// not carry the session's SameSite=Strict cookie.
func (h *Handler) openVia(w http.ResponseWriter, r *http.Request, viaPage bool) (string, bool) {
	sess, err := randomHex(24)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return "", false
	}
	key, err := randomHex(24)
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return "", false
	}
	h.mu.Lock()
	h.sessions[sess] = key
	h.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: sess, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.Header().Set("Cache-Control", "no-store")
	if viaPage {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/approvals#key=%s"><title>quiver</title><p><a href="/approvals#key=%s">Open quiver's page</a>`+"\n", key, key)
		return sess, true
	}
	http.Redirect(w, r, r.URL.RequestURI()+"#key="+key, http.StatusSeeOther)
	return sess, true
}

// mintCode answers POST /code, which carries the token as a bearer token
// (never in an address): a one-time code that opens the page once.
func (h *Handler) mintCode(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !h.tokenOK(tok) {
		h.unauthorized(w)
		return
	}
	code, err := h.Code()
	if err != nil {
		h.fail(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Query().Get("as") == "file" {
		// The answer is the opener file's path, for a browser's arguments.
		if h.opts.OpenerDir == "" {
			h.fail(w, http.StatusNotFound, errors.New("this page keeps no opener files"))
			return
		}
		f, err := h.openerFile(code, "http://"+r.Host)
		if err != nil {
			h.fail(w, http.StatusInternalServerError, err)
			return
		}
		w.Write([]byte(f + "\n"))
		return
	}
	w.Write([]byte(code + "\n"))
}

func (h *Handler) codeUsed(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("quiver: this address's code was used already or has expired (a code opens the page once; used twice, the page it opened is closed too). Run quiver ui --open again, or open the address quiver ui prints.\n"))
}

func (h *Handler) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.Token)) == 1
}

// session returns the page key of session sess, and whether there is one.
func (h *Handler) session(sess string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key, ok := h.sessions[sess]
	return key, ok
}

func (h *Handler) unauthorized(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("quiver: this page needs its token. Run `quiver ui --open`, or open the address that `quiver ui` prints, which carries it (a cookie from an earlier run of quiver is not enough).\n"))
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
