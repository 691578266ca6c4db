package registry

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// TestRedactNumbersByValue: a digits-only secret handed back as a number
// is hidden whatever its spelling, as a string holding it is (issue 22).
func TestRedactNumbersByValue(t *testing.T) {
	t.Parallel()
	r := NewRedactor([]Secret{{Var: "PIN", Value: "739182046551"}, {Var: "ROUND", Value: "4200000"}})
	for _, in := range []string{
		"739182046551", "7.39182046551e11", "7.39182046551E+11", "0.739182046551e12",
		"739182046551.0", "7391820465510e-1", "73918204655100000e-5", "-739182046551",
		"4200000", "4.2e6", "42e5", "0.42E7",
	} {
		got := r.Redact(in)
		if !strings.Contains(got, "[redacted:") || strings.ContainsAny(strings.TrimPrefix(got, "-"), "0123456789") {
			t.Errorf("Redact(%s) = %q, want the number redacted", in, got)
		}
	}
	for _, in := range []string{"739182046552", "7.3918204655e11", "42", "4.2e5", "1e999999999999", "3.14159"} {
		if got := r.Redact(in); got != in {
			t.Errorf("Redact(%s) = %q, want it unchanged", in, got)
		}
	}
}

// TestRedactEncodedSecrets: a secret in hex, percent-encoded (all of it,
// some of it, either case) or broken by a line break inside one text is
// hidden, breaks and escapes included (issue 22).
func TestRedactEncodedSecrets(t *testing.T) {
	t.Parallel()
	const secret = "Zq8-xV2kLw9pT"
	r := NewRedactor([]Secret{{Var: "API_KEY", Value: secret}})
	for _, tc := range []struct{ name, in string }{
		{"hex_lower", "dump: " + hex.EncodeToString([]byte(secret)) + " end"},
		{"hex_upper", "dump: " + strings.ToUpper(hex.EncodeToString([]byte(secret))) + " end"},
		{"percent_all_lower", "q=" + percentAll(secret, false) + "&x=1"},
		{"percent_all_upper", "q=" + percentAll(secret, true) + "&x=1"},
		{"percent_some", "q=%5Aq8-x%56%32kLw9p%54&x=1"},
		{"newline", "key: Zq8-xV2\nkLw9pT\nnext line"},
		{"crlf", "key: Zq8-x\r\nV2kLw9pT"},
		{"two_breaks", "Zq8\n-xV2k\nLw9pT"},
		{"hex_wrapped", hex.EncodeToString([]byte(secret))[:10] + "\n" + hex.EncodeToString([]byte(secret))[10:]},
		{"base64_wrapped", wrap(base64.StdEncoding.EncodeToString([]byte("prefix:"+secret+":suffix")), 8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Redact(tc.in)
			if !strings.Contains(got, "[redacted:API_KEY]") || strings.Contains(got, "kLw9") {
				t.Errorf("Redact(%q) = %q", tc.in, got)
			}
		})
	}
	for _, in := range []string{"line one\nline two", "100%25 done", "Zq8-\nnothing", "Zq8\n-xV2k other"} {
		if got := r.Redact(in); got != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, got)
		}
	}
}

func percentAll(s string, upper bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		f := "%%%02x"
		if upper {
			f = "%%%02X"
		}
		fmt.Fprintf(&b, f, s[i])
	}
	return b.String()
}

func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\r\n")
		s = s[n:]
	}
	return b.String() + s
}

// variants are the spellings of secret a server may write, each of which
// the Redactor must leave nothing of: at is where a break goes.
func variants(secret string, at int) []string {
	at = 1 + at%(len(secret)-1)
	out := []string{
		secret,
		hex.EncodeToString([]byte(secret)),
		strings.ToUpper(hex.EncodeToString([]byte(secret))),
		percentAll(secret, false),
		percentAll(secret, true),
		secret[:at] + "\n" + secret[at:],
		secret[:at] + "\r\n" + secret[at:],
	}
	if !strings.Contains(secret, "%") {
		// Part encoded, part not: the view decodes every escape, so a
		// secret's own % before hex digits (documented) is not judged so.
		out = append(out, percentAll(secret[:at], true)+secret[at:])
	}
	if strings.Trim(secret, "0123456789") == "" && len(strings.TrimLeft(secret, "0")) >= 4 {
		d := strings.TrimLeft(secret, "0")
		out = append(out, d[:1]+"."+d[1:]+fmt.Sprintf("e%d", len(d)-1), d+".0", "0."+d+fmt.Sprintf("E+%d", len(d)))
	}
	return out
}

