package secretstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeKeychain is an OS keychain in memory, or, with down set, a machine
// without one (as go-keyring reports a Linux box without the Secret
// Service).
type fakeKeychain struct {
	down bool
	m    map[string]string
}

func (k *fakeKeychain) Get(service, user string) (string, error) {
	if k.down {
		return "", errors.New(`exec: "dbus-launch": executable file not found in $PATH`)
	}
	v, ok := k.m[service+"/"+user]
	if !ok {
		return "", errors.New("secret not found in keyring")
	}
	return v, nil
}

func (k *fakeKeychain) Set(service, user, pw string) error {
	if k.down {
		return errors.New(`exec: "dbus-launch": executable file not found in $PATH`)
	}
	k.m[service+"/"+user] = pw
	return nil
}

func (k *fakeKeychain) Delete(service, user string) error {
	if k.down {
		return errors.New(`exec: "dbus-launch": executable file not found in $PATH`)
	}
	if _, ok := k.m[service+"/"+user]; !ok {
		return errors.New("secret not found in keyring")
	}
	delete(k.m, service+"/"+user)
	return nil
}

// TestListAndDelete: Where says where a name is stored, FileNames lists
// the file's, and Delete removes a secret from both (issue 29).
func TestListAndDelete(t *testing.T) {
	dir := t.TempDir()
	down := NewWith(dir, &fakeKeychain{down: true})
	if _, err := down.Set("in-file", "v1"); err != nil {
		t.Fatal(err)
	}
	k := &fakeKeychain{m: map[string]string{}}
	up := NewWith(dir, k)
	if _, err := up.Set("in-keychain", "v2"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"in-file": "file", "in-keychain": "keychain", "nowhere": ""} {
		if got, err := up.Where(name); err != nil || got != want {
			t.Errorf("Where(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	if names, err := up.FileNames(); err != nil || strings.Join(names, ",") != "in-file" {
		t.Errorf("FileNames = %v, %v", names, err)
	}
	for _, name := range []string{"in-file", "in-keychain"} {
		if err := up.Delete(name); err != nil {
			t.Fatalf("Delete(%s): %v", name, err)
		}
		if _, err := up.Get(name); !errors.Is(err, ErrNotFound) {
			t.Errorf("after Delete(%s), Get: %v", name, err)
		}
	}
	if err := up.Delete("nowhere"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Delete of a name stored nowhere: %v", err)
	}
}

// TestFallbackFileWithoutKeychain: without a keychain the secret goes to
// secrets.json in the state dir, mode 0600, and comes back from it.
func TestFallbackFileWithoutKeychain(t *testing.T) {
	dir := t.TempDir()
	s := NewWith(dir, &fakeKeychain{down: true})
	where, err := s.Set("github", "ghp_value")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(where, filepath.Join(dir, FileName)) || !strings.Contains(where, "not available") {
		t.Errorf("where = %q; want the file and why", where)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if v, err := s.Get("github"); err != nil || v != "ghp_value" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := s.Get("other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a name never set: %v, want ErrNotFound", err)
	}
	if _, err := s.Set("a b", "x"); err == nil {
		t.Fatal("a name with a space was accepted")
	}
}

// TestKeychainFirst: with a keychain the secret goes there, and a copy an
// earlier fallback left in the file is removed.
func TestKeychainFirst(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewWith(dir, nil).Set("github", "old"); err != nil {
		t.Fatal(err)
	}
	k := &fakeKeychain{m: map[string]string{}}
	s := NewWith(dir, k)
	where, err := s.Set("github", "new")
	if err != nil || !strings.Contains(where, "keychain") {
		t.Fatalf("Set = %q, %v", where, err)
	}
	if k.m[Service+"/github"] != "new" {
		t.Fatalf("keychain holds %q", k.m[Service+"/github"])
	}
	if b, _ := os.ReadFile(filepath.Join(dir, FileName)); strings.Contains(string(b), "old") {
		t.Fatalf("the file still holds the old copy: %s", b)
	}
	if v, err := s.Get("github"); err != nil || v != "new" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

// TestFileOthersCanReadIsRefused: a secrets file others may read is an
// error that says how to fix it, not quietly used.
func TestFileOthersCanReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := New(dir, "file")
	if _, err := s.Set("github", "x"); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(dir, FileName), 0o644)
	if _, err := s.Get("github"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("Get from a 0644 file: %v", err)
	}
}
