package registry

import (
	"math/rand/v2"
	"time"
)

// A backoff is the wait before a server's next start. It doubles from
// Options.MinBackoff up to MaxBackoff, and each wait is drawn at random from
// the upper half of that step ([d/2, d], "equal jitter"): servers that
// failed together (a network blip, a shared dependency going away) then
// restart at different moments instead of in lockstep, each time hitting
// what failed all at once. The wait never exceeds MaxBackoff.
type backoff struct {
	min, max time.Duration
	step     time.Duration // the next wait before jitter
}

func newBackoff(min, max time.Duration) *backoff {
	return &backoff{min: min, max: max, step: min}
}

// next returns the wait before the next start and doubles the step.
func (b *backoff) next() time.Duration {
	d := b.step
	b.step = min(b.step*2, b.max)
	half := d / 2
	return d - half + time.Duration(rand.Int64N(int64(half)+1))
}

// reset starts again from the shortest wait: for a server that ran a while.
func (b *backoff) reset() { b.step = b.min }

// set makes d the next step (a server waiting for a login looks for its
// token at a steady pace).
func (b *backoff) set(d time.Duration) { b.step = d }
