// Package age reads how far back a person asks to look ("--since 7d", the
// audit page's since field): a Go duration, or whole days, which Go's
// durations lack and people write first.
package age

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parse reads s as a positive age: a Go duration ("90m", "1h30m") or days,
// alone or before one ("7d", "1d12h").
func Parse(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	var d time.Duration
	if days, rest, ok := strings.Cut(in, "d"); ok && days != "" {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100000 {
			return 0, errBad(s)
		}
		d, in = time.Duration(n)*24*time.Hour, rest
		if in == "" {
			return positive(s, d)
		}
	}
	more, err := time.ParseDuration(in)
	if err != nil {
		return 0, errBad(s)
	}
	return positive(s, d+more)
}

func positive(s string, d time.Duration) (time.Duration, error) {
	if d <= 0 {
		return 0, fmt.Errorf("%q is not a positive age: %w", s, errHint)
	}
	return d, nil
}

var errHint = errors.New("give one such as 30m, 12h or 7d")

func errBad(s string) error { return fmt.Errorf("%q is not an age: %w", s, errHint) }

// Value is Parse as a flag value (pflag.Value), 0 until set.
type Value struct{ D time.Duration }

func (v *Value) String() string {
	if v.D == 0 {
		return "0"
	}
	return v.D.String()
}

func (v *Value) Set(s string) error {
	d, err := Parse(s)
	if err != nil {
		return err
	}
	v.D = d
	return nil
}

func (v *Value) Type() string { return "age" }
