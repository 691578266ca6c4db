package registry

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// varRE finds what expandVars replaces: $$, ${NAME}, and a ${ that is
// never closed.
var varRE = regexp.MustCompile(`\$\$|\$\{([^}]*)\}|\$\{`)

// expandVars replaces ${VAR} with the variable's value and $$ with $.
// Anything else is left alone so that values with a lone $ survive; a ${
// that is never closed is an error, not a literal (it is a typo).
func expandVars(s string, lookup func(string) (string, bool), seen func(name, val string)) (string, error) {
	var errs, unset []string
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if m == "${" {
			errs = append(errs, "a ${ is never closed; write ${NAME}, or $${ for a literal ${")
			return m
		}
		name := m[2 : len(m)-1]
		if key, ok := strings.CutPrefix(name, KeyringPrefix); ok {
			// A secret in the OS keychain (or quiver's secrets file),
			// which lookup resolves under its whole name.
			if !keyringNameRE.MatchString(key) {
				errs = append(errs, fmt.Sprintf("%q is not a keyring reference; write ${keyring:NAME} with letters, digits, _, . and -", m))
				return m
			}
			v, ok := lookup(name)
			if !ok {
				errs = append(errs, fmt.Sprintf("keyring secret %s is not set; run: quiver secret set %s", key, key))
				return m
			}
			seen(name, v)
			return v
		}
		if !envNameRE.MatchString(name) {
			errs = append(errs, fmt.Sprintf("%q is not a variable reference; write ${NAME} with letters, digits and _", m))
			return m
		}
		v, ok := lookup(name)
		if !ok {
			unset = append(unset, name)
			return m
		}
		seen(name, v)
		return v
	})
	if len(errs) > 0 {
		for _, n := range unset {
			errs = append(errs, unsetText(n))
		}
		return s, errors.New(strings.Join(errs, "; "))
	}
	if len(unset) > 0 {
		return s, &unsetError{names: unset}
	}
	return out, nil
}

// An unsetError is a value whose only fault is a ${VAR} that is not set:
// the file is readable, so only the server that needs the variable is
// down, not the whole file (issue 17, problem 3).
type unsetError struct{ names []string }

func (e *unsetError) Error() string {
	parts := make([]string, len(e.names))
	for i, n := range e.names {
		parts[i] = unsetText(n)
	}
	return strings.Join(parts, "; ")
}

func unsetText(name string) string {
	return fmt.Sprintf("environment variable %s is not set; set it in the environment quiver starts with (a host's \"env\" block) or remove the reference", name)
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// KeyringPrefix starts a reference to a stored secret: ${keyring:NAME}.
// The lookup given to ParseConfig resolves "keyring:NAME".
const KeyringPrefix = "keyring:"

var keyringNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
