package proxy

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/quiver-mcp/quiver/registry"
)

// A reader joins the strings of a message: a host shows a text item and
// the embedded resource after it as one text, a model reads an array of
// chunks as one text, and so on. Redacting each string alone let a
// downstream hand out a configured secret in two halves, each harmless by
// itself (red team 3). joinedRedact judges the message's string values
// (not keys) in document order, concatenated, as a reader would join
// them: where a secret occurs in that text spanning two or more strings,
// the secret's characters in each string it covers are replaced by
// [redacted:VAR], the same mark a whole secret gets.
//
// It runs on the bytes as they are sent, after the per-string redaction,
// so that document order is the order the host sees. The fast path costs
// one scan of the bytes and no allocation: a secret can span strings only
// if some string ends with a proper prefix of it, and only then are the
// strings decoded and joined.
func joinedRedact(msg []byte, secrets []registry.Secret) []byte {
	if len(secrets) == 0 {
		return msg
	}
	suspect := false
	eachValue(msg, func(start, end int, esc bool, _ []byte) bool {
		t := msg[start+1 : end-1]
		if esc {
			t = []byte(valueText(msg, start, end, esc))
		}
		if endsWithSecretPrefix(bytes.TrimRight(t, "\r\n"), secrets) {
			suspect = true
			return false
		}
		return true
	})
	if !suspect {
		return msg
	}
	type value struct {
		start, end int // the literal's bytes, quotes included
		text       string
		meta       bool
	}
	var vals []value
	eachValue(msg, func(start, end int, esc bool, key []byte) bool {
		vals = append(vals, value{start: start, end: end, text: valueText(msg, start, end, esc), meta: metaKeys[string(key)]})
		return true
	})
	longest := make([]registry.Secret, 0, len(secrets))
	for _, s := range secrets {
		if len(s.Value) >= 2 {
			longest = append(longest, s)
		}
	}
	sort.SliceStable(longest, func(i, j int) bool { return len(longest[i].Value) > len(longest[j].Value) })
	// cover[v][k] is the label of the secret covering byte k of vals[v],
	// or "" (nil for a value nothing covers).
	cover := make([][]string, len(vals))
	touched := false
	// join judges the values of which, in order, joined.
	join := func(which []int) {
		at := make([]int, len(which))
		var b strings.Builder
		for n, v := range which {
			at[n] = b.Len()
			b.WriteString(vals[v].text)
		}
		joined := b.String()
		// The value a byte of joined is in: the last starting at or before
		// it (an empty value before it starts there too).
		owner := func(pos int) int {
			return sort.Search(len(at), func(i int) bool { return at[i] > pos }) - 1
		}
		// The secret is looked for in joined, and again in joined without
		// its line breaks (one string's end, a break, the next's start:
		// "7391\n", "82046551"); view maps a byte of the second to a byte
		// of joined.
		texts, views := []string{joined}, [][]int{nil}
		if strings.ContainsAny(joined, "\r\n") {
			var nb strings.Builder
			var view []int
			for i := 0; i < len(joined); i++ {
				if c := joined[i]; c != '\r' && c != '\n' {
					nb.WriteByte(c)
					view = append(view, i)
				}
			}
			texts, views = append(texts, nb.String()), append(views, view)
		}
		for t, text := range texts {
			pos := func(i int) int {
				if views[t] == nil {
					return i
				}
				return views[t][i]
			}
			for _, s := range longest {
				for from := 0; ; {
					i := strings.Index(text[from:], s.Value)
					if i < 0 {
						break
					}
					a, z := from+i, from+i+len(s.Value)
					from = a + 1
					if owner(pos(a)) == owner(pos(z-1)) {
						continue // within one string: redacted as a string
					}
					for k := a; k < z; k++ {
						n := owner(pos(k))
						v := which[n]
						if cover[v] == nil {
							cover[v] = make([]string, len(vals[v].text))
						}
						if j := pos(k) - at[n]; cover[v][j] == "" {
							cover[v][j] = s.Var
						}
					}
					touched = true
				}
			}
		}
	}
	all := make([]int, 0, len(vals))
	var prose []int
	for v := range vals {
		all = append(all, v)
		if !vals[v].meta {
			prose = append(prose, v)
		}
	}
	join(all)
	if len(prose) < len(all) {
		join(prose)
	}
	if !touched {
		return msg
	}
	out := make([]byte, 0, len(msg)+64)
	prev := 0
	for n, v := range vals {
		cov := cover[n]
		if cov == nil {
			continue
		}
		var nb strings.Builder
		for k := 0; k < len(v.text); {
			if cov[k] == "" {
				nb.WriteByte(v.text[k])
				k++
				continue
			}
			label := cov[k]
			for k < len(v.text) && cov[k] == label {
				k++
			}
			nb.WriteString("[redacted:" + label + "]")
		}
		enc, err := json.Marshal(nb.String())
		if err != nil {
			return msg
		}
		out = append(out, msg[prev:v.start]...)
		out = append(out, enc...)
		prev = v.end
	}
	return append(out, msg[prev:]...)
}

