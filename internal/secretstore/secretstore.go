// Package secretstore keeps named secrets out of environment variables
// and config files: in the OS keychain (macOS Keychain, Windows
// Credential Manager, the Secret Service on Linux desktops), else, where
// a machine has none (a headless Linux box), in a file in quiver's state
// dir that only its owner may read. servers.yaml names them as
// ${keyring:NAME}; "quiver secret set NAME" stores them.
package secretstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/zalando/go-keyring"

	"github.com/quiver-mcp/quiver/internal/atomicfile"
)

// Service is the keychain service quiver's secrets are filed under.
const Service = "quiver"

// FileName is the fallback file in the state dir.
const FileName = "secrets.json"

// ErrNotFound is returned by Get for a name stored nowhere.
var ErrNotFound = errors.New("secret not found")

// A Keychain is the part of an OS keychain the store uses; go-keyring's
// functions by default.
type Keychain interface {
	Get(service, user string) (string, error)
	Set(service, user, password string) error
	// Delete removes the entry; keyring.ErrNotFound when there is none.
	Delete(service, user string) error
}

type osKeychain struct{}

func (osKeychain) Get(service, user string) (string, error) { return keyring.Get(service, user) }
func (osKeychain) Set(service, user, pw string) error       { return keyring.Set(service, user, pw) }
func (osKeychain) Delete(service, user string) error        { return keyring.Delete(service, user) }

// A Store finds and keeps secrets by name.
type Store struct {
	file     string
	keychain Keychain // nil: the file only
}

// New is the store whose fallback file is in stateDir. mode "file" skips
// the keychain (QUIVER_SECRET_STORE=file, for machines whose keychain
// cannot be unlocked without a person); any other value uses it.
func New(stateDir, mode string) *Store {
	s := &Store{file: filepath.Join(stateDir, FileName)}
	if mode != "file" {
		s.keychain = osKeychain{}
	}
	return s
}

// NewWith is a store with the keychain k (nil for the file only), for
// tests.
func NewWith(stateDir string, k Keychain) *Store {
	return &Store{file: filepath.Join(stateDir, FileName), keychain: k}
}

// File is the fallback file's path.
func (s *Store) File() string { return s.file }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidName reports whether name may name a secret: 1 to 64 letters,
// digits, '_', '.' and '-'.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Get returns the secret name: the keychain's, else the file's.
func (s *Store) Get(name string) (string, error) {
	if !ValidName(name) {
		return "", fmt.Errorf("%q is not a secret name: use 1 to 64 letters, digits, '_', '.' and '-'", name)
	}
	if s.keychain != nil {
		if v, err := s.keychain.Get(Service, name); err == nil {
			return v, nil
		}
		// Not there, or no keychain on this machine: the file may hold it.
	}
	m, err := s.read()
	if err != nil {
		return "", err
	}
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return v, nil
}

// Set stores value under name, in the keychain when there is one (and
// then removes any copy from the file), else in the file. where says
// which, for the person who set it.
func (s *Store) Set(name, value string) (where string, err error) {
	if !ValidName(name) {
		return "", fmt.Errorf("%q is not a secret name: use 1 to 64 letters, digits, '_', '.' and '-'", name)
	}
	var kerr error
	if s.keychain != nil {
		if kerr = s.keychain.Set(Service, name, value); kerr == nil {
			if err := s.update(func(m map[string]string) bool {
				_, had := m[name]
				delete(m, name)
				return had
			}); err != nil {
				return "", err
			}
			return "the OS keychain (service " + Service + ")", nil
		}
	}
	if err := s.update(func(m map[string]string) bool { m[name] = value; return true }); err != nil {
		return "", err
	}
	where = s.file + " (readable by you only)"
	if kerr != nil {
		where += fmt.Sprintf("; the OS keychain is not available here: %v", kerr)
	}
	return where, nil
}

// Where says where the secret name is stored: "keychain", "file", or ""
// when it is stored nowhere this store looks. An OS keychain cannot list
// its entries, so a name is only ever asked about.
func (s *Store) Where(name string) (string, error) {
	if !ValidName(name) {
		return "", fmt.Errorf("%q is not a secret name: use 1 to 64 letters, digits, '_', '.' and '-'", name)
	}
	if s.keychain != nil {
		if _, err := s.keychain.Get(Service, name); err == nil {
			return "keychain", nil
		}
	}
	m, err := s.read()
	if err != nil {
		return "", err
	}
	if _, ok := m[name]; ok {
		return "file", nil
	}
	return "", nil
}

// FileNames are the names of the secrets in the fallback file, sorted.
func (s *Store) FileNames() ([]string, error) {
	m, err := s.read()
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m)), nil
}

// Delete removes the secret name from the keychain and the file; it
// returns ErrNotFound when neither held it.
func (s *Store) Delete(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%q is not a secret name: use 1 to 64 letters, digits, '_', '.' and '-'", name)
	}
	found := false
	if s.keychain != nil {
		if _, err := s.keychain.Get(Service, name); err == nil {
			if err := s.keychain.Delete(Service, name); err != nil {
				return fmt.Errorf("remove %s from the OS keychain: %w", name, err)
			}
			found = true
		}
	}
	if err := s.update(func(m map[string]string) bool {
		_, had := m[name]
		delete(m, name)
		found = found || had
		return had
	}); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	return nil
}

// read loads the fallback file; a missing file holds nothing. A file
// others may read is refused: its secrets may already be out, and the
// person should know.
func (s *Store) read() (map[string]string, error) {
	b, err := os.ReadFile(s.file)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(s.file); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s may be read by others (mode %v): run chmod 600 %s, and change the secrets it holds", s.file, fi.Mode().Perm(), s.file)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", s.file, err)
	}
	return m, nil
}

// update applies change to the file's secrets and, when change says it
// changed them, writes them back atomically, mode 0600.
func (s *Store) update(change func(map[string]string) bool) error {
	m, err := s.read()
	if err != nil {
		return err
	}
	if !change(m) {
		return nil
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return atomicfile.WritePrivate(s.file, append(b, '\n'))
}
