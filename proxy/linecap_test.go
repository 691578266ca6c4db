package proxy

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineCapDropsOverlongLines: lines within the cap pass as they are; a
// longer one is dropped, reported with its top-level id wherever the id
// sits, and the lines after it pass.
func TestLineCapDropsOverlongLines(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name, long, id string
	}{
		{"id_first", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"v":"` + big + `"}}`, `7`},
		{"id_last", `{"method":"tools/call","params":{"id":99,"v":"` + big + `"},"jsonrpc":"2.0","id":"a\"b"}`, `"a\"b"`},
		{"nested_id_only", `{"method":"x","params":{"id":5,"v":"` + big + `"}}`, ``},
		{"not_json", big, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotID json.RawMessage
			var gotSize int64
			calls := 0
			in := "short one\n" + tc.long + "\n" + `{"id":2}` + "\n"
			c := newLineCap(iotest.HalfReader(strings.NewReader(in)), 100, func(id json.RawMessage, size int64) {
				gotID, gotSize, calls = id, size, calls+1
			})
			out, err := io.ReadAll(c)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != "short one\n"+`{"id":2}`+"\n" {
				t.Fatalf("passed %q", out)
			}
			if calls != 1 || string(gotID) != tc.id || gotSize != int64(len(tc.long)+1) {
				t.Fatalf("tooLong(%s, %d) called %d times; want id %s, size %d", gotID, gotSize, calls, tc.id, len(tc.long)+1)
			}
		})
	}
}
