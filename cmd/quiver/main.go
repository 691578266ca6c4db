// Command quiver is an MCP proxy: one MCP server in front of many, with a
// small, stable tool surface, search, and a policy gate on every call.
//
// Run "quiver help" for the commands, "quiver help COMMAND" for one.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	quiver "github.com/quiver-mcp/quiver"
	"github.com/quiver-mcp/quiver/builtin"
	"github.com/quiver-mcp/quiver/registry"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// errUsage marks errors that are the caller's words, not the world's.
var errUsage = errors.New("usage")

// A command is one subcommand of quiver.
type command struct {
	summary string
	usage   string // the synopsis line after "quiver"
	help    string // everything else "quiver help NAME" prints
	run     func(ctx context.Context, env *env, args []string) error
	// raw commands write a protocol or a file to stdout, byte for byte;
	// every other command's output is for a terminal (terminal.go).
	raw bool
	// subcommands are the words run takes first, for completion.
	subcommands []string
	// complete, when set, offers completions for the words after them
	// (args are the words so far, flags included).
	complete func(e *env, args []string, toComplete string) []string
}

// env is what a command runs with; tests give their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

func rawCmd(c *command) *command { c.raw = true; return c }

func commands() map[string]*command {
	return map[string]*command{
		"serve":          rawCmd(serveCmd()),
		"search":         searchCmd(),
		"tools":          toolsCmd(),
		"config":         configCmd(),
		"import":         rawCmd(importCmd()),
		"doctor":         doctorCmd(),
		"tokens":         tokensCmd(),
		"version":        versionCmd(),
		"example-server": rawCmd(exampleServerCmd()),
		"approve":        approveCmd(),
		"deny":           denyCmd(),
		"grants":         grantsCmd(),
		"audit":          auditCmd(),
		"ui":             uiCmd(),
		"secret":         secretCmd(),
		"login":          loginCmd(),
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}, os.Args[1:])
	stop()
	os.Exit(code)
}

// common are the flags every command that reads the config shares.
type common struct {
	config, toggles, stateDir, logLevel string
	wait                                time.Duration // for commands that start the servers
	// told is set once the note about a servers.yaml in the working
	// folder (parse) is on stderr, so a command says it once.
	told bool
}

// registerWait adds --wait, for commands that start the servers and print once.
func (c *common) registerWait(fs *pflag.FlagSet) {
	fs.DurationVar(&c.wait, "wait", 30*time.Second, "how long to wait for servers to start")
}

func (c *common) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "servers.yaml to use (default: servers.yaml in "+configDirHelp+", else the built-in default; one in the working folder only when named here)")
	fs.StringVar(&c.toggles, "toggles", "", "the tool toggles file (default: tools.yaml beside servers.yaml)")
	fs.StringVar(&c.stateDir, "state-dir", "", "where quiver keeps its state (default: $QUIVER_STATE_DIR, else "+stateDirHelp+")")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level on stderr: debug, info, warn or error")
}

