package registry

import (
	"runtime"
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
	for _, k := range sortedKeys(s.Env) {
		add(k + "=" + s.Env[k])
	}
	for _, kv := range extra {
		add(kv)
	}
	return out
}

// passes reports whether quiver's variable name reaches the child.
func (s Server) passes(name string) bool {
	for _, list := range [][]string{defaultEnv, s.EnvPassthrough} {
		for _, p := range list {
			if envNameMatches(p, name) {
				return true
			}
		}
	}
	return false
}
