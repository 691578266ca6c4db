package gate

import (
	"errors"
	"net/url"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// isWindowsPath reports whether s is a Windows path: a drive ("C:\",
// "C:/") or a UNC or device path ("\\server\share", "\\?\C:\").
func isWindowsPath(s string) bool {
	return isDrivePath(s) || strings.HasPrefix(s, `\\`)
}

func isDrivePath(s string) bool {
	return len(s) >= 3 && s[1] == ':' && (s[2] == '\\' || s[2] == '/') &&
		('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z')
}

// hasPathShape reports whether a string found anywhere in the arguments is
// a path by its shape, whatever its argument is called. A string that
// spans lines or is longer than any path is content, not a path.
func hasPathShape(s string) bool {
	if len(s) > maxPathLen {
		return false
	}
	t := strings.TrimFunc(s, isTrimmed)
	if strings.ContainsAny(t, "\n\r") {
		return false
	}
	if strings.Trim(t, "/") == "" {
		// "/" alone under a name that says nothing of paths is a
		// delimiter or a URL path far more often than the root folder;
		// under a path-like name it is still judged.
		return false
	}
	if shaped(t) || relativeShaped(t) {
		return true
	}
	if !isASCII(t) {
		// Lookalikes (fullwidth solidus and tilde) that a normalising
		// server reads as the real thing.
		return shaped(norm.NFKC.String(t))
	}
	return false
}

// otherSchemeURI reports whether t is a URI of a scheme other than file:
// (scheme://...) with no ".." part.
func otherSchemeURI(t string) bool {
	i := strings.Index(t, "://")
	if i <= 0 || isFileURI(t) {
		return false
	}
	for j, r := range t[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || j > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	parts := strings.FieldsFunc(t[i+3:], func(r rune) bool { return r == '/' || r == '\\' })
	return !slices.Contains(parts, "..")
}

// relativeShaped reports whether t looks like a relative path: either a
// ".." part or two non-empty parts around a separator with a letter
// somewhere ("outside/canary.txt", "outside/My Documents/x", "sub\\x";
// not "1/2" or "2024/01/02"). A server that opens any string as a file
// reaches what such a string names from its own folder, so the fence
// judges it like any path: in the server's frame, and outside where the
// server declares none.
//
// What is exempt is decided by how the string begins, never by what it
// holds somewhere: a file name may hold white space or "://"
// ("fenced/x://../../outside" is a folder "x:" and then up), so only a
// string that starts as a URI of another scheme (otherSchemeURI: a scheme
// and "://" at the very start, no ".." part) is not a path. A one-line
// string of prose with a slash in it is judged too: where its server
// declares no path_base that asks, and an approval asked is acceptable
// where a file read outside the fence is not. So is a string of digits
// ("2024/01/02", "1/2"): a folder may bear any name, and red team 3 read
// <folder>/2024/01/02 through a server that opens what it is given.
func relativeShaped(t string) bool {
	if t == "" || otherSchemeURI(t) {
		return false
	}
	parts := strings.FieldsFunc(t, func(r rune) bool { return r == '/' || r == '\\' })
	if slices.Contains(parts, "..") {
		return true
	}
	return len(parts) >= 2 && strings.ContainsAny(t, `/\`)
}

func shaped(t string) bool {
	for _, p := range []string{"/", "~/", "~\\", "./", "../", ".\\", "..\\", `\\`} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return t == "~" || isFileURI(t) || isDrivePath(t)
}

type variant struct {
	s   string
	err error
}

func variants(s string, win bool) []variant {
	var out []variant
	if t := strings.TrimFunc(s, isTrimmed); t != s && t != "" {
		// Servers that trim their arguments (JavaScript's trim also drops
		// U+FEFF).
		out = append(out, variant{s: t})
	}
	if strings.ContainsRune(s, '\\') {
		// Windows-minded servers (and some Node code) treat "\" as a
		// separator.
		out = append(out, variant{s: strings.ReplaceAll(s, `\`, "/")})
	}
	if strings.ContainsRune(s, '%') {
		// Decoded leniently, as Python's unquote does: a stray "%" does not
		// stop "%2e%2e" after it from decoding.
		if d := unquote(s); d != s {
			if why := oddDecoding(s, d); why != "" {
				return []variant{{err: bad("percent-encoding in the path %s", why)}}
			}
			out = append(out, variant{s: d})
		}
	}
	for _, part := range listParts(s, win) {
		// A server that takes a list in one string ("ok.txt /outside/x",
		// "a,b", PATH-style "a:b", a query "a=x&b=y", quoted parts
		// `ok.txt "../x"`) opens each; read as one name the list hid
		// every name after the first (red team 44b, red team 2 P1-P4).
		out = append(out, variant{s: part})
	}
	for _, alt := range braceAlternatives(s) {
		// Glob-minded servers expand "{ok.txt,../secret.txt}" into both
		// names; read as one name it would hide the second (red team 5).
		out = append(out, variant{s: alt})
	}
	if isFileURI(s) {
		// A reading that became a file: URI (after trimming, say) is read
		// as one too.
		p, err := fileURIPath(s)
		if err != nil {
			return []variant{{err: err}}
		}
		out = append(out, variant{s: p})
	}
	if !isASCII(s) {
		// Lookalikes (fullwidth solidus, one-dot leader) become "/" and
		// "." under compatibility normalisation, which some file systems
		// and libraries apply.
		for _, f := range []norm.Form{norm.NFKC, norm.NFC, norm.NFD} {
			if n := f.String(s); n != s {
				out = append(out, variant{s: n})
			}
		}
	}
	return out
}

// oddDecoding says why a percent-decoded path is suspicious: it hides a
// separator, a dot segment, a control character or another layer of
// encoding — nothing an honest file name needs to encode.
func oddDecoding(raw, dec string) string {
	lower := strings.ToLower(raw)
	switch {
	case strings.Contains(lower, "%2f"), strings.Contains(lower, "%5c"):
		return "hides a path separator"
	case strings.Contains(lower, "%2e"):
		return "hides a dot"
	case strings.Contains(lower, "%00"):
		return "hides a NUL byte"
	case !utf8.ValidString(dec):
		return "decodes to invalid UTF-8"
	case checkChars(dec) != nil:
		return "decodes to a control character"
	}
	if unquote(dec) != dec {
		return "is encoded twice"
	}
	return ""
}

// unquote decodes every valid %XX and leaves anything else as it is.
func unquote(s string) string {
	if !strings.ContainsRune(s, '%') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// mentionsFileURI reports whether any argument string is, or once trimmed
// or normalised becomes, a file: URI: those are fenced under any name.
func mentionsFileURI(s string) bool {
	t := strings.TrimFunc(s, isTrimmed)
	return isFileURI(t) || isFileURI(norm.NFKC.String(t))
}

func isFileURI(s string) bool {
	return len(s) >= 5 && strings.EqualFold(s[:5], "file:")
}

// fileURIPath extracts the local path of a file: URI, refusing anything a
// local server could not open as a plain path.
func fileURIPath(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", bad("not a valid file URI: %v", errors.Unwrap(err))
	}
	if u.Opaque != "" {
		return "", bad("file URI without a path (%q)", s)
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return "", bad("file URI names another host (%q)", u.Host)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", bad("file URI with a user, query or fragment")
	}
	if oddDecoding(u.EscapedPath(), u.Path) != "" && strings.ContainsRune(u.EscapedPath(), '%') {
		return "", bad("file URI %s", oddDecoding(u.EscapedPath(), u.Path))
	}
	if u.Path == "" {
		return "", bad("file URI without a path")
	}
	return u.Path, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// braceAlternatives expands the first brace group of s that holds a
// top-level comma: "a/{b,c/d}/e" is "a/b/e" and "a/c/d/e". Groups after it,
// and groups inside an alternative, are expanded when readings applies
// variants to each form in turn, within its bound on forms.
func braceAlternatives(s string) []string {
	for open := strings.IndexByte(s, '{'); open >= 0; {
		depth, start := 0, open+1
		var alts []string
		for i := open; i < len(s); i++ {
			switch s[i] {
			case '{':
				depth++
			case ',':
				if depth == 1 {
					alts = append(alts, s[start:i])
					start = i + 1
				}
			case '}':
				depth--
			}
			if depth > 0 {
				continue
			}
			if len(alts) == 0 {
				break // "{x}" is a name, not a choice
			}
			alts = append(alts, s[start:i])
			out := make([]string, len(alts))
			for j, a := range alts {
				out[j] = s[:open] + a + s[i+1:]
			}
			return out
		}
		if depth > 0 {
			return nil // unbalanced: nothing a glob expands
		}
		next := strings.IndexByte(s[open+1:], '{')
		if next < 0 {
			return nil
		}
		open += 1 + next
	}
	return nil
}

// listParts are the names in s read as a list: split at white space and
// at ",", ";", "|", "&", "=" (and "?" when s is no URI), and then at
// colons, except in a part that is a URI ("file:/x", "https://…") and,
// only when the resolver reads Windows paths (win), after a drive letter
// ("C:\\x", "\\\\?\\C:\\x", "/C:/x"): on unix "a:../x" is two names. Each part
// is also read with its surrounding quotes (", ', `) removed, and when s
// holds a quote it is also read as a shell reads it (`"a b" c` is the
// names "a b" and "c"). nil when s is no list.
func listParts(s string, win bool) []string {
	if !strings.ContainsAny(s, " \t,;|:&=?\"'`") {
		return nil
	}
	uri := strings.Contains(s, "://") || isFileURI(strings.TrimFunc(s, isTrimmed))
	prev := rune(0)
	sep := func(r rune) bool {
		// "?" after a separator or a "?" is a Windows device prefix's
		// ("\\\\?\\C:\\x", "\\??\\C:\\x"), never a query's.
		q := r == '?' && !uri && prev != '\\' && prev != '/' && prev != '?'
		prev = r
		return r == ',' || r == ';' || r == '|' || r == '&' || r == '=' || q || unicode.IsSpace(r)
	}
	var out []string
	addField := func(f string, first bool) {
		for _, c := range []string{f, strings.Trim(f, "\"'`")} {
			if c == "" || first && firstPartCovered(s, c) {
				continue
			}
			if !strings.Contains(c, ":") || strings.Contains(c, "://") || isFileURI(c) || win && isDrivePath(c) {
				out = append(out, c)
				continue
			}
			out = append(out, splitColons(c, win)...)
		}
	}
	fields := strings.FieldsFunc(s, sep) // calls sep on each rune in order
	words := []string(nil)
	if strings.ContainsAny(s, "\"'`") {
		prev = 0
		words = shellWords(s, win, sep)
	}
	if len(fields) < 2 && len(words) < 2 && (len(fields) == 0 || !strings.Contains(fields[0], ":") && strings.Trim(fields[0], "\"'`") == fields[0]) {
		return nil
	}
	for i, f := range fields {
		addField(f, i == 0 && len(fields) > 1)
	}
	for i, w := range words {
		if !slices.Contains(out, w) && !slices.Contains(fields, w) {
			addField(w, i == 0 && len(words) > 1)
		}
	}
	if shaped(strings.Trim(strings.TrimFunc(s, isTrimmed), "\"'`")) {
		// An absolute path with spaces in its names ("/Users/me/Library/
		// Application Support/x"): a later part is judged apart when it
		// could lead elsewhere on its own (absolute, a URI, a ".."
		// part); a plain relative name ("Support/x") is the rest of the
		// one path far more often than a second one.
		out = slices.DeleteFunc(out, func(p string) bool {
			return !shaped(p) && !slices.Contains(strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }), "..")
		})
	}
	out = slices.DeleteFunc(out, func(p string) bool { return p == s })
	if len(out) == 0 {
		return nil
	}
	return out
}

// shellWords reads s as a POSIX shell reads its words: quotes group and
// are removed, a backslash outside single quotes escapes the next
// character (not where Windows paths are read: there it is a separator),
// and words end at unquoted white space or another list separator.
func shellWords(s string, win bool, sep func(rune) bool) []string {
	var out []string
	var b strings.Builder
	in, quote := false, rune(0)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
				continue
			}
		case quote != 0:
			if r == quote {
				quote = 0
				continue
			}
			if r == '\\' && !win && quote == '"' && i < len(s) && strings.IndexByte("\"\\$`", s[i]) >= 0 {
				r, n = utf8.DecodeRuneInString(s[i:])
				i += n
			}
		case r == '"' || r == '\'' || r == '`':
			quote, in = r, true
			continue
		case r == '\\' && !win && i < len(s):
			r, n = utf8.DecodeRuneInString(s[i:])
			i += n
		case sep(r):
			if in {
				out = append(out, b.String())
				b.Reset()
				in = false
			}
			continue
		}
		b.WriteRune(r)
		in = true
	}
	if in {
		out = append(out, b.String())
	}
	return out
}

