package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// ExposedName is the name the model sees for a downstream tool:
// "<prefix>__<tool>", with every character outside [A-Za-z0-9_-] replaced
// by '_', and at most max characters. A longer name keeps a readable stem
// and ends with '_' and 8 hex digits of the SHA-256 of the full name, so the
// same tool always gets the same short name and two long names that share a
// stem still differ. A max of 0 or less means DefaultMaxNameLen; a max
// below 16 (which servers.yaml refuses) is taken as 16, the least that
// leaves room for a stem and the hash.
func ExposedName(prefix, tool string, max int) string {
	full := tool
	if prefix != "" {
		full = prefix + "__" + tool
	}
	clean := sanitize(full)
	if max <= 0 {
		max = DefaultMaxNameLen
	}
	if max < minNameLen {
		max = minNameLen
	}
	if len(clean) <= max {
		// Sanitizing may make two raw names collide ("a.b" and "a_b"); the
		// catalog reports that rather than hiding it behind a hash.
		return clean
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "_" + hex.EncodeToString(sum[:4])
	stem := clean[:max-len(suffix)]
	if prefix != "" {
		// Keep some of the tool's own name: a long prefix takes at most
		// half of the stem, so github_enterprise_cloud_eu__create_issue
		// does not shorten to the prefix alone.
		p, t := sanitize(prefix), sanitize(tool)
		budget := max - len(suffix) - len("__")
		if budget >= 16 && len(p) > budget/2 && len(p)+len(t) > budget {
			keep := budget / 2
			if budget-len(t) > keep {
				keep = budget - len(t)
			}
			stem = strings.TrimRight(p[:keep], "_-") + "__" + t[:min(len(t), budget-keep)]
		}
	}
	return strings.TrimRight(stem, "_-") + suffix
}

// minNameLen is the least max_name_len: a 7-character stem, '_' and the
// 8-digit hash.
const minNameLen = 16

func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