// metaKeys name the members whose values a host reads as the frame of a
// text, not as part of it (an item's type, a resource's URI and MIME
// type), or does not show as text at all (an image's or an audio clip's
// data, a resource's blob): a secret is also judged in the join that
// leaves them out, so that a text item's end and the text after it read
// as one, as the host shows them, whether an embedded resource or an
// image stands between (issue 22: text, image, text carried a secret in
// two halves).
var metaKeys = map[string]bool{"type": true, "uri": true, "mimeType": true, "jsonrpc": true, "method": true, "role": true,
	"data": true, "blob": true}

// endsWithSecretPrefix reports whether t ends with a nonempty proper
// prefix of a secret: the only way a secret can start in t and go on in
// the strings after it.
func endsWithSecretPrefix(t []byte, secrets []registry.Secret) bool {
	if len(t) == 0 {
		return false
	}
	last := t[len(t)-1]
	for _, s := range secrets {
		v := s.Value
		// k is the prefix's length; its last byte must be t's last byte.
		for k := strings.IndexByte(v, last) + 1; k > 0 && k < len(v); {
			if k <= len(t) && string(t[len(t)-k:]) == v[:k] {
				return true
			}
			next := strings.IndexByte(v[k:], last)
			if next < 0 {
				break
			}
			k += next + 1
		}
	}
	return false
}

// valueText is the text of the string literal msg[start:end].
func valueText(msg []byte, start, end int, esc bool) string {
	if !esc {
		return string(msg[start+1 : end-1])
	}
	// Go's escapes are JSON's but for \/ and surrogate pairs, where
	// Unquote fails and encoding/json decodes it.
	if s, err := strconv.Unquote(string(msg[start:end])); err == nil {
		return s
	}
	var s string
	if json.Unmarshal(msg[start:end], &s) != nil {
		return ""
	}
	return s
}

// eachValue calls f with the bytes (quotes included) of each string value
// of the JSON text msg in document order, leaving out object keys, until f
// returns false. esc reports a backslash in the literal; key is the raw
// key of an object member's value, nil for an array's element.
func eachValue(msg []byte, f func(start, end int, esc bool, key []byte) bool) {
	var key []byte
	for i := 0; i < len(msg); i++ {
		q := bytes.IndexByte(msg[i:], '"')
		if q < 0 {
			return
		}
		start := i + q
		// The closing quote: the first not escaped (an even run of
		// backslashes before it).
		for i = start + 1; ; i++ {
			q := bytes.IndexByte(msg[i:], '"')
			if q < 0 {
				return
			}
			i += q
			n := 0
			for n < i-start-1 && msg[i-1-n] == '\\' {
				n++
			}
			if n%2 == 0 {
				break
			}
		}
		end := i + 1
		esc := bytes.IndexByte(msg[start+1:i], '\\') >= 0
		j := end
		for j < len(msg) && (msg[j] == ' ' || msg[j] == '\n' || msg[j] == '\t' || msg[j] == '\r') {
			j++
		}
		if j < len(msg) && msg[j] == ':' {
			key = msg[start+1 : end-1]
			continue
		}
		p := start - 1
		for p >= 0 && (msg[p] == ' ' || msg[p] == '\n' || msg[p] == '\t' || msg[p] == '\r') {
			p--
		}
		k := key
		if p < 0 || msg[p] != ':' {
			k = nil
		}
		if !f(start, end, esc, k) {
			return
		}
	}
}
