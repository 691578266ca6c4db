package registry

import (
	"encoding/hex"
	"slices"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// No list of fixed forms holds every way a text can spell a secret so
// that a reader still sees it (red team rt1, A9–A18c): with an invisible
// character or a space inside it, in another case or width, as hex with
// separators (as xxd prints bytes), as HTML character references, as text
// backslash escapes (\x5a, \u005a, \132), percent-encoded twice, with its
// digits grouped (739,182,046,551). What all of these keep is the
// secret's skeleton: the characters left after decoding those escapes,
// normalizing (each character's compatibility decomposition, NFKD: full
// width to ASCII), dropping default-ignorable
// characters, white space and common separators, and folding case. A text
// whose skeleton holds a secret's skeleton (or its hex's) spells the
// secret, and the stretch of the text it came from is redacted whole,
// escapes and separators included (docs/ARCHITECTURE.md, "Secrets").
//
// Only a secret whose skeleton is minSkeleton characters or more is
// judged so: a shorter one would match ordinary words once spaces and
// case no longer count. A skeleton of digits alone needs minDigitSkeleton:
// ten symbols spell far less than thirty-six, and an 8-digit secret
// matched a table's column of small numbers (red team rt2, R10). The
// exact forms (formGroups) still catch either.
const (
	minSkeleton      = 8
	minDigitSkeleton = 12
)

// maxDecodeRounds bounds how many times escapes are decoded in turn
// (%2541 is %41 is A): a text cannot make the redactor loop.
const maxDecodeRounds = 3

type skelSecret struct {
	skel  []rune
	label string
}

// skeletons are the skeletons of a set of secrets, the longest first.
type skeletons struct {
	secrets []skelSecret
	// first marks the ASCII bytes a secret's skeleton starts with (both
	// cases): a plain ASCII text with none of them holds no skeleton.
	first [128]bool
	// byFirst lists, for a lower-case ASCII byte, the secrets whose
	// skeleton starts with it; wide, those that start outside ASCII.
	byFirst [128][]int
	wide    bool
}

func newSkeletons(secrets []Secret) skeletons {
	var k skeletons
	add := func(text, label string) {
		sk := skeletonRunes(plainUnits(text))
		short := len(sk) < minSkeleton || len(sk) < minDigitSkeleton && !slices.ContainsFunc(sk, func(r rune) bool { return r < '0' || r > '9' })
		if short || slices.ContainsFunc(k.secrets, func(s skelSecret) bool { return slices.Equal(s.skel, sk) }) {
			return
		}
		k.secrets = append(k.secrets, skelSecret{skel: sk, label: label})
		if r := sk[0]; r < 128 {
			k.first[r] = true
			k.first[unicode.ToUpper(r)] = true
		} else {
			// A skeleton that starts outside ASCII: every ASCII text
			// goes the full way (rare: such secrets are few).
			for i := range k.first {
				k.first[i] = true
			}
		}
	}
	for _, sec := range secrets {
		add(sec.Value, sec.Var)
		add(hex.EncodeToString([]byte(sec.Value)), sec.Var)
	}
	slices.SortStableFunc(k.secrets, func(a, b skelSecret) int { return len(b.skel) - len(a.skel) })
	for i, sec := range k.secrets {
		if r := sec.skel[0]; r < 128 {
			k.byFirst[r] = append(k.byFirst[r], i)
		} else {
			k.wide = true
		}
	}
	return k
}

// A unit is one character of a view of a text and the stretch [a, z) of
// the text it stands for.
type unit struct {
	r    rune
	a, z int
}

func plainUnits(s string) []unit {
	out := make([]unit, 0, len(s))
	for i, r := range s {
		out = append(out, unit{r, i, i + utf8.RuneLen(r)})
	}
	return out
}

func skeletonRunes(u []unit) []rune {
	var out []rune
	for _, x := range skeletonUnits(u) {
		out = append(out, x.r)
	}
	return out
}

// skeletonUnits normalizes u (each character's NFKD decomposition), drops what a reader does not see or
// reads past (default-ignorable characters, white space, separators), and
// folds case.
func skeletonUnits(u []unit) []unit {
	out := make([]unit, 0, len(u))
	emit := func(r rune, x unit) {
		if skipInSkeleton(r) {
			return
		}
		out = append(out, unit{unicode.ToLower(r), x.a, x.z})
	}
	for _, x := range u {
		if x.r < utf8.RuneSelf || ignorable(x.r) {
			emit(x.r, x)
			continue
		}
		var buf [utf8.UTFMax]byte
		d := norm.NFKD.Properties(buf[:utf8.EncodeRune(buf[:], x.r)]).Decomposition()
		if d == nil {
			emit(x.r, x)
			continue
		}
		for _, r := range string(d) {
			emit(r, x)
		}
	}
	return out
}

func skipInSkeleton(r rune) bool {
	switch r {
	case '-', ':', '.', ',', '"', '\'', '`':
		return true
	}
	return unicode.IsSpace(r) || ignorable(r)
}

// ignorable reports whether r is a default-ignorable code point: one a
// text shows as nothing (U+200B ZERO WIDTH SPACE, U+00AD SOFT HYPHEN,
// joiners, variation selectors, bidi controls).
func ignorable(r rune) bool {
	return r >= 0x80 && (unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r))
}