// skeletonVariants are the spellings of an ASCII secret whose skeleton is
// long enough to be judged by it (redactskel.go) that keep its skeleton:
// invisible characters, white space, separated hex, character
// references, text escapes, doubled percent-encoding, quoted-printable,
// other case and full width.
func skeletonVariants(secret string, at int) []string {
	for i := 0; i < len(secret); i++ {
		if secret[i] < 0x21 || secret[i] > 0x7e {
			return nil
		}
	}
	sk := skeletonRunes(plainUnits(secret))
	digits := !slices.ContainsFunc(sk, func(r rune) bool { return r < '0' || r > '9' })
	if len(sk) < minSkeleton || digits && len(sk) < minDigitSkeleton {
		return nil
	}
	at = 1 + at%(len(secret)-1)
	each := func(f string, sep string) string {
		parts := make([]string, len(secret))
		for i := 0; i < len(secret); i++ {
			parts[i] = fmt.Sprintf(f, secret[i])
		}
		return strings.Join(parts, sep)
	}
	var full strings.Builder
	for i := 0; i < len(secret); i++ {
		full.WriteRune(rune(secret[i]) + 0xFEE0)
	}
	return []string{
		secret[:at] + "\u200b" + secret[at:],
		secret[:at] + "\u00ad" + secret[at:],
		secret[:at] + " " + secret[at:],
		secret[:at] + "\t" + secret[at:],
		each("%02x", " "),
		each("%02X", ":"),
		each("&#%d;", ""),
		each("&#x%x;", ""),
		each("%%25%02X", ""),
		each(`\x%02x`, ""),
		each(`\u%04x`, ""),
		each(`\%03o`, ""),
		each("=%02X", ""),
		strings.ToUpper(secret),
		strings.ToLower(secret),
		full.String(),
	}
}

// FuzzRedactVariants: whatever surrounds it, no spelling of a secret
// (variants, skeletonVariants) survives redaction.
func FuzzRedactVariants(f *testing.F) {
	f.Add("739182046551", "id: ", " ok", 3)
	f.Add("Zq8-xV2kLw9pT", "line\n", "\nmore", 5)
	f.Add("a%41b-secret", "%", "%4", 1)
	f.Add("00004200", "x=", "e5", 2)
	f.Add("Zq7Kp2Lm9Xw4Vb8N", "\\", "&", 7)
	f.Add("73918204", "%", "=", 4)
	f.Add(`p@ss<w0rd&x>"q\z'9`, "&#", ";", 3)
	f.Fuzz(func(t *testing.T, secret, before, after string, at int) {
		if len(secret) < 4 || strings.ContainsAny(secret, "\r\n") || at < 0 {
			return
		}
		r := NewRedactor([]Secret{{Var: "S", Value: secret}})
		for _, v := range append(variants(secret, at), skeletonVariants(secret, at)...) {
			got := r.Redact(before + v + after)
			if strings.Contains(got, v) && !strings.Contains(before+after, v) {
				t.Fatalf("secret %q: Redact(%q) = %q still holds %q", secret, before+v+after, got, v)
			}
		}
	})
}

// TestRedactingHandlerJudgesNumbers: a log attribute that is a number
// spelling a digits-only secret is logged as its mark.
func TestRedactingHandlerJudgesNumbers(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	r := NewRedactor([]Secret{{Var: "PIN", Value: "739182046551"}})
	log := slog.New(RedactingHandler(slog.NewTextHandler(&b, nil), r.Redact))
	log.Info("progress", "token", 739182046551, "f", 7.39182046551e11, "u", uint64(739182046551), "other", 42)
	if out := b.String(); strings.Contains(out, "46551") || !strings.Contains(out, "other=42") {
		t.Fatalf("logged %s", out)
	}
}
