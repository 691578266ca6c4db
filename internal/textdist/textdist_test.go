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

func TestOSA(t *testing.T) {
	for _, tc := range []struct {
		a, b       string
		osa, leven int
	}{
		{"form", "from", 1, 2}, // a swap of neighbours is one typo
		{"comand", "command", 1, 1},
		{"ca", "abc", 3, 3}, // no substring is edited twice (true Damerau: 2)
		{"héllo", "hlélo", 1, 2},
		{"", "ab", 2, 2},
	} {
		if got := OSA(tc.a, tc.b); got != tc.osa {
			t.Errorf("OSA(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.osa)
		}
		if got := OSA(tc.b, tc.a); got != tc.osa {
			t.Errorf("OSA is not symmetric for %q, %q", tc.a, tc.b)
		}
		if got := Levenshtein(tc.a, tc.b); got != tc.leven {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.leven)
		}
	}
}
