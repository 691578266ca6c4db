package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/quiver-mcp/quiver/internal/atomicfile"
)

// AuthOAuth is auth: oauth: a remote server behind the MCP authorization
// flow (OAuth 2.1 with PKCE, protected resource metadata, dynamic client
// registration). "quiver login NAME" logs in once, in a browser; the
// token it gets is kept in the state dir and refreshed as it expires.
const AuthOAuth = "oauth"

// OAuthSettings are an oauth: block's settings, all optional: without a
// client id quiver registers itself with the authorization server.
type OAuthSettings struct {
	ClientID     string
	ClientSecret string
	Scopes       []string
	// CallbackPort fixes the loopback port "quiver login" listens on, for
	// a client registered by hand with one redirect URI; 0 picks a free one.
	CallbackPort int
}

type fileOAuth struct {
	ClientID     string   `yaml:"client_id"`
	ClientSecret string   `yaml:"client_secret"`
	Scopes       []string `yaml:"scopes"`
	CallbackPort int      `yaml:"callback_port"`
}

// ErrLoginNeeded is what a server with auth: oauth fails with until
// someone logs in (or after its tokens stop working).
var ErrLoginNeeded = errors.New("login needed")

// oauth reads an entry's auth and oauth keys.
func (p *parser) oauth(name string, fs *fileServer, key func(string) int,
	expand func(v string, secret func(name, val string) bool, keys ...string) (string, bool)) (string, OAuthSettings) {
	var o OAuthSettings
	switch fs.Auth {
	case "":
		if fs.OAuth != nil {
			p.fail(key("oauth"), "servers.%s.oauth: settings for auth: oauth; add auth: oauth", name)
		}
		return "", o
	case AuthOAuth:
	default:
		p.fail(key("auth"), "servers.%s.auth: %q is not an auth method; use oauth (or headers for a static token)", name, fs.Auth)
		return "", o
	}
	if fs.OAuth != nil {
		o.ClientID, _ = expand(fs.OAuth.ClientID, func(string, string) bool { return false }, "oauth", "client_id")
		o.ClientSecret, _ = expand(fs.OAuth.ClientSecret, func(string, string) bool { return true }, "oauth", "client_secret")
		o.Scopes = fs.OAuth.Scopes
		o.CallbackPort = fs.OAuth.CallbackPort
		if o.CallbackPort < 0 || o.CallbackPort > 65535 {
			p.fail(key("oauth"), "servers.%s.oauth.callback_port: %d is not a port", name, o.CallbackPort)
		}
		if o.ClientSecret != "" && !strings.Contains(fs.OAuth.ClientSecret, "${") {
			p.fail(key("oauth"), "servers.%s.oauth.client_secret: write it as ${keyring:NAME} (quiver secret set NAME) or ${VAR}, not in the file", name)
		}
	}
	return AuthOAuth, o
}

// An OAuthRecord is what "quiver login" leaves for a server, in
// <state>/oauth/<server>.json (0600): the client quiver registered as (or
// was configured with), and the token, which whoever refreshes it
// rewrites. A record made for another url is not used.
type OAuthRecord struct {
	URL          string           `json:"url"`
	ClientID     string           `json:"client_id,omitempty"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthMethod   string           `json:"token_endpoint_auth_method,omitempty"`
	Token        *transport.Token `json:"token,omitempty"`
}

// OAuthFile is the record file of server in stateDir.
func OAuthFile(stateDir, server string) string {
	return filepath.Join(stateDir, "oauth", server+".json")
}

// TokenFile is a transport.TokenStore kept in a server's record file.
type TokenFile struct {
	path, url string
	mu        sync.Mutex
}

// NewTokenFile is the token store of the server at url in path.
func NewTokenFile(path, url string) *TokenFile { return &TokenFile{path: path, url: url} }

// Record reads the record; a missing file, or one for another url, is an
// empty record.
func (f *TokenFile) Record() (OAuthRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.read()
}

func (f *TokenFile) read() (OAuthRecord, error) {
	var r OAuthRecord
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return OAuthRecord{URL: f.url}, nil
	}
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", f.path, err)
	}
	if r.URL != f.url {
		return OAuthRecord{URL: f.url}, nil
	}
	return r, nil
}

// Update changes the record and writes it atomically, mode 0600.
func (f *TokenFile) Update(change func(*OAuthRecord)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.read()
	if err != nil {
		return err
	}
	change(&r)
	r.URL = f.url
	b, _ := json.MarshalIndent(r, "", "  ")
	return atomicfile.WritePrivate(f.path, append(b, '\n'))
}

// GetToken implements transport.TokenStore.
func (f *TokenFile) GetToken(ctx context.Context) (*transport.Token, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := f.Record()
	if err != nil {
		return nil, err
	}
	if r.Token == nil {
		return nil, transport.ErrNoToken
	}
	return r.Token, nil
}

// SaveToken implements transport.TokenStore.
func (f *TokenFile) SaveToken(ctx context.Context, t *transport.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.Update(func(r *OAuthRecord) { r.Token = t })
}

// OAuthConfig is the mcp-go OAuth configuration for s, with its token in
// stateDir: the configured client, else the one "quiver login"
// registered. redirect is the loopback URI of a login ("" to refresh
// only).
func OAuthConfig(s Server, stateDir, redirect string) (transport.OAuthConfig, *TokenFile, error) {
	tf := NewTokenFile(OAuthFile(stateDir, s.Name), s.URL)
	rec, err := tf.Record()
	if err != nil {
		return transport.OAuthConfig{}, nil, err
	}
	cfg := transport.OAuthConfig{
		ClientID: s.OAuth.ClientID, ClientSecret: s.OAuth.ClientSecret,
		Scopes: s.OAuth.Scopes, RedirectURI: redirect, TokenStore: tf, PKCEEnabled: true,
	}
	if cfg.ClientID == "" {
		cfg.ClientID, cfg.ClientSecret, cfg.TokenEndpointAuthMethod = rec.ClientID, rec.ClientSecret, rec.AuthMethod
	}
	return cfg, tf, nil
}

// loginPoll is how often a server waiting for a login looks for a token.
const loginPoll = 2 * time.Second

// loginError turns mcp-go's "authorization required" into ErrLoginNeeded
// with what to do about it.
func loginError(server string, err error) error {
	if err != nil && errors.Is(err, transport.ErrOAuthAuthorizationRequired) {
		return fmt.Errorf("%w: run quiver login %s", ErrLoginNeeded, server)
	}
	return err
}

// HeldSecrets are the credentials quiver holds for server s in stateDir —
// its access and refresh tokens and a registered client's secret — as
// Secrets, to be hidden from the host like ${VAR} values: a remote server
// that quotes back the token quiver sent it must not show it.
func HeldSecrets(s Server, stateDir string) []Secret {
	rec, err := NewTokenFile(OAuthFile(stateDir, s.Name), s.URL).Record()
	if err != nil {
		return nil
	}
	var out []Secret
	add := func(what, v string) {
		if len(v) >= 8 {
			out = append(out, Secret{Var: s.Name + " " + what, Value: v})
		}
	}
	add("client secret", rec.ClientSecret)
	if rec.Token != nil {
		add("oauth token", rec.Token.AccessToken)
		add("oauth refresh token", rec.Token.RefreshToken)
	}
	return out
}
