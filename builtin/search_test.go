package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/index"
)

type fakeMemory struct {
	turn int
	last LastSearch
}

func (m *fakeMemory) Recall(f func(int, *LastSearch)) { f(m.turn, &m.last) }

type gates map[string]string

func (g gates) SlashFor(name string) (string, bool) { s, ok := g[name]; return s, ok }

func mcpHit(name string) index.Hit { return hit(name, index.KindMCP, "Does "+name+".") }

func query(q string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"query": q})
	return b
}

func TestLoopGuard(t *testing.T) {
	type step struct {
		query string
		turn  int
		want  string // a code, or "" for an answer
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"same words any order or case", []step{
			{"take a note", 1, ""}, {"Note a TAKE", 1, CodeRepeatedSearch}, {"  take, a note ", 1, CodeRepeatedSearch},
		}},
		{"fourth repeat says stop", []step{
			{"take a note", 1, ""}, {"take a note", 1, CodeRepeatedSearch}, {"take a note", 1, CodeRepeatedSearch},
			{"take a note", 1, CodeRepeatedSearch}, {"take a note", 1, CodeSearchLoop}, {"take a note", 1, CodeSearchLoop},
		}},
		{"a different query resets", []step{
			{"take a note", 1, ""}, {"take a note", 1, CodeRepeatedSearch}, {"read a file", 1, ""}, {"take a note", 1, ""},
		}},
		{"a new turn resets", []step{
			{"take a note", 1, ""}, {"take a note", 1, CodeRepeatedSearch}, {"take a note", 2, ""}, {"take a note", 2, CodeRepeatedSearch},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := &fakeMemory{}
			idx := &fakeSearcher{res: index.Result{Hits: []index.Hit{mcpHit("example__notes_add")}}}
			st := SearchTool{Index: idx, Binder: &fakeBinder{}, Memory: mem}
			for i, s := range tc.steps {
				mem.turn = s.turn
				res := st.Call(context.Background(), query(s.query))
				out := text(res)
				switch {
				case s.want == "" && res.IsError:
					t.Fatalf("step %d %q: refused: %s", i, s.query, out)
				case s.want != "" && (!res.IsError || !strings.HasPrefix(out, s.want+":")):
					t.Fatalf("step %d %q: want %s, got %s", i, s.query, s.want, out)
				}
				if s.want == CodeRepeatedSearch && !strings.Contains(out, "example__notes_add") {
					t.Errorf("step %d: the refusal must name the bound tools: %s", i, out)
				}
				if s.want == CodeSearchLoop && !strings.Contains(out, "tell the user") {
					t.Errorf("step %d: the loop error must tell the model to stop and report: %s", i, out)
				}
			}
		})
	}
}

func TestSlashGatedToolsAreDescribedNeverBound(t *testing.T) {
	b := &fakeBinder{}
	st := SearchTool{
		Index:  &fakeSearcher{res: index.Result{Hits: []index.Hit{mcpHit("lint__fix"), mcpHit("lint__check")}}},
		Binder: b,
		Slash:  gates{"lint__fix": "autofix"},
	}
	res := st.Call(context.Background(), query("fix lint"))
	out := text(res)
	if !strings.Contains(out, "- lint__fix [mcp] [slash: /autofix] — Does lint__fix.") {
		t.Errorf("a slash-gated hit must be marked:\n%s", out)
	}
	if len(b.bound) != 1 || b.bound[0] != "lint__check" {
		t.Errorf("bound %v, want only lint__check", b.bound)
	}
	if !strings.Contains(out, "Bound for your next step: lint__check\n") {
		t.Errorf("answer:\n%s", out)
	}
}
