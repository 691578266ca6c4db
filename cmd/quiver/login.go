package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/quiver-mcp/quiver/registry"
)

func loginCmd() *command {
	return &command{
		summary: "log in to a remote server that says auth: oauth",
		usage:   "login SERVER [--no-browser] [--timeout D] [--config PATH] [--state-dir DIR]",
		help: `
Logs in to SERVER, a remote server whose entry in servers.yaml says
auth: oauth, the way MCP hosts do: quiver finds the server's authorization
server (protected resource metadata, then the authorization server's
metadata), registers itself there unless oauth.client_id is given, and
opens the login page in your browser; after you log in, the browser comes
back to quiver on a loopback address (http://127.0.0.1:PORT/callback) and
quiver trades the code for a token (PKCE). The token is kept in the state
dir (oauth/SERVER.json, readable by you only) and refreshed as it
expires; a running quiver connects to the server within seconds.

  servers:
    linear:
      url: https://mcp.linear.app/mcp
      auth: oauth
      oauth:                       # all optional
        client_id: my-client       # a client registered by hand
        client_secret: ${keyring:linear-client}
        scopes: [read, write]
        callback_port: 8765        # the port its redirect URI names

Until someone logs in, the server is down with "login needed: run quiver
login SERVER" in doctor, tools list and search answers.

Flags:
  --no-browser   print the address only (on a machine without a browser,
                 open it on one that can reach this machine's loopback)
  --timeout D    how long to wait for the login (default 5m)`,
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			var noBrowser bool
			var timeout time.Duration
			fs := newFlags("login")
			c.register(fs)
			fs.BoolVar(&noBrowser, "no-browser", false, "print the address only")
			fs.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the login")
			if err := parse(fs, args); err != nil {
				return err
			}
			if fs.NArg() != 1 {
				return fmt.Errorf("%w: name the server to log in to, e.g. quiver login linear", errUsage)
			}
			cfg, err := c.loadExplained(e)
			if err != nil {
				return err
			}
			srv, ok := cfg.Server(fs.Arg(0))
			if !ok {
				return fmt.Errorf("%w: no server %q in %s", errUsage, fs.Arg(0), cfg.Path)
			}
			if srv.Auth != registry.AuthOAuth {
				return fmt.Errorf("%w: server %q does not say auth: oauth in %s", errUsage, srv.Name, cfg.Path)
			}
			state, err := c.state(e)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			return login(ctx, e, srv, state, !noBrowser)
		},
	}
}

// login runs the MCP authorization flow for srv with mcp-go's OAuth
// handler and keeps the client and token in srv's record in state.
func login(ctx context.Context, e *env, srv registry.Server, state string, browser bool) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.OAuth.CallbackPort)))
	if err != nil {
		return fmt.Errorf("listen for the login's redirect: %w", err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr())
	oc, tf, err := registry.OAuthConfig(srv, state, redirect)
	if err != nil {
		return err
	}
	// A client registered at an earlier login named that login's port:
	// register again, unless one is configured.
	oc.ClientID, oc.ClientSecret, oc.TokenEndpointAuthMethod = srv.OAuth.ClientID, srv.OAuth.ClientSecret, ""
	h := transport.NewOAuthHandler(oc)
	u, err := url.Parse(srv.URL)
	if err != nil {
		return err
	}
	u.RawQuery, u.Fragment = "", ""
	h.SetBaseURL(u.String())
	// Ask the server as a host would, without a token: its 401 names its
	// protected resource metadata (RFC 9728).
	if err := probe(ctx, srv, h); err != nil {
		return err
	}
	if oc.ClientID == "" {
		if err := h.RegisterClient(ctx, "quiver"); err != nil {
			return fmt.Errorf("register quiver with %s's authorization server: %w", srv.Name, err)
		}
	}
	verifier, err := transport.GenerateCodeVerifier()
	if err != nil {
		return err
	}
	st, err := transport.GenerateState()
	if err != nil {
		return err
	}
	authURL, err := h.GetAuthorizationURL(ctx, st, transport.GenerateCodeChallenge(verifier))
	if err != nil {
		return fmt.Errorf("find %s's authorization server: %w", srv.Name, err)
	}

	type answer struct{ code, state, err string }
	answers := make(chan answer, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a := answer{code: q.Get("code"), state: q.Get("state"), err: q.Get("error")}
		if d := q.Get("error_description"); d != "" {
			a.err += ": " + d
		}
		msg := "quiver: logged in to " + srv.Name + ". You may close this tab."
		if a.err != "" || a.code == "" {
			msg = "quiver: the login to " + srv.Name + " failed: " + a.err
		}
		fmt.Fprintf(w, "<!doctype html><title>quiver</title><p>%s</p>\n", html.EscapeString(msg))
		select {
		case answers <- a:
		default: // a second visit; the first answer counts
		}
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	fmt.Fprintf(e.stderr, "To log in to %s, open this address in a browser:\n\n  %s\n\nWaiting for the login (the page comes back to %s)...\n", srv.Name, authURL, redirect)
	if browser {
		// Where there is no browser, the address above is the way.
		_ = openBrowser(e, authURL)
	}
	var a answer
	select {
	case a = <-answers:
	case <-ctx.Done():
		return fmt.Errorf("no login came back: %w", ctx.Err())
	}
	if a.err != "" || a.code == "" {
		return fmt.Errorf("the authorization server refused the login: %s", cmp.Or(a.err, "no code in the redirect"))
	}
	if err := h.ProcessAuthorizationResponse(ctx, a.code, a.state, verifier); err != nil {
		return fmt.Errorf("trade the login's code for a token: %w", err)
	}
	if srv.OAuth.ClientID == "" {
		if err := tf.Update(func(r *registry.OAuthRecord) {
			r.ClientID, r.ClientSecret, r.AuthMethod = h.GetClientID(), h.GetClientSecret(), h.GetTokenEndpointAuthMethod()
		}); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "Logged in to %s. The token is kept in %s and refreshed as it expires; a running quiver connects within seconds.\n", srv.Name, registry.OAuthFile(state, srv.Name))
	return nil
}

// probe sends an initialize without a token, so that the server's 401
// tells the handler where its protected resource metadata is. A server
// that answers anything else leaves discovery to the well-known URLs.
func probe(ctx context.Context, srv registry.Server, h *transport.OAuthHandler) error {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"quiver","version":"` + registry.Version + `"}}}`)
	method := http.MethodPost
	if srv.Transport == registry.TransportSSE {
		method, body = http.MethodGet, nil
	}
	req, err := http.NewRequestWithContext(ctx, method, srv.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reach %s: %w", srv.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		h.HandleUnauthorizedResponse(resp)
	}
	return nil
}
