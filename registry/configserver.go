package registry

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// server validates one entry of servers: and expands its ${VAR}
// references, recording every value that is a secret.
func (p *parser) server(name string, fs *fileServer) *Server {
	line := lineOf(p.root, "servers", name)
	key := func(k string) int {
		if l := lineOf(p.root, "servers", name, k); l > 0 {
			return l
		}
		return line
	}
	if fs == nil {
		p.fail(line, "servers.%s: the entry is empty; give it a command (a local server) or a url (a remote one)", name)
		return nil
	}
	if !nameRE.MatchString(name) {
		p.fail(line, "servers.%s: a server name may only use letters, digits, '_' and '-'", name)
	}
	s := &Server{Name: name, Line: line, Prefix: name, Keywords: fs.Keywords, Timeout: DefaultTimeout,
		Written: Spec{Command: fs.Command, Args: slices.Clone(fs.Args), Env: maps.Clone(fs.Env), Cwd: fs.Cwd,
			EnvPassthrough: fs.EnvPassthrough, URL: fs.URL, Headers: maps.Clone(fs.Headers)}}
	for tool, args := range fs.PathArgs {
		if tool == "" || len(args) == 0 || slices.Contains(args, "") {
			p.fail(key("path_args"), "servers.%s.path_args: give each tool's path arguments by name, like {write_report: [out, template]}", name)
			break
		}
	}
	s.PathArgs = fs.PathArgs
	switch fs.ToolsDefault {
	case "", "on":
	case "off":
		s.ToolsOff = true
	default:
		p.fail(key("tools_default"), "servers.%s.tools_default: %q is not on or off", name, fs.ToolsDefault)
	}
	switch fs.Pinning {
	case "", PinStrict, PinWarn, PinOff:
		s.Pinning = fs.Pinning
	default:
		p.fail(key("pinning"), "servers.%s.pinning: %q is not strict, warn or off", name, fs.Pinning)
	}
	if fs.Prefix != nil {
		s.Prefix = *fs.Prefix
		if s.Prefix != "" && !nameRE.MatchString(s.Prefix) {
			p.fail(key("prefix"), "servers.%s.prefix: %q may only use letters, digits, '_' and '-'", name, s.Prefix)
		}
	}
	if fs.Timeout < 0 {
		p.fail(key("timeout"), "servers.%s.timeout: must be positive, like 30s or 2m", name)
	} else if fs.Timeout > 0 {
		s.Timeout = fs.Timeout
	}
	// expand expands v, the value at keys under the entry (["env",
	// "TOKEN"]); an error names that key and its line. secret says which
	// variables' values are secrets, to be redacted wherever they show.
	expand := func(v string, secret func(name, val string) bool, keys ...string) (string, bool) {
		out, err := expandVars(v, p.lookup, func(name, val string) {
			// A stored secret is one wherever it is used.
			if val != "" && (strings.HasPrefix(name, KeyringPrefix) || secret(name, val)) {
				p.secrets = append(p.secrets, Secret{Var: name, Value: val})
			}
		})
		if err != nil {
			l := lineOf(p.root, append([]string{"servers", name}, keys...)...)
			if l == 0 {
				l = key(keys[0])
			}
			var unset *unsetError
			if errors.As(err, &unset) {
				if s.Unavailable == "" {
					s.Unavailable = fmt.Sprintf("%s:%d: servers.%s.%s: %v", configName(p.path), l, name, strings.Join(keys, "."), err)
				}
				return out, false
			}
			p.fail(l, "servers.%s.%s: %v", name, strings.Join(keys, "."), err)
			return out, false
		}
		return out, true
	}
	// Every value given to a server's env or headers is a secret, and so
	// is every value in a url but its host and port (errors quote the whole
	// url: a tenant id in its path is no one's business). In a command
	// line only what looks like one by name or shape is (${HOME} in a path
	// is not), and whatever follows a secret-named flag (--password X).
	always := func(string, string) bool { return true }
	never := func(string, string) bool { return false }
	hostVars := urlHostVars(fs.URL)
	inURL := func(name, val string) bool {
		return LooksSecret(name, val) || strings.ContainsAny(val, "?@/") || !hostVars[name]
	}
	// literal records secret, found in a value written in the file as it
	// is (no ${VAR}), and returns what Written shows for the value.
	literal := func(written, label, secret string) string {
		if strings.Contains(written, "${") || len(secret) < 4 {
			return written
		}
		if !labelRE.MatchString(label) {
			label = "secret" // the label goes into [redacted:...]
		}
		p.secrets = append(p.secrets, Secret{Var: label, Value: secret})
		return "[redacted:" + label + "]"
	}
	switch {
	case fs.Command != "" && fs.URL != "":
		p.fail(line, "servers.%s: give either command (a local server) or url (a remote one), not both", name)
	case fs.Command != "":
		if fs.Transport != "" && fs.Transport != TransportStdio {
			p.fail(key("transport"), "servers.%s.transport: a server with a command speaks stdio; remove transport or use url", name)
		}
		if len(fs.Headers) > 0 {
			p.fail(key("headers"), "servers.%s.headers: headers are for remote servers (url); use env for a local one", name)
		}
		s.Transport = TransportStdio
		var ok bool
		if s.Command, ok = expand(fs.Command, never, "command"); ok && strings.TrimSpace(s.Command) == "" {
			p.fail(key("command"), "servers.%s.command: %q expands to nothing; set the variable to the program to run", name, fs.Command)
		}
		// After --password and the like, a value is the secret unless it
		// is a path to one.
		afterFlag := func(name, val string) bool { return LooksSecret(name, val) || flagSecret(val) }
		for i, a := range fs.Args {
			flag, secretArg := "", LooksSecret
			if i > 0 {
				prev := fs.Args[i-1]
				if f, ok := secretFlag(prev); ok && !strings.Contains(prev, "=") && !strings.HasPrefix(a, "--") {
					flag = f
				}
			}
			written := a
			if flag == "" {
				if f, ok := secretFlag(a); ok && strings.Contains(a, "=") {
					// --password=X: X is the secret.
					flagName, val, _ := strings.Cut(a, "=")
					v, _ := expand(val, afterFlag, "args")
					s.Args = append(s.Args, flagName+"="+v)
					if strings.Contains(val, "${") || flagSecret(v) {
						s.Written.Args[i] = flagName + "=" + literal(val, f, v)
					}
					continue
				}
			} else {
				secretArg = afterFlag
			}
			if flag == "" && !strings.HasPrefix(written, "-") && strings.Contains(written, "${") {
				// "X-Api-Key: ${HDRV}", "Server=x;Password=${PW}": a
				// variable after a secret's name in the same argument
				// is the secret (red team rt1, 18d).
				named := secretArg
				secretArg = func(name, val string) bool {
					i := strings.Index(written, "${"+name+"}")
					return named(name, val) || i > 0 && secretName.MatchString(written[:i])
				}
			}
			if _, pw, _, ok := URLPassword(written); ok && flag == "" && strings.Contains(pw, "${") {
				// postgresql://me:${DB_PASSWORD}@host: what stands for the
				// password is a secret, whatever the variable's name.
				named := secretArg
				secretArg = func(name, val string) bool { return named(name, val) || strings.Contains(pw, "${"+name+"}") }
			}
			a, _ = expand(a, secretArg, "args")
			s.Args = append(s.Args, a)
			if flag != "" && flagSecret(a) {
				s.Written.Args[i] = literal(written, flag, a)
			} else if before, pw, after, ok := URLPassword(written); ok && flag == "" {
				// postgresql://admin:PW@host written as it is: the password
				// is a secret, and config effective shows the rest.
				label := "password"
				if strings.HasSuffix(before, "://") {
					label = "url-user" // a token as the user name
				}
				s.Written.Args[i] = before + literal(pw, label, pw) + after
			}
		}
		s.Cwd, _ = expand(fs.Cwd, never, "cwd")
		if len(fs.Env) > 0 {
			s.Env = map[string]string{}
			for _, k := range slices.Sorted(maps.Keys(fs.Env)) {
				s.Env[k], _ = expand(fs.Env[k], always, "env", k)
				s.Written.Env[k] = literal(fs.Env[k], k, literalSecret(k, s.Env[k]))
			}
		}
		for _, n := range fs.EnvPassthrough {
			if !envNameRE.MatchString(strings.TrimSuffix(n, "*")) {
				p.fail(key("env_passthrough"), "servers.%s.env_passthrough: %q is not a variable name; give names like AWS_REGION, or a prefix like AWS_*", name, n)
			}
		}
		s.EnvPassthrough = fs.EnvPassthrough
		s.home = childHome(s.Env, p.lookup)
	case fs.URL != "":
		switch fs.Transport {
		case "", TransportHTTP:
			s.Transport = TransportHTTP
		case TransportSSE:
			s.Transport = TransportSSE
		default:
			p.fail(key("transport"), "servers.%s.transport: %q is not a transport for a url; use http or sse", name, fs.Transport)
		}
		if len(fs.Args) > 0 || len(fs.Env) > 0 || fs.Cwd != "" || len(fs.EnvPassthrough) > 0 {
			p.fail(line, "servers.%s: args, env, env_passthrough and cwd are for local servers (command); a url server takes headers", name)
		}
		var ok bool
		s.URL, ok = expand(fs.URL, inURL, "url")
		if ok && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			p.fail(key("url"), "servers.%s.url: %q must start with http:// or https://", name, fs.URL) // as written: the value may hold a key
		}
		s.Auth, s.OAuth = p.oauth(name, fs, key, expand)
		s.Written.Auth = s.Auth
		if len(fs.Headers) > 0 {
			s.Headers = map[string]string{}
			for _, k := range slices.Sorted(maps.Keys(fs.Headers)) {
				s.Headers[k], _ = expand(fs.Headers[k], always, "headers", k)
				s.Written.Headers[k] = literal(fs.Headers[k], k, literalSecret(k, s.Headers[k]))
			}
		}
	default:
		p.fail(line, "servers.%s: give it a command (a local server) or a url (a remote one)", name)
	}
	if fs.Command != "" && (fs.Auth != "" || fs.OAuth != nil) {
		p.fail(key("auth"), "servers.%s: auth and oauth are for remote servers (url); a local server gets its secrets in env", name)
	}
	if fs.PathBase != "" {
		if v, ok := expand(fs.PathBase, never, "path_base"); ok {
			var err error
			if s.PathBase, err = pathBase(v, s.home, p.path); err != nil {
				p.fail(key("path_base"), "servers.%s.path_base: %v", name, err)
			}
		}
	}
	return s
}

// labelRE matches what may name a secret in [redacted:NAME]: a variable,
// a header or a flag.
var labelRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
