package gate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
)

// A shadow is a value that a later duplicate key replaced. encoding/json
// (and JavaScript's JSON.parse) keep the last duplicate, and quiver forwards
// the re-encoded object, so the downstream server only ever sees the last
// one; the fence still checks every occurrence so that no parser's choice
// can carry a path past it.
type shadow struct {
	top   bool // the key sat in the top-level object
	key   string
	value any
}

// maxArgDepth bounds nesting so that a hostile argument cannot make the
// parser or the fence recurse without end.
const maxArgDepth = 64

var errTooDeep = errors.New("arguments nest deeper than 64 levels")

// parseArgs decodes a JSON object with numbers kept exact (json.Number) and
// records values shadowed by duplicate keys.
func parseArgs(raw []byte) (map[string]any, []shadow, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p := argParser{dec: dec}
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("not an object")
	}
	obj, err := p.object(0)
	if err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("unexpected data after the object")
	}
	return obj, p.shadows, nil
}

type argParser struct {
	dec     *json.Decoder
	shadows []shadow
}

func (p *argParser) value(tok json.Token, depth int) (any, error) {
	if depth > maxArgDepth {
		return nil, errTooDeep
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return p.object(depth)
		case '[':
			return p.array(depth)
		}
		return nil, fmt.Errorf("unexpected %q", t)
	default:
		return t, nil // string, json.Number, bool, nil
	}
}

func (p *argParser) object(depth int) (map[string]any, error) {
	obj := map[string]any{}
	for p.dec.More() {
		kt, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := kt.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		vt, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		v, err := p.value(vt, depth+1)
		if err != nil {
			return nil, err
		}
		if old, dup := obj[key]; dup {
			p.shadows = append(p.shadows, shadow{top: depth == 0, key: key, value: old})
		}
		obj[key] = v
	}
	if _, err := p.dec.Token(); err != nil { // closing }
		return nil, err
	}
	return obj, nil
}

func (p *argParser) array(depth int) ([]any, error) {
	arr := []any{}
	for p.dec.More() {
		vt, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		v, err := p.value(vt, depth+1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	if _, err := p.dec.Token(); err != nil { // closing ]
		return nil, err
	}
	return arr, nil
}

// canonical encodes v with sorted keys, exact numbers and no HTML
// escaping: the same arguments always give the same bytes, so their digest
// can bind a permit to one exact call.
func canonical(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode arguments: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// digestOf is the digest of canonical arguments and, when they hold paths,
// of where each path resolved: a permit binds to both, so a link moved
// after the user approved a call makes it a new call, asked again.
func digestOf(canon []byte, paths ...[]pathArg) string {
	h := sha256.New()
	h.Write(canon)
	for _, ps := range paths {
		for _, pa := range ps {
			h.Write([]byte{0})
			h.Write([]byte(pa.arg))
			for _, r := range pa.readings {
				h.Write([]byte{1})
				h.Write([]byte(r))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// normalizeValue turns a Go value (from YAML config or a pin) into the
// shapes parseArgs produces, so that comparisons and schema validation see
// one representation.
func normalizeValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not a JSON value: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("not a JSON value: %w", err)
	}
	return out, nil
}

// jsonEqual compares two normalised JSON values; numbers compare by value
// so that 1, 1.0 and 1e0 are equal.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, ok1 := new(big.Rat).SetString(string(x))
		ry, ok2 := new(big.Rat).SetString(string(y))
		return ok1 && ok2 && rx.Cmp(ry) == 0
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// kindOf names a JSON value's type in plain words for refusals.
func kindOf(v any) string {
	switch x := v.(type) {
	case string:
		return "a string"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "a number"
		}
		return "an integer"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "an unknown value"
}
