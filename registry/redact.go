package registry

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf16"
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

// urlPassword matches a url with a password in it (postgres://me:pw@host)
// or a user name alone (https://TOKEN@host): see urlUserSecret.
var urlPassword = regexp.MustCompile(`://[^/\s:@?#]+(:[^/\s@]+)?@`)

// connSecret matches a connection string's or a query's secret part
// (Server=x;Password=PW, ...&token=T): a value that holds one is a
// secret whatever its variable is called (red team rt1, 18d).
var connSecret = regexp.MustCompile(`(?i)(?:^|[;&?\s])(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?token)\s*=\s*[^;&\s]{4,}`)

// hasURLSecret reports whether value holds a url with a password, or with
// a user name alone that is a token (urlUserSecret).
func hasURLSecret(value string) bool {
	for _, m := range urlPassword.FindAllStringSubmatchIndex(value, -1) {
		if m[2] >= 0 {
			return true
		}
		if urlUserSecret(value[m[0]+3 : m[1]-1]) {
			return true
		}
	}
	return false
}

// urlUserSecret reports whether user, a url's user name given without a
// password, is a secret: a token carried as the user name
// (https://TOKEN@pypi.fury.io/acme/, https://TOKEN@github.com/...), or a
// ${VAR} standing for one. "postgres", "git" or "deploy" are names, not
// tokens: 8 characters or more with both letters and digits in them is.
func urlUserSecret(user string) bool {
	if strings.Contains(user, "${") {
		return true
	}
	if len(user) < 8 || strings.ContainsAny(user, " \t") {
		return false
	}
	return strings.ContainsAny(user, "0123456789") && strings.IndexFunc(user, unicode.IsLetter) >= 0
}

// LooksSecret reports whether a value named name is a secret by its name or
// by its shape (a GitHub token, an OpenAI key, ...).
func LooksSecret(name, value string) bool {
	if secretName.MatchString(name) || hasURLSecret(value) || connSecret.MatchString(value) {
		return true
	}
	for _, c := range credentialShapes {
		if slices.ContainsFunc(c.literals, func(l string) bool { return strings.Contains(value, l) }) && c.re.MatchString(value) {
			return true
		}
	}
	return false
}

// minBase64Core is the shortest base64 text quiver takes for a secret's
// encoding: a shorter run (a 4- or 5-byte secret gives at most 6 fully
// determined characters) would match ordinary words and blank them out.
const minBase64Core = 8

// secretForms are the ways a secret shows in text, every one of them a
// text to redact (see formGroups).
func secretForms(sec Secret) []string {
	var out []string
	for _, g := range formGroups(sec) {
		out = append(out, g.longer...)
		out = append(out, g.text)
	}
	return out
}

// A formGroup is one text a secret shows as, under the secret's name, and
// longer texts that contain it, looked for only where it is (the whole
// base64 encoding, with its last partial character and its padding,
// around the encoding's fully determined core).
type formGroup struct {
	text   string
	longer []string
	label  string
}

// formGroups lists the ways sec shows in text; none for a value under 4
// bytes, which would blank out ordinary text everywhere.
//
// A secret reaches the model not only as written but in the encodings a
// server applies itself, and each has been seen to leak:
//
//   - as a URL carries it (errors quote URLs, and keys have +, / and = in
//     them);
//   - in hex, lower and upper case;
//   - as a quoted string: JSON as encoding/json writes it (<, > and &
//     escaped or not), as Python's json.dumps writes it (all but ASCII
//     escaped), and with only the backslash and the quote escaped (a
//     server printing its environment as JSON text, or as a Python dict,
//     or its stderr log quoting a value);
//   - base64, standard and URL alphabets, at each of the three byte
//     alignments the secret can sit at in the encoded data (an image or a
//     "media" read of a file that holds the secret). For an alignment the
//     form is the run of characters that the secret's bytes alone
//     determine: the first and last characters, which mix in the
//     neighbouring bytes, are left out and stay in the text, a few bits
//     at most. A run under minBase64Core characters is left out: a secret
//     of 7 bytes or more is found at every alignment, one of 6 only at
//     the first.
//
// Credential shapes (ghp_..., AKIA...) are found by their look in text and
// are not looked for inside base64: only known values are. Base64 broken
// into lines (PEM, MIME) is not matched across a line break.
func formGroups(sec Secret) []formGroup {
	v := sec.Value
	if len(v) < 4 {
		return nil
	}
	var out []formGroup
	at := map[string]int{}
	add := func(text string, longer ...string) {
		i, ok := at[text]
		if !ok {
			i = len(out)
			at[text] = i
			out = append(out, formGroup{text: text, label: sec.Var})
		}
		for _, l := range longer {
			if l != text && !slices.Contains(out[i].longer, l) {
				out[i].longer = append(out[i].longer, l)
			}
		}
	}
	add(v)
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	// Hex, as a dump or a digest-looking field shows bytes (issue 22).
	add(hex.EncodeToString([]byte(v)))
	add(strings.ToUpper(hex.EncodeToString([]byte(v))))
	for _, q := range quotedForms(v) {
		add(q)
	}
	// Whole encodings a server or a shell applies to a value on its own
	// (red team rt1, A15–A17): base32; UTF-16LE in base64 and hex (how
	// PowerShell's -EncodedCommand and Windows dumps carry text); a
	// hex-valued secret's bytes in base64; a digits secret's value in hex.
	// Only the secret as the whole data: not at other alignments.
	for _, w := range wholeEncodings(v) {
		if len(w) >= minBase64Core {
			add(w)
		}
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for align := range 3 {
			core := base64Core(enc, v, align)
			if len(core) < minBase64Core {
				continue
			}
			if align == 0 {
				// The whole encoding, when the secret is all of the data.
				whole := enc.EncodeToString([]byte(v))
				add(core, whole, whole+strings.Repeat("=", (4-len(whole)%4)%4))
			} else {
				add(core)
			}
		}
	}
	// The longest first: a longer form must be replaced whole before a
	// shorter one inside it cuts it, leaving part of it in the clear.
	slices.SortStableFunc(out, func(a, b formGroup) int { return len(b.text) - len(a.text) })
	for i := range out {
		slices.SortStableFunc(out[i].longer, func(a, b string) int { return len(b) - len(a) })
	}
	return out
}

