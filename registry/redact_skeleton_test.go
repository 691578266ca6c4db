package registry

import (
	"strings"
	"testing"
)

// TestRedactSkeletonForms: a configured secret written in a form no fixed
// list holds (red team rt1, A9–A18b) is hidden: with invisible characters
// or white space inside, in other case or width, as separated hex, HTML
// character references, text escapes, doubled percent-encoding, grouped
// digits, HTML-escaped or shell-quoted, and in the whole encodings a
// server applies (base32, UTF-16LE, a hex secret's bytes, a number's hex).
func TestRedactSkeletonForms(t *testing.T) {
	t.Parallel()
	r := NewRedactor([]Secret{
		{Var: "RT_SECRET", Value: "Zq7Kp2Lm9Xw4Vb8N"},
		{Var: "RT_NUM", Value: "739182046551"},
		{Var: "RT_HEX", Value: "9f86d081884c7d659a2feaa0c55ad015"},
		{Var: "RT_MARK", Value: `p@ss<w0rd&x>"q\z'9`},
	})
	for _, tc := range []struct{ name, in, label string }{
		{"zero_width_space", "Zq7Kp2Lm\u200b9Xw4Vb8N", "RT_SECRET"},
		{"soft_hyphen", "Zq7Kp2Lm\u00ad9Xw4Vb8N", "RT_SECRET"},
		{"word_joiner_each", strings.Join(strings.Split("Zq7Kp2Lm9Xw4Vb8N", ""), "\u2060"), "RT_SECRET"},
		{"space_split", "Zq7Kp2Lm 9Xw4Vb8N", "RT_SECRET"},
		{"tab_split", "Zq7Kp2Lm\t9Xw4Vb8N", "RT_SECRET"},
		{"hex_spaced", "5a 71 37 4b 70 32 4c 6d 39 58 77 34 56 62 38 4e", "RT_SECRET"},
		{"hex_colons", "5a:71:37:4b:70:32:4c:6d:39:58:77:34:56:62:38:4e", "RT_SECRET"},
		{"hex_xxd", "00000000: 5a71 374b 7032 4c6d 3958 7734 5662 384e  Zq7K", "RT_SECRET"},
		{"html_decimal", "&#90;&#113;&#55;&#75;&#112;&#50;&#76;&#109;&#57;&#88;&#119;&#52;&#86;&#98;&#56;&#78;", "RT_SECRET"},
		{"html_hex", "&#x5a;&#x71;&#x37;&#x4b;&#x70;&#x32;&#x4c;&#x6d;&#x39;&#x58;&#x77;&#x34;&#x56;&#x62;&#x38;&#x4e;", "RT_SECRET"},
		{"percent_twice", "%255A%2571%2537%254B%2570%2532%254C%256D%2539%2558%2577%2534%2556%2562%2538%254E", "RT_SECRET"},
		{"backslash_x", `\x5a\x71\x37\x4b\x70\x32\x4c\x6d\x39\x58\x77\x34\x56\x62\x38\x4e`, "RT_SECRET"},
		{"backslash_u", `\u005a\u0071\u0037\u004b\u0070\u0032\u004c\u006d\u0039\u0058\u0077\u0034\u0056\u0062\u0038\u004e`, "RT_SECRET"},
		{"octal", `\132\161\067\113\160\062\114\155\071\130\167\064\126\142\070\116`, "RT_SECRET"},
		{"quoted_printable", "=5A=71=37=4B=70=32=4C=6D=39=58=77=34=56=62=38=4E", "RT_SECRET"},
		{"base32", "LJYTOS3QGJGG2OKYO42FMYRYJY======", "RT_SECRET"},
		{"utf16le_base64", "WgBxADcASwBwADIATABtADkAWAB3ADQAVgBiADgATgA", "RT_SECRET"},
		{"utf16le_hex", "5a00710037004b00700032004c006d0039005800770034005600620038004e00", "RT_SECRET"},
		{"upper", "ZQ7KP2LM9XW4VB8N", "RT_SECRET"},
		{"lower", "zq7kp2lm9xw4vb8n", "RT_SECRET"},
		{"full_width", "Ｚｑ７Ｋｐ２Ｌｍ９Ｘｗ４Ｖｂ８Ｎ", "RT_SECRET"},
		{"hex_secret_upper", "9F86D081884C7D659A2FEAA0C55AD015", "RT_HEX"},
		{"hex_secret_uuid", "9f86d081-884c-7d65-9a2f-eaa0c55ad015", "RT_HEX"},
		{"hex_secret_base64", "n4bQgYhMfWWaL+qgxVrQFQ==", "RT_HEX"},
		{"digits_commas", "739,182,046,551", "RT_NUM"},
		{"digits_spaces", "739 182 046 551", "RT_NUM"},
		{"digits_dashes", "7-3-9-1-8-2-0-4-6-5-5-1", "RT_NUM"},
		{"digits_hex", "0xac1aaeed57", "RT_NUM"},
		{"html_escaped", `p@ss&lt;w0rd&amp;x&gt;&quot;q\z'9`, "RT_MARK"},
		{"xml_attribute", `<cred pw="p@ss&lt;w0rd&amp;x&gt;&quot;q\z&apos;9"/>`, "RT_MARK"},
		{"shell_quoted", `PASS='p@ss<w0rd&x>"q\z'\''9'`, "RT_MARK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := "value: " + tc.in + " (end)"
			got := r.Redact(in)
			if !strings.Contains(got, "[redacted:"+tc.label+"]") || strings.Contains(got, tc.in) {
				t.Errorf("Redact(%q) = %q, want the %s spelling redacted", in, got, tc.label)
			}
			if !strings.HasPrefix(got, "value: ") || !strings.HasSuffix(got, " (end)") {
				t.Errorf("Redact(%q) = %q, want the text around the secret kept", in, got)
			}
		})
	}
	// Ordinary text, and texts near a secret's skeleton, stay as they are.
	for _, in := range []string{
		"the quick brown fox", "Zq7Kp2Lm", "Zq7Kp2Lm 9Xw4Vb8", "739 182 046", "a=10&b=%20 \\n 12:30:45",
		"&lt;b&gt;bold&lt;/b&gt;", "ticket 739-182-04", "ÄÖÜ ｆｕｌｌ",
	} {
		if got := r.Redact(in); got != in {
			t.Errorf("Redact(%q) = %q, want it unchanged", in, got)
		}
	}
}

