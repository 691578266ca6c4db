package registry

import (
	"slices"
	"strings"
	"testing"
)

// The tests in this file close the default set's side door (issue 10,
// cause 7): the launchers' prefixes (NODE_*, UV_*, npm_config_*) and the
// proxy variables carried quiver's credentials into every child.

// redTeamEnv is what the red team set in quiver's environment: credentials
// under the default set's prefixes, and a proxy url with a password.
var redTeamEnv = map[string]string{
	"NODE_AUTH_TOKEN":           "node-auth-0123456789abcdef",
	"UV_PUBLISH_TOKEN":          "pypi-publish-0123456789abcdef",
	"UV_INDEX_PRIVATE_PASSWORD": "uv-index-pw-0123456789",
	"NPM_CONFIG__AUTHTOKEN":     "npm-config-authtoken-0123456789",
	"npm_config__authToken":     "npm-lower-authtoken-0123456789",
	"HTTPS_PROXY":               "http://user:pr0xy-pass-0123@proxy:3128",
}

// TestChildEnvironCredentials: a child that prints its environment shows
// none of the secret-named variables of the default set; it shows the
// proxy url it needs, but that url (and its password) is a secret of the
// configuration, redacted wherever it comes back. A variable named in
// env_passthrough reaches the child, and is a secret too.
// Not parallel: it sets quiver's environment.
func TestChildEnvironCredentials(t *testing.T) {
	for k, v := range redTeamEnv {
		t.Setenv(k, v)
	}
	t.Setenv("UV_INDEX_URL", "https://me:idx-pass-0123@pypi.example/simple")
	t.Setenv("npm_config_cache", "/tmp/npm-cache")
	h := startRegistry(t, "servers:\n"+
		"  plain:\n    command: ${BIN}\n    env: {"+childEnv+": env}\n"+
		"  wider:\n    command: ${BIN}\n    env: {"+childEnv+": env}\n    env_passthrough: [NODE_AUTH_TOKEN]\n",
		nil, Options{StateDir: t.TempDir()})
	h.ready()
	environ := func(exposed string) (string, map[string]string) { return childEnviron(t, h, exposed) }
	secrets := h.reg.config().Secrets
	has := func(name, value string) bool { return slices.Contains(secrets, Secret{Var: name, Value: value}) }

	out, plain := environ("plain__environ")
	for k, v := range redTeamEnv {
		if k == "HTTPS_PROXY" {
			continue
		}
		if _, ok := plain[k]; ok || strings.Contains(out, v) {
			t.Errorf("a child without env_passthrough sees %s", k)
		}
	}
	for _, k := range []string{"HTTPS_PROXY", "UV_INDEX_URL", "npm_config_cache"} {
		if plain[k] == "" {
			t.Errorf("the child lacks %s, which the default set passes", k)
		}
	}
	for _, want := range []Secret{
		{"HTTPS_PROXY", redTeamEnv["HTTPS_PROXY"]}, {"HTTPS_PROXY", "pr0xy-pass-0123"},
		{"UV_INDEX_URL", "https://me:idx-pass-0123@pypi.example/simple"}, {"UV_INDEX_URL", "idx-pass-0123"},
	} {
		if !has(want.Var, want.Value) {
			t.Errorf("Config.Secrets lacks %s=%s: %v", want.Var, want.Value, secrets)
		}
	}
	if red := Redact(out, secrets); strings.Contains(red, "pr0xy-pass") || strings.Contains(red, "idx-pass") {
		t.Errorf("the child's environment, redacted, still shows a password:\n%s", red)
	}
	if has("npm_config_cache", "/tmp/npm-cache") || has("UV_PUBLISH_TOKEN", redTeamEnv["UV_PUBLISH_TOKEN"]) {
		t.Errorf("Config.Secrets holds a value no child receives, or no secret: %v", secrets)
	}

	out, wider := environ("wider__environ")
	if wider["NODE_AUTH_TOKEN"] != redTeamEnv["NODE_AUTH_TOKEN"] {
		t.Errorf("env_passthrough: [NODE_AUTH_TOKEN] did not pass it: %q", wider["NODE_AUTH_TOKEN"])
	}
	if !has("NODE_AUTH_TOKEN", redTeamEnv["NODE_AUTH_TOKEN"]) {
		t.Errorf("Config.Secrets lacks NODE_AUTH_TOKEN, which a child receives: %v", secrets)
	}
	if _, ok := wider["UV_PUBLISH_TOKEN"]; ok {
		t.Error("env_passthrough passed a secret-named variable it does not name")
	}
	if red := Redact(out, secrets); strings.Contains(red, redTeamEnv["NODE_AUTH_TOKEN"]) {
		t.Errorf("NODE_AUTH_TOKEN shows redacted:\n%s", red)
	}
}

// TestDefaultEnvSecretNames: the default set passes no variable whose
// name is a secret's, whatever its prefix; env_passthrough passes one it
// names, by name or by prefix.
func TestDefaultEnvSecretNames(t *testing.T) {
	t.Parallel()
	parent := []string{"PATH=/bin", "NODE_OPTIONS=--max-old-space-size=4096", "NODE_AUTH_TOKEN=t",
		"UV_CACHE_DIR=/c", "UV_PUBLISH_TOKEN=t", "UV_INDEX_PRIVATE_PASSWORD=p", "UV_KEYRING_PROVIDER=subprocess",
		"NPM_CONFIG__AUTHTOKEN=t", "npm_config__auth=t", "npm_config_registry=https://r", "NODE_TLS_REJECT_UNAUTHORIZED=0",
		"XDG_SECRET_STORE=x", "HTTPS_PROXY=http://u:p@h:1"}
	got := Server{}.childEnviron(parent)
	want := []string{"PATH=/bin", "NODE_OPTIONS=--max-old-space-size=4096", "UV_CACHE_DIR=/c",
		"npm_config_registry=https://r", "HTTPS_PROXY=http://u:p@h:1"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnviron = %q\nwant %q", got, want)
	}
	s := Server{EnvPassthrough: []string{"NODE_AUTH_TOKEN", "UV_*"}}
	got = s.childEnviron(parent)
	for _, kv := range []string{"NODE_AUTH_TOKEN=t", "UV_PUBLISH_TOKEN=t", "UV_INDEX_PRIVATE_PASSWORD=p", "UV_KEYRING_PROVIDER=subprocess"} {
		if !slices.Contains(got, kv) {
			t.Errorf("env_passthrough %q did not pass %s: %q", s.EnvPassthrough, kv, got)
		}
	}
	if slices.Contains(got, "NPM_CONFIG__AUTHTOKEN=t") {
		t.Errorf("env_passthrough passed a variable it does not name: %q", got)
	}
}

// TestEnvSecrets: which values a child receives from quiver's environment
// become secrets of the configuration.
func TestEnvSecrets(t *testing.T) {
	t.Parallel()
	environ := []string{
		"PATH=/bin", "HOME=/home/q", "LANG=C.UTF-8",
		"HTTPS_PROXY=http://u:p%40ss-word@proxy:3128",
		"http_proxy=http://proxy:3128",
		"NODE_OPTIONS=--require ./x.js ghp_0123456789abcdefghijABCDEFGHIJklmnop",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG",
		"AWS_SESSION_TOKEN=true",
		"AWS_REGION=eu-west-1",
		"DB_PASSWORD=hunter2-db",
		"SHARED_TOKEN=quiver-own-0123",
		"OWN_TOKEN=quiver-own-4567",
	}
	servers := []Server{
		{Name: "a", Transport: TransportStdio, EnvPassthrough: []string{"AWS_*"}},
		{Name: "b", Transport: TransportStdio, EnvPassthrough: []string{"OWN_TOKEN"}, Env: map[string]string{"OWN_TOKEN": "from-env"}},
		{Name: "r", Transport: TransportHTTP, EnvPassthrough: []string{"DB_PASSWORD"}},
	}
	have := []Secret{{Var: "HTTPS_PROXY", Value: "http://u:p%40ss-word@proxy:3128"}}
	got := envSecrets(servers, environ, have)
	want := []Secret{
		{"HTTPS_PROXY", "p%40ss-word"}, {"HTTPS_PROXY", "p@ss-word"},
		{"NODE_OPTIONS", "--require ./x.js ghp_0123456789abcdefghijABCDEFGHIJklmnop"},
		{"AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("envSecrets =\n%q\nwant\n%q", got, want)
	}
}
