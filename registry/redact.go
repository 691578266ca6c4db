package registry

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// credentialShapes are well-known forms of secrets that quiver hides even
// when it was never told about them: a downstream server that echoes a
// token must not put it in front of the model or into the logs.
//
// Each shape has literals that any match must contain; the regular
// expression runs only on text that has one, so the common case (no
// credential anywhere) costs a few substring scans, not seven regexp
// passes over every result.
var credentialShapes = []struct {
	name     string
	literals []string
	re       *regexp.Regexp
}{
	{"private-key", []string{"PRIVATE KEY-----"}, regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`)},
	{"github-token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})\b`)},
	{"aws-access-key", []string{"AKIA", "ASIA"}, regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)},
	{"slack-token", []string{"xox"}, regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`)},
	{"anthropic-key", []string{"sk-ant-"}, regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}\b`)},
	{"openai-key", []string{"sk-"}, regexp.MustCompile(`\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b`)},
	{"bearer-token", []string{"earer", "EARER"}, regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}`)},
}

// secretName matches the names of variables, keys and URL parameters that
// hold secrets (GITHUB_TOKEN, api_key, X-Api-Key, DB_PASSWORD, ...).
var secretName = regexp.MustCompile(`(?i)token|key|secret|passw|credential|auth|cookie|(^|_)pat($|_)`)

// urlPassword matches a url with a password in it (postgres://me:pw@host).
var urlPassword = regexp.MustCompile(`://[^/\s:@]+:[^/\s@]+@`)

// LooksSecret reports whether a value named name is a secret by its name or
// by its shape (a GitHub token, an OpenAI key, ...).
func LooksSecret(name, value string) bool {
	if secretName.MatchString(name) || urlPassword.MatchString(value) {
		return true
	}
	for _, c := range credentialShapes {
		if slices.ContainsFunc(c.literals, func(l string) bool { return strings.Contains(value, l) }) && c.re.MatchString(value) {
			return true
		}
	}
	return false
}

// secretForms are the ways a secret shows in text: as written, and as a
// URL carries it (errors quote URLs, and keys have +, / and = in them).
func secretForms(sec Secret) []string {
	forms := []string{sec.Value}
	for _, f := range []string{url.QueryEscape(sec.Value), url.PathEscape(sec.Value)} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// Redact replaces every known secret value in s with [redacted:VAR] and
// every well-known credential shape with [redacted:KIND].
func Redact(s string, secrets []Secret) string {
	// Longest first: a secret that contains another must not be cut in
	// two by the shorter one's replacement, leaving its tail in the clear.
	if len(secrets) > 1 {
		secrets = slices.Clone(secrets)
		slices.SortStableFunc(secrets, func(a, b Secret) int { return len(b.Value) - len(a.Value) })
	}
	for _, sec := range secrets {
		if len(sec.Value) < 4 {
			continue
		}
		for _, form := range secretForms(sec) {
			if strings.Contains(s, form) {
				s = strings.ReplaceAll(s, form, "[redacted:"+sec.Var+"]")
			}
		}
	}
	for _, c := range credentialShapes {
		if !slices.ContainsFunc(c.literals, func(l string) bool { return strings.Contains(s, l) }) {
			continue
		}
		s = c.re.ReplaceAllString(s, "[redacted:"+c.name+"]")
	}
	return s
}

// literalSecret is the secret in value, an env or header value written
// into servers.yaml as it is, or "" if it holds none: a credential by its
// shape, or, under a secret's name (API_KEY, Authorization), a value that
// looks like a key: no spaces (after an auth scheme such as Basic, the
// credentials), 8 bytes or more, not a path. A literal "true", "oauth" or
// "/run/secrets/token" under such a name is a setting, not a secret, and
// hiding it would blank it out of every result.
func literalSecret(name, value string) string {
	if LooksSecret("", value) {
		return value
	}
	if !secretName.MatchString(name) {
		return ""
	}
	if scheme, cred, ok := strings.Cut(value, " "); ok && !strings.ContainsAny(scheme, "/") {
		value = strings.TrimSpace(cred)
	}
	if len(value) < 8 || strings.ContainsAny(value, " \t\n") || strings.HasPrefix(value, "/") ||
		strings.HasPrefix(value, "~") || strings.HasPrefix(value, ".") || strings.Contains(value, "://") {
		return ""
	}
	return value
}

// flagSecret reports whether value, written literally after a
// secret-named flag, is the secret: not a path to one (--key ~/.ssh/id,
// --token-file style values under --token) nor too short to matter.
func flagSecret(value string) bool {
	return len(value) >= 4 && !strings.ContainsAny(value, " \t\n") && !strings.HasPrefix(value, "/") &&
		!strings.HasPrefix(value, "~") && !strings.HasPrefix(value, ".") && !(strings.Contains(value, "://") && !urlPassword.MatchString(value))
}

// secretFlagEndings and secretFlagWords decide which command-line flags
// take a secret: the value after --password, --api-key, --client-secret or
// --token, and the X of --password=X. The test is on the flag's last word
// (so --token-file and --keywords take none), narrower than secretName: a
// value wrongly taken for a secret is hidden from every result quoting it.
// -p is left out on purpose (a port as often as a password), and so is
// --auth (as often a mode, "--auth none", as a credential).
var (
	secretFlagEndings = []string{"password", "passwd", "passphrase", "token", "secret", "apikey", "credential", "credentials", "cookie"}
	secretFlagWords   = []string{"key", "pass", "pat"}
)

// secretFlag reports whether arg is a flag (-x, --x or --x=value) whose
// value is a secret, and returns its name as written (--api-key).
func secretFlag(arg string) (string, bool) {
	if !strings.HasPrefix(arg, "-") {
		return "", false
	}
	name, _, _ := strings.Cut(arg, "=")
	words := strings.FieldsFunc(splitCamel(strings.TrimLeft(name, "-")), func(r rune) bool {
		return r == '-' || r == '_' || r == '.'
	})
	if len(words) == 0 {
		return "", false
	}
	last := strings.ToLower(words[len(words)-1])
	if slices.Contains(secretFlagWords, last) || slices.ContainsFunc(secretFlagEndings, func(e string) bool { return strings.HasSuffix(last, e) }) {
		return name, true
	}
	return "", false
}

// splitCamel puts a '-' before each upper-case letter that follows a
// lower-case one: apiKey becomes api-Key.
func splitCamel(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			b.WriteByte('-')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// urlHostVars returns the variables that make up the written url's whole
// host or whole port (https://${HOST}:${PORT}/) and appear nowhere else in
// it: the only ones in a url that are not secrets. A host or a port is no
// secret, and hiding "localhost" or "8080" would blank them out of every
// result; anything else (a tenant id in the path, a key in the query or the
// user info) is hidden.
func urlHostVars(written string) map[string]bool {
	out := map[string]bool{}
	_, rest, ok := strings.Cut(written, "://")
	if !ok {
		return out
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		authority = authority[i+1:]
	}
	host, port, _ := strings.Cut(authority, ":")
	for _, part := range []string{host, port} {
		if m := wholeVarRE.FindStringSubmatch(part); m != nil && strings.Count(written, part) == 1 {
			out[m[1]] = true
		}
	}
	return out
}

var wholeVarRE = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)
