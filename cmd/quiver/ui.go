package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/quiver-mcp/quiver/operator"
	"github.com/quiver-mcp/quiver/registry"
)

// uiSection picks servers.yaml's ui: section:
//
//	ui:
//	  listen: 127.0.0.1:8766
type uiSection struct {
	UI struct {
		Listen yaml.Node `yaml:"listen"`
	} `yaml:"ui"`
	Rest map[string]yaml.Node `yaml:",inline"`
}

// uiAddr is the operator page's address: --ui, else ui.listen, else ""
// (off).
func uiAddr(cfg *registry.Config, flagAddr string) (string, error) {
	if flagAddr != "" {
		return flagAddr, nil
	}
	var sec uiSection
	if err := cfg.DecodeSections(&sec); err != nil {
		return "", err
	}
	return listenFrom(cfg, &sec.UI.Listen, "ui.listen", "127.0.0.1:8766")
}

// listenFrom reads a section's listen: node, n, as an address: "" when
// it is absent, an error naming key and an example when it is no address.
func listenFrom(cfg *registry.Config, n *yaml.Node, key, example string) (string, error) {
	if n.Kind == 0 {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return "", fmt.Errorf("%w: %w", registry.ErrInvalidConfig,
			&registry.ConfigError{File: cfg.Path, Line: n.Line, Msg: key + " must be an address, like " + example})
	}
	return n.Value, nil
}

// uiFront is the listening operator page of "serve --ui".
type uiFront struct {
	ln net.Listener
	// token opens the page beyond loopback: the HTTP auth token, so that
	// the page is as hard to open as the MCP endpoint; "" on loopback,
	// where the page makes a random one of its own.
	token string
}

// openUI listens for the operator page, or returns nil when it cannot
// listen. The page is an extra beside the MCP server a host launched:
// hosts put --ui in their args, so a second host, or a quiver left
// running, holds the port, and failing serve for it would leave the host
// with no MCP server at all. serve goes on without the page and says so
// at WARN, naming the quiver that holds the port when stateDir() records
// one. A page refused for safety (beyond loopback with no token) still
// stops serve: that is a configuration to fix, not a busy port.
func openUI(addr, authToken string, stateDir func() string, log *slog.Logger) (*uiFront, error) {
	f, err := listenUI(addr, authToken)
	var le *uiListenError
	if !errors.As(err, &le) {
		return f, err
	}
	msg := "the operator page is off for this run: quiver serves MCP without it (approvals go to the host, or to quiver approve in a terminal)"
	if h, ok := uiHolder(stateDir(), addr); ok {
		log.Warn(msg, "ui", addr, "err", le.err, "held_by", fmt.Sprintf("quiver serve (pid %d) for %s", h.PID, h.servers()),
			"its_page", "quiver ui --open"+h.configFlag())
		return nil, nil
	}
	log.Warn(msg, "ui", addr, "err", le.err, "fix", "give --ui another address (or ui.listen in servers.yaml), or stop what listens there")
	return nil, nil
}

// uiListenError is a page that could not listen on its address.
type uiListenError struct{ err error }

func (e *uiListenError) Error() string { return "--ui: listen: " + e.err.Error() }
func (e *uiListenError) Unwrap() error { return e.err }

// uiHolder is the running quiver serve whose page listens on addr's
// port, as the page files in stateDir record it.
func uiHolder(stateDir, addr string) (uiFileContent, bool) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || stateDir == "" {
		return uiFileContent{}, false
	}
	files, _ := filepath.Glob(filepath.Join(stateDir, "ui", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		var u uiFileContent
		if err != nil || json.Unmarshal(b, &u) != nil || u.PID <= 0 || u.PID == os.Getpid() || !processAlive(u.PID) {
			continue
		}
		if pu, err := url.Parse(u.URL); err == nil && pu.Port() == port {
			return u, true
		}
	}
	return uiFileContent{}, false
}

func (u uiFileContent) servers() string {
	if u.Servers == "" {
		return "the built-in configuration"
	}
	return u.Servers
}

func (u uiFileContent) configFlag() string {
	if u.Servers == "" {
		return ""
	}
	return " --config " + u.Servers
}

// listenUI listens on addr. The page answers approvals and switches tools,
// so beyond loopback it needs the HTTP auth token to be set as well (the
// same rule as --http): the page's own token travels in a URL.
func listenUI(addr string, authToken string) (*uiFront, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &uiListenError{err: err}
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	if (tcp == nil || !tcp.IP.IsLoopback()) && authToken == "" {
		ln.Close()
		return nil, fmt.Errorf("--ui %s listens beyond this machine (on %s): the operator page answers approvals, so it listens on a loopback address "+
			"such as 127.0.0.1:8766, unless the HTTP auth token is set (--auth-token-file or QUIVER_AUTH_TOKEN)", addr, ln.Addr())
	}
	f := &uiFront{ln: ln}
	if tcp == nil || !tcp.IP.IsLoopback() {
		f.token = authToken
	}
	return f, nil
}

// serve runs the page until ctx ends, and leaves its address where
// "quiver ui" finds it.
func (f *uiFront) serve(ctx context.Context, h *operator.Handler, stateDir, servers string, log *slog.Logger) {
	url := h.URL(f.ln.Addr().String())
	if err := writeUIFile(stateDir, servers, url); err != nil {
		log.Warn("quiver ui will not find the page's address", "err", err)
	}
	defer os.Remove(uiFile(stateDir, servers))
	// The address with its token is for "quiver ui" (a file only this
	// user reads), not for a log a host keeps: the log names the page.
	log.Info("operator page", "address", "http://"+f.ln.Addr().String()+"/", "open", "quiver ui --open")
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	if err := serveUntil(ctx, srv, f.ln, 2*time.Second); err != nil {
		log.Error("operator page stopped", "err", err)
	}
}