// redact replaces each stretch of s whose skeleton, in any view (as
// written, and after each round of decoding escapes), holds a secret's
// skeleton with the secret's mark. A plain ASCII text with no escape in it
// and no secret's first character costs one byte scan; one with such a
// character but no match is judged without allocating.
func (k *skeletons) redact(s string) string {
	if len(k.secrets) == 0 {
		return s
	}
	plain, esc, starts := true, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			plain = false
		case k.first[c]:
			starts = true
		}
		if !esc && (c == '&' || c == '\\' || c == '%' || c == '=') && escapeAt(s, i) {
			esc = true
		}
	}
	if plain && !esc && (!starts || !k.asciiHit(s)) {
		return s
	}
	var cuts []stretch
	u := plainUnits(s)
	for round := 0; ; round++ {
		view := skeletonUnits(u)
		for _, sec := range k.secrets {
			for at := 0; at+len(sec.skel) <= len(view); at++ {
				if view[at].r != sec.skel[0] || !matchesAt(view, at, sec.skel) {
					continue
				}
				end := at + len(sec.skel)
				cuts = append(cuts, stretch{view[at].a, view[end-1].z, sec.label})
				at = end - 1
			}
		}
		if round == maxDecodeRounds {
			break
		}
		var changed bool
		if u, changed = decodeUnits(u); !changed {
			break
		}
	}
	return replaceCuts(s, cuts)
}

func matchesAt(view []unit, at int, skel []rune) bool {
	for j, r := range skel {
		if view[at+j].r != r {
			return false
		}
	}
	return true
}

