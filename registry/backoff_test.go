package registry

import (
	"slices"
	"testing"
	"time"
)

// TestBackoffJitter: each wait lies in the upper half of its step, the
// steps double up to the maximum, and two servers' waits differ (no
// lockstep restarts).
func TestBackoffJitter(t *testing.T) {
	const lo, hi = 500 * time.Millisecond, 30 * time.Second
	steps := []time.Duration{lo, 2 * lo, 4 * lo, 8 * lo, 16 * lo, 32 * lo, hi, hi, hi}
	var runs [][]time.Duration
	for range 20 {
		b := newBackoff(lo, hi)
		var waits []time.Duration
		for i, step := range steps {
			w := b.next()
			if w < step/2 || w > step {
				t.Fatalf("wait %d is %s; want %s to %s", i+1, w, step/2, step)
			}
			waits = append(waits, w)
		}
		runs = append(runs, waits)
	}
	distinct := map[time.Duration]bool{}
	for _, r := range runs {
		distinct[r[0]] = true
	}
	if len(distinct) < 10 {
		t.Errorf("20 servers failing at once wait only %d distinct first waits; want them spread", len(distinct))
	}
	if slices.Equal(runs[0], runs[1]) {
		t.Errorf("two backoffs gave the same waits %v", runs[0])
	}

	b := newBackoff(lo, hi)
	b.next()
	b.next()
	b.reset()
	if w := b.next(); w < lo/2 || w > lo {
		t.Errorf("after reset the wait is %s; want %s to %s", w, lo/2, lo)
	}
	b.set(2 * time.Second)
	if w := b.next(); w < time.Second || w > 2*time.Second {
		t.Errorf("after set(2s) the wait is %s; want 1s to 2s", w)
	}
	// A step of a nanosecond still works (no zero range).
	if w := newBackoff(time.Nanosecond, time.Nanosecond).next(); w != time.Nanosecond {
		t.Errorf("1ns step: %s", w)
	}
}
