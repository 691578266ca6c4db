package age

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"1d", 24 * time.Hour, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"90m", 90 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"1w", 0, `"1w" is not an age: give one such as 30m, 12h or 7d`},
		{"d", 0, "is not an age"},
		{"-1d", 0, "is not an age"},
		{"0s", 0, "is not a positive age"},
		{"", 0, "is not an age"},
		{"1dd", 0, "is not an age"},
	} {
		got, err := Parse(tc.in)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Parse(%q) = %v, %v; want an error saying %q", tc.in, got, err, tc.err)
		}
	}
}