// wholeEncodings are v's encodings as the whole of the encoded data: see
// formGroups.
func wholeEncodings(v string) []string {
	var out []string
	b32 := base32.StdEncoding.EncodeToString([]byte(v))
	out = append(out, b32, strings.TrimRight(b32, "="))
	u16 := make([]byte, 0, 2*len(v))
	for _, c := range utf16.Encode([]rune(v)) {
		u16 = append(u16, byte(c), byte(c>>8))
	}
	out = append(out, base64.RawStdEncoding.EncodeToString(u16), hex.EncodeToString(u16), strings.ToUpper(hex.EncodeToString(u16)))
	if raw, err := hex.DecodeString(v); err == nil && len(raw) >= 6 {
		out = append(out, base64.RawStdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw))
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil && strings.Trim(v, "0123456789") == "" {
		x := strconv.FormatUint(n, 16)
		out = append(out, x, strings.ToUpper(x))
	}
	return out
}

// quotedForms are v as quoted strings write it (without the quotes), for a
// v that has something to escape: see formGroups.
func quotedForms(v string) []string {
	plain := true
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || strings.IndexByte(`"\'<>&`, c) >= 0 {
			plain = false
			break
		}
	}
	if plain {
		return nil
	}
	var out []string
	html, _ := json.Marshal(v)
	out = append(out, string(html[1:len(html)-1]))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	noHTML := strings.TrimSuffix(b.String(), "\n")
	out = append(out, noHTML[1:len(noHTML)-1])
	out = append(out, asciiJSON(v))
	out = append(out, strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v))
	out = append(out, strings.ReplaceAll(v, `\`, `\\`))
	out = append(out, strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v))
	return out
}

// asciiJSON is v as a JSON string body with every character outside
// printable ASCII escaped, as Python's json.dumps writes it by default
// (ensure_ascii) and as JSON.stringify writes control characters.
func asciiJSON(v string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	u := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[r>>shift&0xf])
		}
	}
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r >= 0x7f && r < 0x10000:
			u(r)
		case r >= 0x10000:
			r1, r2 := utf16.EncodeRune(r)
			u(r1)
			u(r2)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// base64Core is the part of enc's encoding of v, placed align bytes into
// the encoded data (0, 1 or 2), that v's bytes alone determine: the
// characters whose six bits all come from v.
func base64Core(enc *base64.Encoding, v string, align int) string {
	data := make([]byte, align+len(v))
	copy(data[align:], v)
	encoded := enc.EncodeToString(data)
	first := (8*align + 5) / 6       // the first character that starts in v
	last := 8 * (align + len(v)) / 6 // past the last that ends in v
	if last <= first {
		return ""
	}
	return encoded[first:last]
}

// A Redactor hides a fixed set of known secrets, and every well-known
// credential shape, from text. Build one per configuration where text is
// redacted often (each message to the host): it works out each secret's
// forms once, so that redacting a text with no secret in it costs a few
// substring scans per secret. A Redactor is safe for concurrent use.
type Redactor struct {
	forms  []formGroup // the longest first
	spread spreadForms // looked for across line breaks and percent escapes
	digits []digitSecret
	skel   skeletons // looked for in every text's skeleton (redactskel.go)
}

// NewRedactor returns a Redactor for secrets. The caller's slice is
// neither kept nor changed.
func NewRedactor(secrets []Secret) *Redactor {
	r := &Redactor{}
	for _, sec := range secrets {
		r.forms = append(r.forms, formGroups(sec)...)
	}
	// Longest first across secrets too: a secret that contains another
	// must not be cut in two by the shorter one's replacement, leaving its
	// tail in the clear.
	slices.SortStableFunc(r.forms, func(a, b formGroup) int { return len(b.text) - len(a.text) })
	r.spread = newSpreadForms(secrets)
	r.digits = digitSecrets(secrets)
	r.skel = newSkeletons(secrets)
	return r
}

// Redact replaces every form of every known secret in s (see formGroups)
// with [redacted:VAR] and every well-known credential shape with
// [redacted:KIND]. A secret written with line breaks or percent escapes
// inside it is replaced whole, breaks and escapes included (see
// spreadForms), and so is a number that spells a digits-only secret by
// its value, in any notation (see digitSecret): s may be the literal of
// a JSON number.
func (r *Redactor) Redact(s string) string {
	// Numbers first, so that a number's whole spelling goes, not the
	// secret's digits in it (0.[redacted]e12 would still tell its value).
	s = redactNumbers(s, r.digits)
	for _, f := range r.forms {
		if !strings.Contains(s, f.text) {
			continue
		}
		mark := "[redacted:" + f.label + "]"
		for _, l := range f.longer {
			s = strings.ReplaceAll(s, l, mark)
		}
		s = strings.ReplaceAll(s, f.text, mark)
	}
	for _, c := range credentialShapes {
		if !slices.ContainsFunc(c.literals, func(l string) bool { return strings.Contains(s, l) }) {
			continue
		}
		s = c.re.ReplaceAllString(s, "[redacted:"+c.name+"]")
	}
	return r.skel.redact(r.spread.redact(s))
}

// Redact replaces every known secret in s with [redacted:VAR] and every
// well-known credential shape with [redacted:KIND], as
// NewRedactor(secrets).Redact(s) does. Callers redact many texts with the
// same Config.Secrets (every message, every log record); the Redactor
// built last is kept for the next call with the same secrets (see
// lastRedactor), so that only a new set of secrets costs working out
// their forms. Where the secrets are known up front, hold a Redactor.
func Redact(s string, secrets []Secret) string {
	return redactorFor(secrets).Redact(s)
}

// lastRedactor is the Redactor Redact built last, with the secrets it was
// built from. It is the package's one piece of mutable state, a cache: a
// wrong entry costs a rebuild, never a miss, because an entry is used
// only for secrets equal to those it was built from (compared by value,
// which for the same Config.Secrets is a pointer compare per string).
var lastRedactor atomic.Pointer[cachedRedactor]

type cachedRedactor struct {
	secrets []Secret // a copy: the caller may change its slice
	r       *Redactor
}

func redactorFor(secrets []Secret) *Redactor {
	if c := lastRedactor.Load(); c != nil && slices.Equal(c.secrets, secrets) {
		return c.r
	}
	c := &cachedRedactor{secrets: slices.Clone(secrets), r: NewRedactor(secrets)}
	lastRedactor.Store(c)
	return c.r
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
		!strings.HasPrefix(value, "~") && !strings.HasPrefix(value, ".") && !(strings.Contains(value, "://") && !hasURLSecret(value))
}

// SecretFlag reports whether arg is a flag whose value is a secret
// (--password, --api-key=X; not --keywords or --token-file), and returns
// its name as written; FlagSecret whether value, given after such a flag,
// is the secret itself rather than a path to one. quiver import decides
// as the config does.
func SecretFlag(arg string) (string, bool) { return secretFlag(arg) }

// FlagSecret: see SecretFlag.
func FlagSecret(value string) bool { return flagSecret(value) }

// URLPassword splits s, a url with a password (scheme://user:PW@host…),
// around the password, or a url with a token for its user name and no
// password (scheme://TOKEN@host…, see urlUserSecret) around the user
// name; ok is false for anything else.
func URLPassword(s string) (before, pw, after string, ok bool) {
	i := strings.Index(s, "://")
	if i < 0 {
		return "", "", "", false
	}
	rest := s[i+3:]
	end := len(rest)
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		end = j
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return "", "", "", false
	}
	user, pw, found := strings.Cut(rest[:at], ":")
	if !found && urlUserSecret(user) {
		return s[:i+3], user, s[i+3+len(user):], true
	}
	if !found || user == "" || pw == "" || strings.ContainsAny(pw, " \t") {
		return "", "", "", false
	}
	start := i + 3 + len(user) + 1
	return s[:start], pw, s[start+len(pw):], true
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