// load finds and validates the configuration and its toggles file.
func (c *common) load(e *env) (*registry.Config, error) {
	cfg, err := c.parse(e)
	if err != nil {
		return nil, err
	}
	if cfg.Toggles, err = registry.LoadToggles(c.togglesPath(e)); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parse finds and validates the configuration, without its toggles.
func (c *common) parse(e *env) (*registry.Config, error) {
	// quiver's own tools are names servers.yaml may use with no server.
	opts := registry.ConfigOptions{Lookup: c.lookup(e), Reserved: builtin.Names()}
	path := c.serversPath(e)
	if c.config == "" && !c.told {
		here, _ := filepath.Abs("servers.yaml")
		if in, _ := filepath.Abs(path); fileExists(here) && here != in && !sameAsDefault(here, path) {
			c.told = true
			using := "the built-in default"
			if path != "" {
				using = path
			}
			fmt.Fprintf(e.stderr, "quiver: ./servers.yaml is not read: quiver uses a servers.yaml in the folder it runs in only when --config names it, "+
				"since a model may write files there through the servers quiver runs. Using %s. To use this one, pass --config servers.yaml (a host: give its absolute path in quiver's args).\n", using)
		}
	}
	if path != "" {
		return opts.Load(path)
	}
	return opts.Parse("(built-in servers.yaml)", quiver.DefaultConfig)
}

// sameAsDefault reports whether the servers.yaml at here is, byte for
// byte, the built-in one that quiver uses when path is "": in a clone of
// quiver's repository ./servers.yaml is the shipped default, and saying it
// is not read would only confuse.
func sameAsDefault(here, path string) bool {
	if path != "" {
		return false
	}
	b, err := os.ReadFile(here)
	return err == nil && bytes.Equal(b, quiver.DefaultConfig)
}

// serversPath is the servers.yaml in use; "" for the built-in one.
//
// Only --config and quiver's config folder are looked in, never the
// working folder: a host such as Claude Code starts quiver in the project,
// inside the fence, where a servers.yaml the model wrote would choose the
// servers the next serve (or a doctor run there) starts. Every place
// looked in is protected whether or not a file is there (ownPaths).
func (c *common) serversPath(e *env) string {
	if c.config != "" {
		return c.config
	}
	if p := filepath.Join(quiverConfigDir(e), "servers.yaml"); fileExists(p) {
		return p
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// quiverConfigDir is quiver's config folder: servers.yaml and tools.yaml
// when no --config names others.
func quiverConfigDir(e *env) string { return filepath.Join(configHome(e), "quiver") }

// ownPaths are every file and folder quiver reads a configuration,
// toggles, state or secret from, for these flags and this environment,
// whether or not it exists: the gate refuses them to every tool
// (deny.protected_path), so that no model can plant a file quiver (or a
// quiver command a person runs later without these flags) would read.
// secrets are those that hold secrets or may (quiver's config folder,
// the default state dir; the state dir in use is always one): a folder
// above them is refused to reads too (gate.WithSecrets). config are the
// configuration and toggles files named by flags, which may lie in a
// project: a walk of the project may read them, so they hold ${VAR} and
// ${keyring:NAME} references, not secrets (README, "Security").
func (c *common) ownPaths(e *env) (config, secrets []string) {
	config = []string{c.togglesPath(e)}
	if p := c.serversPath(e); p != "" {
		config = append(config, p)
	}
	secrets = []string{quiverConfigDir(e), defaultStateDir(e)}
	return config, append(secrets, defaultPlaces(runtime.GOOS, e.getenv)...)
}

// defaultPlaces are the config folder and state dir quiver uses when the
// environment names none: where `quiver doctor` in the person's own shell
// looks when the host that started this serve set XDG_CONFIG_HOME,
// XDG_STATE_HOME or QUIVER_STATE_DIR to somewhere else. Both the OS's
// place and the XDG one under the home folder are given on every OS, since
// the person's shell may set XDG_* where the host's does not.
func defaultPlaces(goos string, getenv func(string) string) []string {
	homeOnly := func(k string) string {
		switch k {
		case "XDG_CONFIG_HOME", "XDG_STATE_HOME", "QUIVER_STATE_DIR":
			return ""
		}
		return getenv(k)
	}
	home := homeDir(goos, homeOnly)
	if home == "" {
		return nil
	}
	return []string{
		filepath.Join(osConfigDir(goos, homeOnly), "quiver"),
		stateDir(goos, homeOnly),
		filepath.Join(home, ".config", "quiver"),
		filepath.Join(home, ".local", "state", "quiver"),
	}
}

// togglesPath is the toggles file: --toggles, else tools.yaml beside
// servers.yaml, else (built-in config) in quiver's config folder.
func (c *common) togglesPath(e *env) string {
	if c.toggles != "" {
		return c.toggles
	}
	if p := c.serversPath(e); p != "" {
		return filepath.Join(filepath.Dir(p), registry.TogglesFile)
	}
	return filepath.Join(quiverConfigDir(e), registry.TogglesFile)
}

func (c *common) state(e *env) (string, error) {
	dir := c.stateDir
	if dir == "" {
		dir = defaultStateDir(e)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state dir: %w", err)
	}
	return filepath.Abs(dir)
}

func (c *common) logger(e *env) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: use debug, info, warn or error", errUsage, c.logLevel)
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// Where quiver's folders are on each OS, for help texts.
const (
	configDirHelp = "quiver's config dir: $XDG_CONFIG_HOME/quiver or ~/.config/quiver on Linux, " +
		"~/Library/Application Support/quiver on macOS, %AppData%\\quiver on Windows"
	stateDirHelp = "$XDG_STATE_HOME/quiver or ~/.local/state/quiver on Linux, " +
		"~/Library/Application Support/quiver/state on macOS, %LocalAppData%\\quiver\\state on Windows"
)

// configHome is the folder quiver's config folder ("quiver") is in, on
// this OS.
func configHome(e *env) string { return quiverConfigHome(runtime.GOOS, e.getenv) }

// quiverConfigHome is the folder quiver's config folder is in for goos and
// getenv: $XDG_CONFIG_HOME when set, on every OS (whoever sets it asks for
// it, and so do tests), else where the OS keeps users' configuration.
func quiverConfigHome(goos string, getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return osConfigDir(goos, getenv)
}

// osConfigDir is os.UserConfigDir for goos and getenv, where desktop
// applications keep their settings (Claude Desktop's, VS Code's, and
// quiver's by default): $XDG_CONFIG_HOME or ~/.config on Linux and other
// unix, ~/Library/Application Support on macOS, %AppData% on Windows.
func osConfigDir(goos string, getenv func(string) string) string {
	switch goos {
	case "darwin", "ios":
		return filepath.Join(homeDir(goos, getenv), "Library", "Application Support")
	case "windows":
		if d := getenv("AppData"); d != "" {
			return d
		}
		return filepath.Join(homeDir(goos, getenv), "AppData", "Roaming")
	}
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	return filepath.Join(homeDir(goos, getenv), ".config")
}

// defaultStateDir is where quiver keeps its state (the ledger, grants,
// reload status) unless --state-dir says otherwise.
func defaultStateDir(e *env) string { return stateDir(runtime.GOOS, e.getenv) }

// stateDir is quiver's state folder for goos and getenv: $QUIVER_STATE_DIR
// (which quiver also hands to the servers it starts), else where the OS
// keeps an application's local, per-machine state: $XDG_STATE_HOME/quiver
// or ~/.local/state/quiver on Linux and other unix, ~/Library/Application
// Support/quiver/state on macOS, %LocalAppData%\quiver\state on Windows
// (local, not roaming: the ledger is this machine's). A set
// $XDG_STATE_HOME is honored on every OS.
func stateDir(goos string, getenv func(string) string) string {
	if d := getenv("QUIVER_STATE_DIR"); d != "" {
		return d
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "quiver")
	}
	switch goos {
	case "darwin", "ios":
		return filepath.Join(homeDir(goos, getenv), "Library", "Application Support", "quiver", "state")
	case "windows":
		d := getenv("LocalAppData")
		if d == "" {
			d = filepath.Join(homeDir(goos, getenv), "AppData", "Local")
		}
		return filepath.Join(d, "quiver", "state")
	}
	return filepath.Join(homeDir(goos, getenv), ".local", "state", "quiver")
}

// homeDir is the user's home for goos and getenv: $HOME, %USERPROFILE% on
// Windows, else what os.UserHomeDir finds.
func homeDir(goos string, getenv func(string) string) string {
	key := "HOME"
	if goos == "windows" {
		key = "USERPROFILE"
	}
	if d := getenv(key); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return home
}
