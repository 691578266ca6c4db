package registry

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
)

// Two ways a secret shows that no list of fixed forms can hold (issue 22):
// spread through a text, with a line break or percent escapes inside it
// (a server wrapping its output at 64 columns, or percent-encoding every
// byte of a value, or only some), and as a number, whose value can be
// spelled in many ways (739182046551, 7.39182046551e11, 739182046551.0).
// Both are judged here, by the Redactor, so that every place that hides
// secrets (the exit, the ledger, the log) hides these too.

// spreadForms are the texts of the secrets looked for in a view of a text
// with its line breaks dropped and its percent escapes decoded: each
// secret's own value, its hex and its base64 cores (formGroups), the
// forms a server writes out whole and may wrap.
type spreadForms struct {
	forms []spreadForm // the longest first
	// inForm marks the bytes some form holds: a percent escape of any
	// other byte cannot be part of a secret.
	inForm [256]bool
}

type spreadForm struct{ text, label string }

func newSpreadForms(secrets []Secret) spreadForms {
	var f spreadForms
	for _, sec := range secrets {
		v := sec.Value
		if len(v) < 4 {
			continue
		}
		texts := []string{v, hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v)))}
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for align := range 3 {
				if core := base64Core(enc, v, align); len(core) >= minBase64Core {
					texts = append(texts, core)
				}
			}
		}
		if d, err := url.PathUnescape(v); err == nil && d != v {
			// A secret with an escape in it reads, in the view, decoded.
			texts = append(texts, d)
		}
		for _, t := range texts {
			// A form with a break or an escape in it is found as it is
			// written, by the fixed forms; the view would never hold it.
			if strings.ContainsAny(t, "\r\n") || slices.ContainsFunc(f.forms, func(g spreadForm) bool { return g.text == t }) {
				continue
			}
			f.forms = append(f.forms, spreadForm{text: t, label: sec.Var})
			for i := 0; i < len(t); i++ {
				f.inForm[t[i]] = true
			}
		}
	}
	slices.SortStableFunc(f.forms, func(a, b spreadForm) int { return len(b.text) - len(a.text) })
	return f
}

// redact replaces each form found in the view of s (line breaks dropped,
// percent escapes decoded) with its mark, over the whole stretch of s it
// came from, breaks and escapes included. The view is built only when s
// could hold one: a percent escape of a byte some form has, or a line
// break with the start of a form before it and the form's next byte after
// it. Most texts have neither, and cost three byte scans.
func (f *spreadForms) redact(s string) string {
	if len(f.forms) == 0 || strings.IndexByte(s, '\n') < 0 && strings.IndexByte(s, '\r') < 0 && strings.IndexByte(s, '%') < 0 {
		return s
	}
	if !f.suspect(s) {
		return s
	}
	var cuts []stretch
	// Two views: with escapes decoded, and without (a % before a secret
	// of digits, "%10\n00", must not hide its first two).
	for _, decode := range []bool{true, false} {
		view := make([]byte, 0, len(s))
		from := make([]int, 0, len(s)) // where in s each byte of view starts
		to := make([]int, 0, len(s))   // and ends
		for i := 0; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\r' || c == '\n':
			case decode && c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
				view = append(view, unhex(s[i+1])<<4|unhex(s[i+2]))
				from, to = append(from, i), append(to, i+3)
				i += 2
			default:
				view = append(view, c)
				from, to = append(from, i), append(to, i+1)
			}
		}
		vs := string(view)
		for _, fm := range f.forms {
			for at := 0; ; {
				i := strings.Index(vs[at:], fm.text)
				if i < 0 {
					break
				}
				a, z := at+i, at+i+len(fm.text)
				cuts = append(cuts, stretch{from[a], to[z-1], fm.label})
				at = z
			}
		}
	}
	return replaceCuts(s, cuts)
}

// suspect reports whether s may hold a form spread by a break or escape.
func (f *spreadForms) suspect(s string) bool {
	for i := 0; i < len(s); i++ {
		k := strings.IndexAny(s[i:], "%\r\n")
		if k < 0 {
			return false
		}
		i += k
		if s[i] == '%' {
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) && f.inForm[unhex(s[i+1])<<4|unhex(s[i+2])] {
				return true
			}
			continue
		}
		j := i
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		if i > 0 && j < len(s) && f.continues(s[:i], s[j]) {
			return true
		}
		i = j - 1
	}
	return false
}

