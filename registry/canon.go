package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// canonJSON re-encodes one JSON value in a single form: object keys
// sorted, no insignificant space, no HTML escaping, each number as its
// exact decimal value in one spelling (1, 1.0 and 10e-1 are all 1;
// 123456789012345679 stays itself). A key an object gives twice is kept
// twice, in order, and dup says so: readers disagree on which one
// counts, so the digest must see both, and what is forwarded is exactly
// what was digested.
func canonJSON(raw []byte) (out []byte, dup bool, err error) {
	return reencode(raw, true)
}

// reencode is canonJSON, with object keys sorted or left in the order
// they came.
func reencode(raw []byte, sorted bool) (out []byte, dup bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b bytes.Buffer
	if err := canonValue(dec, &b, &dup, sorted); err != nil {
		return nil, false, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false, errors.New("canonical JSON: more than one value")
	}
	return b.Bytes(), dup, nil
}

func canonValue(dec *json.Decoder, b *bytes.Buffer, dup *bool, sorted bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			type member struct {
				key string
				val []byte
			}
			var ms []member
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				if seen[key] {
					*dup = true
				}
				seen[key] = true
				var vb bytes.Buffer
				if err := canonValue(dec, &vb, dup, sorted); err != nil {
					return err
				}
				ms = append(ms, member{key, vb.Bytes()})
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			if sorted {
				slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
			}
			b.WriteByte('{')
			for i, m := range ms {
				if i > 0 {
					b.WriteByte(',')
				}
				writeString(b, m.key)
				b.WriteByte(':')
				b.Write(m.val)
			}
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := canonValue(dec, b, dup, sorted); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			b.WriteByte(']')
		default:
			return fmt.Errorf("canonical JSON: unexpected %v", v)
		}
	case string:
		writeString(b, v)
	case json.Number:
		b.WriteString(canonNumber(string(v)))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// canonNumber writes a JSON number's exact value in one spelling: plain
// decimal while that stays short (as strconv's 'f' form would, without
// float64's rounding), else d.ddde±N. Never through float64: two
// numbers that differ in any digit stay different.
func canonNumber(s string) string {
	orig := s
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 1e6 || e < -1e6 {
			return orig // an exponent no schema means; kept as written
		}
		mant, exp = s[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	// The value is digits × 10^exp.
	var out string
	switch n := len(digits); {
	case exp >= 0 && n+exp <= 21:
		out = digits + strings.Repeat("0", exp)
	case exp < 0 && -exp < n:
		out = digits[:n+exp] + "." + digits[n+exp:]
	case exp < 0 && -exp-n <= 20:
		out = "0." + strings.Repeat("0", -exp-n) + digits
	default:
		out = digits[:1]
		if n > 1 {
			out += "." + digits[1:]
		}
		out += "e" + strconv.Itoa(exp+n-1)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// CanonicalSchema is a tool's schema as quiver keeps and forwards it:
// the very tokens its definition's digest is taken over (canonJSON),
// re-encoded compactly with each number in its one spelling and every
// key, a key given twice included, in the server's order. It differs
// from the digested bytes only in the order of distinct keys, which
// changes what no reader takes a schema to say, so what a person pinned
// is what the model is handed, in tools/list, search_tools and the page
// alike; and a property order the server chose for the model stays. A
// schema that is not JSON is kept as it came (its digest covers those
// bytes).
func CanonicalSchema(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	out, _, err := reencode(raw, false)
	if err != nil {
		return raw
	}
	return out
}

// hasDuplicateKeys reports whether an object anywhere in raw gives a
// key twice.
func hasDuplicateKeys(raw json.RawMessage) bool {
	_, dup, err := canonJSON(raw)
	return err == nil && dup
}