// uiFileContent is what serve leaves for "quiver ui": readable by the
// user alone, as it holds the page's token.
type uiFileContent struct {
	PID int    `json:"pid"`
	URL string `json:"url"`
	// Servers is the servers.yaml that quiver serve runs ("" for the
	// built-in one), so that a second serve on the same port can name it.
	Servers string `json:"servers,omitempty"`
}

func uiFile(stateDir, servers string) string {
	// One file per servers.yaml, named as its reload status is.
	return filepath.Join(stateDir, "ui", filepath.Base(statusFile(stateDir, servers)))
}

func writeUIFile(stateDir, servers, url string) error {
	p := uiFile(stateDir, servers)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	abs := servers
	if servers != "" {
		if a, err := filepath.Abs(servers); err == nil {
			abs = a
		}
	}
	b, _ := json.Marshal(uiFileContent{PID: os.Getpid(), URL: url, Servers: abs})
	return writeFileAtomic(p, append(b, '\n'), 0o600)
}

func uiCmd() *command {
	return &command{
		summary: "print (or open) the operator page's address",
		usage:   "ui [--open] [--config PATH] [--state-dir DIR]",
		help: `
Prints the address of the operator page of the quiver serve running with
this servers.yaml: a local web page where you answer approval cards (the
way to approve calls from a host that cannot show them, such as Claude
Desktop), switch tools on and off, try searches, read the audit and revoke
grants. The address carries the page's token; keep it to yourself.

The page is off by default. Turn it on with "quiver serve --ui
127.0.0.1:8766", or in servers.yaml:

  ui:
    listen: 127.0.0.1:8766

It listens on a loopback address only, unless the HTTP auth token is set.

Flags:
  --open             open the page in the browser ($BROWSER when set, else
                     the system's default) with a one-time code, never the
                     token: a process's arguments are readable by every
                     account on the machine, and the code opens the page
                     once only
  --config PATH      servers.yaml the running quiver serve uses
  --state-dir DIR    quiver's state dir`,
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			var open bool
			fs := newFlags("ui")
			c.register(fs)
			fs.BoolVar(&open, "open", false, "open it in the browser")
			if err := parseFlagsOnly(fs, args); err != nil {
				return err
			}
			state, err := c.state(e)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(uiFile(state, c.serversPath(e)))
			var u uiFileContent
			if err != nil || json.Unmarshal(b, &u) != nil || u.PID <= 0 || !processAlive(u.PID) {
				return fmt.Errorf("no running quiver serve for %s has the operator page on: start it with quiver serve --ui 127.0.0.1:8766, or set ui.listen in servers.yaml", c.serversPath(e))
			}
			if !open {
				fmt.Fprintln(e.stdout, u.URL)
				return nil
			}
			// A process's arguments are readable by every account on the
			// machine (/proc): the browser is handed the path of a file
			// only this user reads, which posts a one-time code to the
			// page; never the token (issue 22), nor the code (issue 22's
			// red team: another account raced the browser to a code in
			// argv).
			opener, err := openerAddress(ctx, u.URL)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s\nopening it in the browser with a one-time code\n", pageAddress(u.URL))
			return openBrowser(e, opener)
		},
	}
}

// pageAddress is the page's address without its token.
func pageAddress(withToken string) string {
	u, err := url.Parse(withToken)
	if err != nil {
		return ""
	}
	u.RawQuery = ""
	return u.String()
}

// openerAddress asks the running page for a one-time code left in an
// opener file (a page, mode 0600 in a 0700 folder of quiver serve's state
// dir, that posts the code to the page and is removed once the code is
// used or expired), with the token as a bearer token (never in an address
// or an argument), and returns the file's file:// address.
func openerAddress(ctx context.Context, withToken string) (string, error) {
	u, err := url.Parse(withToken)
	if err != nil {
		return "", fmt.Errorf("the operator page's address %q: %w", pageAddress(withToken), err)
	}
	tok := u.Query().Get("token")
	u.RawQuery, u.Path = "as=file", "/code"
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("ask the operator page for a one-time code: %w", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("the operator page gave no one-time code (%s: %s); if quiver serve is older than this quiver, restart it, or open the address quiver ui prints",
			res.Status, strings.TrimSpace(string(b)))
	}
	p := filepath.ToSlash(strings.TrimSpace(string(b)))
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/… on Windows
	}
	return (&url.URL{Scheme: "file", Path: p}).String(), nil
}

// openBrowser opens address in $BROWSER when it is set (the command
// first in its list, with %s replaced by the address, or the address
// added), else in the system's default browser.
func openBrowser(e *env, address string) error {
	var cmd *exec.Cmd
	if b := browserCommand(e.getenv("BROWSER"), address); b != nil {
		cmd = exec.Command(b[0], b[1:]...)
	} else {
		switch runtime.GOOS {
		case "darwin":
			cmd = exec.Command("open", address)
		case "windows":
			cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", address)
		default:
			cmd = exec.Command("xdg-open", address)
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("open the browser: %w (open the address above yourself)", err)
	}
	go cmd.Wait()
	return nil
}

// browserCommand is the command line $BROWSER names for address: its
// first command (the list is separated as PATH is), with %s replaced, or
// the address added; nil when it names none.
func browserCommand(browser, address string) []string {
	for _, c := range filepath.SplitList(browser) {
		f := strings.Fields(c)
		if len(f) == 0 {
			continue
		}
		found := false
		for i := range f {
			if strings.Contains(f[i], "%s") {
				f[i], found = strings.ReplaceAll(f[i], "%s", address), true
			}
		}
		if !found {
			f = append(f, address)
		}
		return f
	}
	return nil
}