// continues reports whether before ends with a proper, nonempty prefix of
// a form whose next byte is next: a form broken by the line break between
// them.
func (f *spreadForms) continues(before string, next byte) bool {
	last := before[len(before)-1]
	for _, fm := range f.forms {
		t := fm.text
		for k := 1; k < len(t); k++ {
			j := strings.IndexByte(t[k-1:len(t)-1], last)
			if j < 0 {
				break
			}
			k += j // t[k-1] == last
			if t[k] == next && k <= len(before) && before[len(before)-k:] == t[:k] {
				return true
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
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

// A digitSecret is a secret of digits only (a PIN, an account number, a
// numeric key), which a server may hand back as a JSON number, and a
// number has many spellings: 739182046551, 7.39182046551e11,
// 0.739182046551E+12, 739182046551.0. A number is judged by its value: its
// digits written out in full (no exponent, no point) hold the secret's, so
// it spells the secret. Only a secret of 4 significant digits or more is
// judged so, as only a secret of 4 bytes or more is judged at all: 0042
// must not blank out every 42.
type digitSecret struct {
	sig    string   // the digits after the leading zeros
	core   int      // the length of sig without its trailing zeros
	label  string   // the secret's name
	probes []string // one of them is in every spelling (see digitSecrets)
}

// digitSecrets are the secrets among secrets that are digits only. A
// number that spells one holds, in its mantissa, the first (up to) four
// digits of its significant digits without trailing zeros (those can go
// into the exponent), maybe with the decimal point among them: those are
// its probes, and a text that holds none holds no number that spells it.
func digitSecrets(secrets []Secret) []digitSecret {
	var out []digitSecret
	for _, sec := range secrets {
		v := sec.Value
		if v == "" || strings.Trim(v, "0123456789") != "" {
			continue
		}
		sig := strings.TrimLeft(v, "0")
		if len(sig) < 4 {
			continue
		}
		core := strings.TrimRight(sig, "0")
		head := core[:min(4, len(core))]
		probes := []string{head}
		for p := 1; p < len(head); p++ {
			probes = append(probes, head[:p]+"."+head[p:])
		}
		out = append(out, digitSecret{sig: sig, core: len(core), label: sec.Var, probes: probes})
	}
	slices.SortStableFunc(out, func(a, b digitSecret) int { return len(b.sig) - len(a.sig) })
	return out
}

// redactNumbers replaces each number in s (a run of digits, maybe with a
// fraction and an exponent, as JSON and most languages write numbers)
// that spells one of secrets with the secret's mark.
func redactNumbers(s string, secrets []digitSecret) string {
	if len(secrets) == 0 {
		return s
	}
	probed := false
	for _, d := range secrets {
		if slices.ContainsFunc(d.probes, func(p string) bool { return strings.Contains(s, p) }) {
			probed = true
			break
		}
	}
	if !probed {
		return s
	}
	pad, least := len(secrets[0].sig), len(secrets[0].sig)
	for _, d := range secrets {
		least = min(least, d.core)
	}
	var b strings.Builder
	prev := 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		j := numberEnd(s, i)
		// A mantissa of fewer digits than a secret's (without the zeros
		// an exponent stands for) spells none: most numbers end here.
		mant := s[i:j]
		if k := strings.IndexAny(mant, "eE"); k >= 0 {
			mant = mant[:k]
		}
		if len(mant)-strings.Count(mant, ".") < least {
			i = j
			continue
		}
		digits := numberDigits(s[i:j], pad)
		for _, d := range secrets {
			if strings.Contains(digits, d.sig) {
				b.WriteString(s[prev:i])
				b.WriteString("[redacted:" + d.label + "]")
				prev = j
				break
			}
		}
		i = j
	}
	if prev == 0 {
		return s
	}
	b.WriteString(s[prev:])
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numberEnd is the end of the number that starts at s[i], a digit:
// digits, then maybe a point and digits, then maybe an exponent.
func numberEnd(s string, i int) int {
	digits := func(i int) int {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i
	}
	i = digits(i)
	if i+1 < len(s) && s[i] == '.' && isDigit(s[i+1]) {
		i = digits(i + 1)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			i = digits(j)
		}
	}
	return i
}

// numberDigits is the number num written out in full without its point:
// its mantissa's digits with the zeros its exponent stands for, at most
// pad of them on either side (more zeros cannot be part of a secret of
// pad digits that the mantissa's digits are part of, and 1e999999999
// must not be written out).
func numberDigits(num string, pad int) string {
	mant, exp := num, 0
	if k := strings.IndexAny(num, "eE"); k >= 0 {
		mant = num[:k]
		e := num[k+1:]
		neg := strings.HasPrefix(e, "-")
		e = strings.TrimLeft(e, "+-")
		for _, c := range []byte(e) {
			if exp > 1<<20 {
				break
			}
			exp = exp*10 + int(c-'0')
		}
		if neg {
			exp = -exp
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	point := len(intPart) + exp // where the point falls in digits
	left := min(max(-point, 0), pad)
	right := min(max(point-len(digits), 0), pad)
	if left == 0 && right == 0 {
		return digits
	}
	return strings.Repeat("0", left) + digits + strings.Repeat("0", right)
}

// A stretch is s[a:z] of a text that holds the secret named label.
type stretch struct {
	a, z  int
	label string
}

// replaceCuts writes s with each cut replaced by its mark; overlapping
// stretches read as one and get one mark.
func replaceCuts(s string, cuts []stretch) string {
	if len(cuts) == 0 {
		return s
	}
	slices.SortStableFunc(cuts, func(x, y stretch) int { return x.a - y.a })
	var b strings.Builder
	prev, open := 0, -1 // open: the end of the last stretch replaced
	for _, c := range cuts {
		if c.a < open {
			open = max(open, c.z)
			prev = open
			continue
		}
		b.WriteString(s[prev:c.a])
		b.WriteString("[redacted:" + c.label + "]")
		prev, open = c.z, c.z
	}
	b.WriteString(s[prev:])
	return b.String()
}
