package textdist

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"comand", "command", 1},
		{"issue", "isue", 1},
		{"kitten", "sitting", 3},
		{"héllo", "hello", 1}, // runes, not bytes
		{"abc", "", 3},
	} {
		if got := Levenshtein(tc.a, tc.b); got != tc.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Levenshtein(tc.b, tc.a); got != tc.want {
			t.Errorf("Levenshtein is not symmetric for %q, %q", tc.a, tc.b)
		}
	}
}
