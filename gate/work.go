package gate

import (
	"errors"
	"fmt"
)

// Caps on the fence's work for one call. An lstat walks the kernel through
// every component of its path, so a path k components deep costs k
// lookups to check once and about k²/2 to resolve component by component;
// without caps a few hundred deep paths cost seconds. The figures keep the
// costliest accepted call near 15 ms on a small machine (see
// BenchmarkFenceWorstAccepted) while leaving room for any honest call: 256
// paths eight folders deep, or 60 thirty deep.
const (
	// maxPathValues bounds the path values (arguments, array elements,
	// keys) one call may carry.
	maxPathValues = 256
	// maxReadings bounds the readings resolved for one call: a path read
	// several ways (padding, backslashes, lookalikes, several bases) counts
	// each.
	maxReadings = 1024
	// maxLstats bounds the file system lookups for one call (about 5 µs
	// each where quiver was measured).
	maxLstats = 2048
	// maxLookups bounds the path components those lookups walk (about
	// 0.2 µs each).
	maxLookups = 32768
	// maxSteps bounds the components resolved in all, looked up or not
	// (below a missing folder nothing is looked up, but the walk still
	// costs).
	maxSteps = 32768
)

// errTooComplex marks a call whose paths would cost the fence more than
// its caps allow.
var errTooComplex = errors.New("arguments too complex")

type tooComplex struct{ why string }

func (e *tooComplex) Error() string     { return e.why }
func (e *tooComplex) Is(err error) bool { return err == errTooComplex }

// work is the fence's budget for one call. A nil *work is unbounded
// (quiver's own roots and protected paths, resolved once).
type work struct {
	readings, lstats, lookups, steps int
}

// step charges one component resolved.
func (w *work) step() error {
	if w == nil {
		return nil
	}
	w.steps++
	if w.steps > maxSteps {
		return &tooComplex{fmt.Sprintf("their paths are too long: checking them would walk more than %d folders", maxSteps)}
	}
	return nil
}

// lookup charges one lstat of a path depth components deep.
func (w *work) lookup(depth int) error {
	if w == nil {
		return nil
	}
	w.lstats++
	w.lookups += depth
	if w.lstats > maxLstats {
		return &tooComplex{fmt.Sprintf("checking their paths would take more than %d file system lookups", maxLstats)}
	}
	if w.lookups > maxLookups {
		return &tooComplex{fmt.Sprintf("their paths are too deep: checking them would walk more than %d folders", maxLookups)}
	}
	return nil
}

// physical resolves one reading and charges it.
func (w *work) physical(abs string) (string, error) {
	if w != nil {
		w.readings++
		if w.readings > maxReadings {
			return "", &tooComplex{fmt.Sprintf("their paths can be read in more than %d ways", maxReadings)}
		}
	}
	return physical(abs, w)
}
