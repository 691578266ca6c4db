package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/quiver-mcp/quiver/internal/secretstore"
	"github.com/quiver-mcp/quiver/registry"
)

// secrets is the store ${keyring:NAME} references are read from: the OS
// keychain, else secrets.json in the state dir.
func (c *common) secrets(e *env) (*secretstore.Store, error) {
	state, err := c.state(e)
	if err != nil {
		return nil, err
	}
	return secretstore.New(state, e.getenv("QUIVER_SECRET_STORE")), nil
}

// lookup resolves the references in servers.yaml: ${VAR} from the
// environment, ${keyring:NAME} from the secret store. A store that cannot
// be read is said on stderr; the reference then counts as not set, which
// the config error names.
func (c *common) lookup(e *env) func(string) (string, bool) {
	store, storeErr := c.secrets(e)
	return func(name string) (string, bool) {
		key, ok := strings.CutPrefix(name, registry.KeyringPrefix)
		if !ok {
			return os.LookupEnv(name)
		}
		if storeErr != nil {
			fmt.Fprintf(e.stderr, "quiver: secret %s: %v\n", key, storeErr)
			return "", false
		}
		v, err := store.Get(key)
		if err != nil {
			if !errors.Is(err, secretstore.ErrNotFound) {
				fmt.Fprintf(e.stderr, "quiver: secret %s: %v\n", key, err)
			}
			return "", false
		}
		return v, true
	}
}

func secretCmd() *command {
	return &command{
		summary:     "store, list or delete the secrets servers.yaml names as ${keyring:NAME}",
		usage:       "secret set|list|delete [NAME] [--config PATH] [--state-dir DIR]",
		subcommands: []string{"set", "list", "delete"},
		help: `
quiver secret set NAME
  Reads a secret from stdin (typed without echo in a terminal, or piped:
  printf %s "$TOKEN" | quiver secret set github) and stores it under NAME
  in the OS keychain (macOS Keychain, Windows Credential Manager, the
  Secret Service on Linux desktops). Where there is none (a headless
  Linux box), or with QUIVER_SECRET_STORE=file, it goes to secrets.json
  in quiver's state dir, readable by you only. servers.yaml then names
  it wherever a ${VAR} may stand:

    servers:
      github:
        url: https://api.githubcopilot.com/mcp/
        headers:
          Authorization: "Bearer ${keyring:github}"

  A stored secret is redacted like any other, wherever it is used: no
  result, log line or error shows it. NAME is 1 to 64 letters, digits,
  '_', '.' and '-'.

quiver secret list
  Lists, never showing a value, every secret servers.yaml names as
  ${keyring:NAME} and every secret in secrets.json, with where each is
  stored (keychain, file) or "not set". An OS keychain cannot list its
  entries: a secret there that servers.yaml does not name is not listed.

quiver secret delete NAME
  Removes the secret from the OS keychain and from secrets.json.

Flags:
  --config PATH     servers.yaml whose ${keyring:NAME} references to list
  --state-dir DIR   quiver's state dir, which holds secrets.json`,
		run: func(ctx context.Context, e *env, args []string) error {
			var c common
			fs := newFlags("secret")
			fs.StringVar(&c.stateDir, "state-dir", "", "quiver's state dir")
			fs.StringVar(&c.config, "config", "", "servers.yaml whose references to list")
			if err := parse(fs, args); err != nil {
				return err
			}
			words := fs.Args()
			if len(words) == 0 || !slices.Contains([]string{"set", "list", "delete"}, words[0]) {
				return fmt.Errorf("%w: the secret command takes a subcommand: set, list or delete", errUsage)
			}
			if words[0] == "list" {
				if len(words) != 1 {
					return fmt.Errorf("%w: unexpected argument %q", errUsage, words[1])
				}
				return listSecrets(e, &c)
			}
			if len(words) != 2 {
				return fmt.Errorf("%w: say which secret, e.g. quiver secret %s github", errUsage, words[0])
			}
			name := words[1]
			if !secretstore.ValidName(name) {
				return fmt.Errorf("%w: %q is not a secret name: use 1 to 64 letters, digits, '_', '.' and '-'", errUsage, name)
			}
			if words[0] == "delete" {
				store, err := c.secrets(e)
				if err != nil {
					return err
				}
				if err := store.Delete(name); errors.Is(err, secretstore.ErrNotFound) {
					return fmt.Errorf("no secret %s is stored (quiver secret list shows the ones that are)", name)
				} else if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "Deleted secret %s. A servers.yaml that names ${keyring:%s} no longer loads until it is set again.\n", name, name)
				return nil
			}
			value, err := readSecret(e, name)
			if err != nil {
				return err
			}
			store, err := c.secrets(e)
			if err != nil {
				return err
			}
			where, err := store.Set(name, value)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Stored secret %s in %s.\nUse it in servers.yaml as ${keyring:%s}; a running quiver uses it at its next reload or start.\n", name, where, name)
			return nil
		},
	}
}

// keyringRefRE finds the ${keyring:NAME} references in a servers.yaml.
var keyringRefRE = regexp.MustCompile(`\$\{` + regexp.QuoteMeta(registry.KeyringPrefix) + `([A-Za-z0-9_.-]{1,64})\}`)

// listSecrets prints the secrets servers.yaml names and those in the
// file, with where each is stored; never a value. The file is read as
// text, not loaded: a secret not set would stop the load.
func listSecrets(e *env, c *common) error {
	store, err := c.secrets(e)
	if err != nil {
		return err
	}
	names, err := store.FileNames()
	if err != nil {
		return err
	}
	named := map[string]bool{}
	servers := c.serversPath(e)
	if servers != "" {
		b, err := os.ReadFile(servers)
		if err != nil {
			return fmt.Errorf("read %s: %w", servers, err)
		}
		for _, m := range keyringRefRE.FindAllSubmatch(b, -1) {
			named[string(m[1])] = true
			names = append(names, string(m[1]))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		fmt.Fprintln(e.stdout, "No secrets: servers.yaml names none as ${keyring:NAME}, and secrets.json holds none.")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTORED\tIN SERVERS.YAML")
	for _, n := range names {
		where, err := store.Where(n)
		if err != nil {
			return err
		}
		if where == "" {
			where = "not set (quiver secret set " + n + ")"
		}
		in := "no"
		if named[n] {
			in = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, where, in)
	}
	return tw.Flush()
}

// maxSecret bounds what is read as one secret.
const maxSecret = 64 << 10

// readSecret reads the secret from stdin: from a terminal without echo,
// after a prompt on stderr; else all of it, less one line ending.
func readSecret(e *env, name string) (string, error) {
	var b []byte
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(e.stderr, "secret %s (not shown): ", name)
		var err error
		b, err = term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("read the secret: %w", err)
		}
	} else {
		var err error
		b, err = io.ReadAll(io.LimitReader(e.stdin, maxSecret+1))
		if err != nil {
			return "", fmt.Errorf("read the secret: %w", err)
		}
		if len(b) > maxSecret {
			return "", fmt.Errorf("%w: the secret on stdin is longer than %d bytes", errUsage, maxSecret)
		}
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return "", fmt.Errorf("%w: the secret is empty; type it, or pipe it: printf %%s \"$TOKEN\" | quiver secret set %s", errUsage, name)
	}
	return string(b), nil
}