// asciiHit reports whether the skeleton of s, plain ASCII with no escape,
// holds a secret's skeleton, without building it.
func (k *skeletons) asciiHit(s string) bool {
	if k.wide {
		return true // judged the full way
	}
	for i := 0; i < len(s); i++ {
		for _, x := range k.byFirst[lowerASCII(s[i])] {
			skel := k.secrets[x].skel
			j, n := i, 0
			for j < len(s) && n < len(skel) {
				c := s[j]
				j++
				if skipInSkeleton(rune(c)) {
					continue
				}
				if skel[n] >= utf8.RuneSelf || lowerASCII(c) != byte(skel[n]) {
					break
				}
				n++
			}
			if n == len(skel) {
				return true
			}
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// escapeAt reports whether an escape decodeUnits decodes starts at s[i].
func escapeAt(s string, i int) bool {
	var buf [12]unit
	u := buf[:0]
	for j, r := range s[i:min(len(s), i+len(buf))] {
		u = append(u, unit{r, i + j, i + j + 1})
	}
	_, n, _ := decodeOne(u, 0)
	return n > 0
}

// decodeUnits decodes, once, the escapes in u that spell characters in
// text: HTML character references (&#90; &#x5a; &lt; &amp; ...), text
// backslash escapes (\x5a, \u005a, \u{5a}, \U0000005a, octal \132, \\,
// \", \'), percent escapes (%5A) and quoted-printable ones (=5A). Escapes
// of bytes are put together into UTF-8 characters. Each decoded character
// stands for the whole escape it came from.
func decodeUnits(u []unit) ([]unit, bool) {
	out := make([]unit, 0, len(u))
	var pend []byte
	var pendA, pendZ int
	flush := func() {
		for len(pend) > 0 {
			r, n := utf8.DecodeRune(pend)
			out = append(out, unit{r, pendA, pendZ})
			pend = pend[n:]
		}
		pend = pend[:0]
	}
	changed := false
	for i := 0; i < len(u); {
		d, n, isByte := decodeOne(u, i)
		if n == 0 {
			flush()
			out = append(out, u[i])
			i++
			continue
		}
		changed = true
		if isByte {
			if len(pend) == 0 {
				pendA = u[i].a
			}
			pend = append(pend, byte(d))
			pendZ = u[i+n-1].z
			if d < utf8.RuneSelf || utf8.FullRune(pend) {
				flush()
			}
		} else {
			flush()
			out = append(out, unit{d, u[i].a, u[i+n-1].z})
		}
		i += n
	}
	flush()
	return out, changed
}

var htmlNamed = map[string]rune{"lt": '<', "gt": '>', "amp": '&', "quot": '"', "apos": '\'', "nbsp": ' '}

// decodeOne decodes the escape at u[i], if one starts there: the
// character (or byte, isByte) it spells and how many units it takes.
func decodeOne(u []unit, i int) (r rune, n int, isByte bool) {
	at := func(j int) rune {
		if i+j < len(u) {
			return u[i+j].r
		}
		return -1
	}
	hexRun := func(from, most int) (rune, int) {
		var v rune
		k := 0
		for k < most {
			c := at(from + k)
			d := hexVal(c)
			if d < 0 {
				break
			}
			v = v<<4 | rune(d)
			k++
		}
		return v, k
	}
	switch u[i].r {
	case '%':
		if v, k := hexRun(1, 2); k == 2 {
			return v, 3, true
		}
	case '=':
		if isUpperHex(at(1)) && isUpperHex(at(2)) {
			v, _ := hexRun(1, 2)
			return v, 3, true
		}
	case '&':
		if at(1) == '#' {
			from := 2
			var v rune
			k := 0
			if at(2) == 'x' || at(2) == 'X' {
				from = 3
				v, k = hexRun(3, 6)
			} else {
				for k < 7 && at(2+k) >= '0' && at(2+k) <= '9' {
					v = v*10 + at(2+k) - '0'
					k++
				}
			}
			if k == 0 || v > unicode.MaxRune {
				return 0, 0, false
			}
			n = from + k
			if at(n) == ';' {
				n++
			}
			return v, n, false
		}
		for name, v := range htmlNamed {
			if matchText(u, i+1, name+";") {
				return v, len(name) + 2, false
			}
		}
	case '\\':
		switch c := at(1); c {
		case 'x':
			if v, k := hexRun(2, 2); k == 2 {
				return v, 4, true
			}
		case 'u':
			if at(2) == '{' {
				if v, k := hexRun(3, 6); k > 0 && at(3+k) == '}' && v <= unicode.MaxRune {
					return v, 4 + k, false
				}
			} else if v, k := hexRun(2, 4); k == 4 {
				return v, 6, false
			}
		case 'U':
			if v, k := hexRun(2, 8); k == 8 && v <= unicode.MaxRune {
				return v, 10, false
			}
		case '\\':
			// \\x5a: decode the escape after it, the form a text quoted
			// twice shows, not the backslash before it.
			if at(2) == '\\' {
				return c, 2, false
			}
			if _, k, _ := decodeOne(u, i+1); k > 0 {
				return 0, 0, false
			}
			return c, 2, false
		case '"', '\'', '/', '`':
			return c, 2, false
		case 'n', 't', 'r':
			return ' ', 2, false
		default:
			if c >= '0' && c <= '7' {
				var v rune
				k := 0
				for k < 3 && at(1+k) >= '0' && at(1+k) <= '7' {
					v = v*8 + at(1+k) - '0'
					k++
				}
				if v < 256 {
					return v, 1 + k, true
				}
			}
		}
	}
	return 0, 0, false
}

func matchText(u []unit, i int, t string) bool {
	for _, c := range t {
		if i >= len(u) || u[i].r != c {
			return false
		}
		i++
	}
	return true
}

func hexVal(c rune) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func isUpperHex(c rune) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }
