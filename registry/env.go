package registry

import (
	"maps"
	"net/url"
	"runtime"
	"slices"
	"strings"
)

// defaultEnv names the variables of quiver's own environment that every
// stdio child receives; a name ending in * is a prefix. Everything else in
// quiver's environment (DB_PASS, AWS_SECRET_ACCESS_KEY, another server's
// token) stays out of the child unless its entry names it in
// env_passthrough or sets it in env. A child must not read secrets meant
// for quiver or for another server: a server that echoes its environment,
// or is compromised, would hand them to the model.
//
// The set is what programs need to run and to find their own files, and
// what the launchers servers come through (npx, uvx, node) need to find
// their cache, registry, proxy and certificates:
//
//   - the process basics: PATH, HOME, USER, LOGNAME, SHELL, TERM, TZ, LANG,
//     LANGUAGE, LC_*, TMPDIR, TMP, TEMP, XDG_*;
//   - Windows: SystemRoot, SystemDrive, windir, ComSpec, PATHEXT, OS,
//     APPDATA, LOCALAPPDATA, USERPROFILE, USERNAME, USERDOMAIN, HOMEDRIVE,
//     HOMEPATH, ProgramData, ProgramFiles*, ProgramW6432, CommonProgramFiles*,
//     ALLUSERSPROFILE, PUBLIC, PROCESSOR_ARCHITECTURE, NUMBER_OF_PROCESSORS
//     (names match case-insensitively there, as Windows does);
//   - network: HTTP_PROXY, HTTPS_PROXY, NO_PROXY, ALL_PROXY (and their
//     lower-case forms), SSL_CERT_FILE, SSL_CERT_DIR;
//   - launchers: npm_config_*, NPM_CONFIG_*, NODE_*, NVM_*, UV_*;
//   - the Go runtime's own knobs: GODEBUG, GOTRACEBACK, GORACE, GOCOVERDIR.
//
// A variable of the set whose name is a secret's (see secretName:
// NODE_AUTH_TOKEN, UV_PUBLISH_TOKEN, UV_INDEX_PRIVATE_PASSWORD,
// NPM_CONFIG__AUTHTOKEN) is not passed: the launchers' prefixes hold their
// credentials too, and the set is for finding things, not for logging in.
// An entry that needs one names it in env_passthrough; so does one that
// needs a setting under such a name (NODE_TLS_REJECT_UNAUTHORIZED,
// UV_KEYRING_PROVIDER). What the set does pass can still hold a secret in
// its value (HTTPS_PROXY=http://user:pass@proxy, a registry url with a
// password): envSecrets makes those secrets of the configuration.
var defaultEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "LANG", "LANGUAGE", "LC_*",
	"TMPDIR", "TMP", "TEMP", "XDG_*",
	"SystemRoot", "SystemDrive", "windir", "ComSpec", "PATHEXT", "OS",
	"APPDATA", "LOCALAPPDATA", "USERPROFILE", "USERNAME", "USERDOMAIN", "HOMEDRIVE", "HOMEPATH",
	"ProgramData", "ProgramFiles*", "ProgramW6432", "CommonProgramFiles*", "ALLUSERSPROFILE", "PUBLIC",
	"PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	"npm_config_*", "NPM_CONFIG_*", "NODE_*", "NVM_*", "UV_*",
	"GODEBUG", "GOTRACEBACK", "GORACE", "GOCOVERDIR",
}

// envNameMatches reports whether the variable name matches pattern: the
// same name, or, for a pattern ending in *, a name starting with the rest.
// Windows names are case-insensitive (Path and PATH are one variable).
func envNameMatches(pattern, name string) bool {
	eq, prefix := func(a, b string) bool { return a == b }, strings.HasPrefix
	if runtime.GOOS == "windows" {
		eq = strings.EqualFold
		prefix = func(s, p string) bool { return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) }
	}
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return prefix(name, p)
	}
	return eq(pattern, name)
}

// childEnviron builds a stdio child's environment from environ (quiver's
// own, as os.Environ gives it): the variables defaultEnv and the entry's
// env_passthrough name, then the entry's env, which wins over both, then
// extra (QUIVER_STATE_DIR). Each name appears once.
func (s Server) childEnviron(environ []string, extra ...string) []string {
	set := map[string]int{} // name -> index in out
	var out []string
	add := func(kv string) {
		name, _, _ := strings.Cut(kv, "=")
		key := name
		if runtime.GOOS == "windows" {
			key = strings.ToUpper(name)
		}
		if i, ok := set[key]; ok {
			out[i] = kv
			return
		}
		set[key] = len(out)
		out = append(out, kv)
	}
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue // Windows' "=C:=C:\dir" entries have no name
		}
		if s.passes(name) {
			add(kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		add(k + "=" + s.Env[k])
	}
	for _, kv := range extra {
		add(kv)
	}
	return out
}

// passes reports whether quiver's variable name reaches the child: one
// env_passthrough names, or one of the default set whose name is not a
// secret's.
func (s Server) passes(name string) bool {
	match := func(p string) bool { return envNameMatches(p, name) }
	if slices.ContainsFunc(s.EnvPassthrough, match) {
		return true
	}
	return slices.ContainsFunc(defaultEnv, match) && !secretName.MatchString(name)
}

// envSecrets returns the secrets that the stdio children of servers
// receive from environ (quiver's own environment, as childEnviron gets
// it), so that they are redacted wherever they come back: a child that
// prints its environment, an error quoting a proxy url. A value is a
// secret by its shape (a url with a password, whose password is one too;
// a credential) or by its name (a variable env_passthrough passes, like
// AWS_SECRET_ACCESS_KEY), unless under that name it is a setting: see
// envNamedSecret. A variable the entry's env sets is the entry's, not
// quiver's, and ParseConfig has its secrets already. Each (name, value)
// is returned once, and none already in have.
func envSecrets(servers []Server, environ []string, have []Secret) []Secret {
	var out []Secret
	add := func(sec Secret) {
		if len(sec.Value) >= 4 && !slices.Contains(have, sec) && !slices.Contains(out, sec) {
			out = append(out, sec)
		}
	}
	for _, s := range servers {
		if s.Transport != TransportStdio {
			continue
		}
		for _, kv := range environ {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || name == "" || value == "" || !s.passes(name) || s.setsEnv(name) {
				continue
			}
			switch {
			case LooksSecret("", value):
				add(Secret{Var: name, Value: value})
				if _, pw, _, ok := URLPassword(value); ok {
					// The password, or a token given as the user name
					// (UV_INDEX_URL=https://TOKEN@pypi.fury.io/acme/).
					add(Secret{Var: name, Value: pw})
					if d, err := url.PathUnescape(pw); err == nil {
						add(Secret{Var: name, Value: d})
					}
				}
			case secretName.MatchString(name) && envNamedSecret(value):
				add(Secret{Var: name, Value: value})
			}
		}
	}
	return out
}

// envNamedSecret reports whether value, under a secret's name in quiver's
// environment, is the secret and not a setting: "true", "0", "none" or a
// path (NODE_TLS_REJECT_UNAUTHORIZED=0, a *_FILE) would, taken for a
// secret, be blanked out of every result that quotes them.
func envNamedSecret(value string) bool {
	switch strings.ToLower(value) {
	case "true", "false", "none", "null", "never", "always", "auto", "disabled", "enabled":
		return false
	}
	return flagSecret(value)
}

// setsEnv reports whether the entry's env sets the variable name, which
// then wins over quiver's.
func (s Server) setsEnv(name string) bool {
	for k := range s.Env {
		if k == name || runtime.GOOS == "windows" && strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