// TestRedactSkeletonShortSecrets: a secret whose skeleton is under 8
// characters is judged by its exact forms only: "pass word" must not lose
// its letters to a secret "password1"'s cousin "passwd".
func TestRedactSkeletonShortSecrets(t *testing.T) {
	t.Parallel()
	r := NewRedactor([]Secret{{Var: "S", Value: "passwd"}, {Var: "N", Value: "1234567"}, {Var: "D", Value: "12345678"}})
	// An 8-digit secret is judged exactly, never by skeleton: a table of
	// small numbers spells it once separators do not count (red team
	// rt2, R10).
	for _, in := range []string{"pass wd", "PASSWD", "1,234,567", "1 2\n3 4\n5 6\n7 8", "1,2,3,4,5,6,7,8,9,10"} {
		if got := r.Redact(in); got != in {
			t.Errorf("Redact(%q) = %q, want it unchanged (secret too short for skeletons)", in, got)
		}
	}
	if got := r.Redact("id 12345678"); got != "id [redacted:D]" {
		t.Errorf("the exact form still counts: %q", got)
	}
	long := NewRedactor([]Secret{{Var: "L", Value: "739182046551"}})
	if got := long.Redact("739 182 046 551"); strings.Contains(got, "739") {
		t.Errorf("a 12-digit secret is judged by skeleton: %q", got)
	}
}

// TestURLUserTokenIsSecret: a token given as a url's user name, with no
// password, is a secret (red team rt1, 63); a plain user name is not.
func TestURLUserTokenIsSecret(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"https://Fury1Tok3nValue77@pypi.fury.io/acme/", "http://ProxyTokenOnly66@proxy.example:3128", "postgres://${DBU}@db/x"} {
		if !LooksSecret("", v) {
			t.Errorf("LooksSecret(%q) = false", v)
		}
		if _, pw, _, ok := URLPassword(v); !ok || strings.ContainsAny(pw, "@/") {
			t.Errorf("URLPassword(%q) = %q, %v", v, pw, ok)
		}
	}
	for _, v := range []string{"postgres://postgres@localhost/db", "ssh://git@github.com/x", "https://github.com/@scope/pkg"} {
		if LooksSecret("", v) {
			t.Errorf("LooksSecret(%q) = true, want a user name taken for a name", v)
		}
	}
}
