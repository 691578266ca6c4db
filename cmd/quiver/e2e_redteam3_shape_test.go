package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedTeam3RelativePathWithoutLetter: "1/2" and "2024/01/02" were taken
// for numbers and dates, but they are files too when folders by those
// names exist in the server's working folder (red team 3). The hostile
// server opens any string it is given from its own folder, outside the
// fence.
func TestRedTeam3RelativePathWithoutLetter(t *testing.T) {
	r := startHostile(t)
	base := filepath.Dir(r.outside)
	if err := os.MkdirAll(filepath.Join(base, "2024", "01"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "2024", "01", "02"), []byte(r.canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := r.callRaw("hostile__read_any", map[string]any{"date": "2024/01/02"})
	if strings.Contains(out.strings(), r.canary) {
		t.Errorf("a relative path of digits, outside the fence, reached the server and came back: %.300s", out.strings())
	}
}