// firstPartCovered reports whether the first part of the list s need not
// be judged apart: the whole string, judged as one path too, begins with
// it, and what follows it never climbs above the folder that holds it
// (its text, cleaned, does not start with ".."). Then the whole lies
// under the first part's folder, so a first part outside the fence
// while the whole is inside is one whose text begins a folder of the
// fence itself ("C:\\Users\\Jonathan" of "C:\\Users\\Jonathan Smith\\work"):
// a path with a space in a folder's name is not asked about for it.
// "outside/x y/../../../in" climbs back, and its first part is judged.
func firstPartCovered(s, first string) bool {
	i := strings.Index(s, first)
	if i < 0 {
		return false
	}
	rest := strings.TrimLeftFunc(s[i+len(first):], func(r rune) bool {
		return r == ',' || r == ';' || r == '|' || r == ':' || r == '&' || r == '=' || r == '?' || r == '"' || r == '\'' || r == '`' || unicode.IsSpace(r)
	})
	c := path.Clean(strings.ReplaceAll(rest, `\`, "/"))
	return c != ".." && !strings.HasPrefix(c, "../") && !strings.HasPrefix(c, "/")
}

// splitColons splits f at its colons (a PATH-style list), except, where
// Windows paths are read (win), a colon that follows a lone letter at the
// start or after a separator: a drive. On unix no path has a drive.
func splitColons(f string, win bool) []string {
	var out []string
	start, seg := 0, 0
	for i := 0; i < len(f); i++ {
		switch c := f[i]; {
		case c == '/' || c == '\\':
			seg = i + 1
		case c == ':':
			if win && i-seg == 1 && isLetter(f[seg]) {
				continue
			}
			if i > start {
				out = append(out, f[start:i])
			}
			start, seg = i+1, i+1
		}
	}
	if start < len(f) {
		out = append(out, f[start:])
	}
	return out
}
