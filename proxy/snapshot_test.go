package proxy

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/quiver-mcp/quiver/index"
	"github.com/quiver-mcp/quiver/registry"
)

// closeCounter counts how often its index was closed.
type closeCounter struct {
	searchIndex
	closed atomic.Int32
}

func (c *closeCounter) Close() error {
	c.closed.Add(1)
	return c.searchIndex.Close()
}

// TestReplacedIndexLivesUntilItsLastReader holds a request's view across
// an install: the search it runs after the swap still answers from the
// index it began with, and that index is closed once, when the view is
// released: not before, and not on a timer.
func TestReplacedIndexLivesUntilItsLastReader(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	ctx := context.Background()
	spy := &closeCounter{searchIndex: r.s.state.Load().ix}
	r.s.state.Load().ix = spy // before any request: nothing reads it yet

	v := r.s.viewOf(&session{id: "reader"})
	old := v.snapshot
	r.s.install(registry.NewCatalog(2, rigTools()...))
	if r.s.state.Load() == old {
		t.Fatal("the install did not replace the snapshot")
	}
	if n := spy.closed.Load(); n != 0 {
		t.Fatalf("the replaced index was closed %d times while a request held it", n)
	}
	res, err := v.ix.Search(ctx, index.Query{Text: "save a new note"})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Entry.Name != "ex__notes_add" {
		t.Fatalf("a search holding the replaced snapshot: %+v, %v", res.Hits, err)
	}
	// A second reader of the old snapshot keeps it open too.
	v2 := v
	v2.held = old.hold()
	if !v2.held {
		t.Fatal("a snapshot with a reader left could not be held")
	}
	v.release()
	if n := spy.closed.Load(); n != 0 {
		t.Fatalf("the replaced index was closed %d times with a reader left", n)
	}
	v2.release()
	if n := spy.closed.Load(); n != 1 {
		t.Fatalf("after its last reader the replaced index was closed %d times, want once", n)
	}
	if old.hold() {
		t.Fatal("a released snapshot could be held again")
	}
	// A new view takes the snapshot in force, whose index is open.
	cur := r.s.viewOf(&session{id: "next"})
	defer cur.release()
	if cur.snapshot == old || !cur.held {
		t.Fatalf("a new view took the replaced snapshot (held %v)", cur.held)
	}
	if res, err := cur.ix.Search(ctx, index.Query{Text: "save a new note"}); err != nil || len(res.Hits) == 0 {
		t.Fatalf("the index in force: %+v, %v", res.Hits, err)
	}
}

// TestViewAfterCloseDoesNotSpin: after Close nothing replaces the released
// snapshot; a late request gets it unheld instead of waiting for one.
func TestViewAfterCloseDoesNotSpin(t *testing.T) {
	r := newRig(t, rigConfig, rigTools()...)
	if err := r.s.Close(); err != nil {
		t.Fatal(err)
	}
	v := r.s.viewOf(&session{id: "late"})
	if v.held || v.snapshot == nil {
		t.Fatalf("a view after Close: held %v, snapshot %p", v.held, v.snapshot)
	}
	v.release() // gives nothing back
	if n := v.refs.Load(); n != 0 {
		t.Fatalf("references after Close: %d", n)
	}
}
