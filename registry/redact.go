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
		// As written, and as a URL carries it (errors quote URLs, and keys
		// have +, / and = in them).
		for _, form := range []string{sec.Value, url.QueryEscape(sec.Value), url.PathEscape(sec.Value)} {
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
