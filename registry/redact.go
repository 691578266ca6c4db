package registry

import "strings"

// Redact replaces every known secret value in s with [redacted:VAR].
func Redact(s string, secrets []Secret) string {
	for _, sec := range secrets {
		if len(sec.Value) >= 4 && strings.Contains(s, sec.Value) {
			s = strings.ReplaceAll(s, sec.Value, "[redacted:"+sec.Var+"]")
		}
	}
	return s
}
