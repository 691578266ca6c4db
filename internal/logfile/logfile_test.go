package logfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriter(t *testing.T) {
	t.Parallel()
	t.Run("rotates_past_the_limit_and_keeps_n_old_files", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "logs", "quiver.log")
		w, err := Open(path, 100, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		line := strings.Repeat("x", 39) + "\n" // 40 bytes: two lines a file
		for i := range 7 {
			if _, err := w.Write([]byte(string(rune('a'+i)) + line[1:])); err != nil {
				t.Fatal(err)
			}
		}
		// a b | c d | e f | g: the current file holds g, .1 holds e f,
		// .2 holds c d, and a b are gone.
		want := map[string]string{"quiver.log": "g", "quiver.log.1": "ef", "quiver.log.2": "cd"}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != len(want) {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("files %v, want %d", names, len(want))
		}
		for name, firsts := range want {
			b, err := os.ReadFile(filepath.Join(dir, "logs", name))
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
				got += l[:1]
				if len(l) != 39 {
					t.Errorf("%s: a line was cut: %q", name, l)
				}
			}
			if got != firsts {
				t.Errorf("%s holds lines %q, want %q", name, got, firsts)
			}
		}
	})
	t.Run("appends_to_an_existing_file_and_counts_its_size", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "q.log")
		if err := os.WriteFile(path, []byte(strings.Repeat("o", 90)), 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := Open(path, 100, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.Write([]byte("0123456789012\n")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path + ".1"); len(b) != 90 {
			t.Errorf("the old file (90 bytes) should have rotated to .1, it holds %d bytes", len(b))
		}
		if b, _ := os.ReadFile(path); string(b) != "0123456789012\n" {
			t.Errorf("the new file holds %q", b)
		}
	})
	t.Run("keep_zero_starts_over", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "q.log")
		w, err := Open(path, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.Write([]byte("aaaaaaaa\n"))
		w.Write([]byte("bbbbbbbb\n"))
		if b, _ := os.ReadFile(path); string(b) != "bbbbbbbb\n" {
			t.Errorf("file holds %q", b)
		}
		if _, err := os.Stat(path + ".1"); err == nil {
			t.Error("keep 0 left an old file")
		}
	})
}
