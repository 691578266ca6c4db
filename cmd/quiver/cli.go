package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/quiver-mcp/quiver/internal/textdist"
)

// The command line is a cobra tree built from commands(): cobra finds the
// command, answers "help", "--help" and "completion", and says what an
// unknown command may have meant; each command parses its own flags on a
// pflag set (newFlags), where flags may come before or after the words
// they go with (quiver tools disable x --config c.yaml reads --config as
// a flag) and "--" ends them.

// newFlags returns a flag set whose errors come back as usage errors and
// whose flags may stand anywhere among the command's words.
func newFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SetInterspersed(true)
	fs.SortFlags = false
	return fs
}

func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			if best := closestFlag(fs, name); best != "" {
				return fmt.Errorf("%w: %v; did you mean --%s?", errUsage, err, best)
			}
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// closestFlag is the flag of fs one or two typing mistakes from name, if
// one is.
func closestFlag(fs *pflag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *pflag.Flag) {
		if d := textdist.OSA(name, f.Name); d < bestD && d < len(f.Name) {
			best, bestD = f.Name, d
		}
	})
	return best
}

// parseFlagsOnly parses args for a command that takes no positional
// arguments: a stray word is a usage error, not silently ignored.
func parseFlagsOnly(fs *pflag.FlagSet, args []string) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// exitError carries a command's exit code out of cobra, which has
// printed nothing for it: the command's wrapper already said what went
// wrong.
type exitError struct{ code int }

func (x exitError) Error() string { return fmt.Sprintf("exit %d", x.code) }

func run(ctx context.Context, e *env, args []string) int {
	root := cliTree(e, commands())
	root.SetArgs(args)
	_, err := root.ExecuteContextC(ctx)
	var x exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &x):
		return x.code
	default:
		// cobra's own: an unknown command or a bad word to "completion"
		// or "help"; the caller's words, so a usage error.
		fmt.Fprintf(e.stderr, "quiver: %v\nRun \"quiver help\" for the commands.\n", err)
		return exitUsage
	}
}

// cliTree is quiver's cobra tree: one child per command in cmds, plus
// cobra's "completion" and quiver's "help".
func cliTree(e *env, cmds map[string]*command) *cobra.Command {
	root := &cobra.Command{
		Use:           "quiver",
		Short:         "one MCP server in front of many, with a small tool surface, search, and a policy gate",
		SilenceErrors: true,
		SilenceUsage:  true,
		// Without a command, say what there is; that is a usage error.
		RunE: func(cmd *cobra.Command, args []string) error {
			usage(e.stderr, cmd)
			return exitError{exitUsage}
		},
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetIn(e.stdin)
	// "quiver --version" is what people try first; it prints what
	// "quiver version" prints.
	var v strings.Builder
	readBuildInfo().write(&v)
	root.Version = readBuildInfo().Version
	root.SetVersionTemplate(strings.ReplaceAll(v.String(), "{{", `{{"{{"}}`))
	cobraHelp := root.HelpFunc()
	for _, name := range slices.Sorted(maps.Keys(cmds)) {
		root.AddCommand(cobraCommand(e, name, cmds[name]))
	}
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil && comp != root {
		comp.Short = "print a shell completion script: bash, zsh, fish or powershell"
		comp.RunE = func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(e.stderr, "quiver completion: say which shell: quiver completion bash|zsh|fish|powershell\nRun \"quiver completion SHELL --help\" for how to install it.")
			return exitError{exitUsage}
		}
	}
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root {
			usage(e.stdout, root)
			return
		}
		if c, ok := cmds[cmd.Name()]; ok && cmd.Parent() == root {
			printHelp(e.stdout, c)
			return
		}
		cobraHelp(cmd, args)
	})
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [COMMAND]",
		Short: "print the commands, or one command's flags",
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return commandNames(root, toComplete), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				usage(e.stdout, root)
				return nil
			}
			target, _, err := root.Find(args)
			if err != nil || target == root {
				fmt.Fprintf(e.stderr, "quiver: no command %q; run \"quiver help\" for the list\n", strings.Join(args, " "))
				return exitError{exitUsage}
			}
			target.HelpFunc()(target, args)
			return nil
		},
	})
	return root
}

// cobraCommand is c as a cobra command. cobra does not parse its flags:
// c.run does (newFlags), so that each command keeps its own words; cobra
// only needs the flag names to complete them, which the help lists.
func cobraCommand(e *env, name string, c *command) *cobra.Command {
	return &cobra.Command{
		Use:                name,
		Short:              c.summary,
		DisableFlagParsing: true,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if n := len(args); n > 0 && args[n-1] == "--log-level" {
				return withPrefix([]string{"debug", "info", "warn", "error"}, toComplete), cobra.ShellCompDirectiveNoFileComp
			}
			if strings.HasPrefix(toComplete, "-") {
				return withPrefix(helpFlags(c), toComplete), cobra.ShellCompDirectiveNoFileComp
			}
			if len(c.subcommands) > 0 && len(args) == 0 {
				return withPrefix(c.subcommands, toComplete), cobra.ShellCompDirectiveNoFileComp
			}
			if c.complete != nil {
				if words := c.complete(e, args, toComplete); len(words) > 0 {
					return words, cobra.ShellCompDirectiveNoFileComp
				}
			}
			return nil, cobra.ShellCompDirectiveDefault
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitError{runCommand(cmd.Context(), e, name, c, args)}
		},
	}
}

// runCommand runs c with args and says what went wrong, the way every
// command does: usage errors (exit 2) with the synopsis, failures (exit
// 1) with the command's name.
func runCommand(ctx context.Context, e *env, name string, c *command, args []string) int {
	if wantsHelp(args) {
		printHelp(e.stdout, c)
		return exitOK
	}
	if !c.raw {
		te := *e
		te.stdout, te.stderr = &terminalWriter{w: e.stdout}, &terminalWriter{w: e.stderr}
		e = &te
	}
	err := c.run(ctx, e, args)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, pflag.ErrHelp):
		printHelp(e.stdout, c)
		return exitOK
	case errors.Is(err, errUsage):
		// The error, the synopsis and where the rest is: never the whole
		// help, and "usage" once.
		msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
		fmt.Fprintf(e.stderr, "quiver %s: %s\nusage: quiver %s\nRun \"quiver %s --help\" for its flags.\n", name, msg, c.usage, name)
		return exitUsage
	default:
		fmt.Fprintf(e.stderr, "quiver %s: %v\n", name, err)
		return exitFailure
	}
}

// wantsHelp reports whether args ask for help (-h or --help before any
// "--"), which every command answers the same way, whatever else it takes.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help":
			return true
		}
	}
	return false
}

func printHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: quiver %s\n\n%s\n", c.usage, strings.TrimSpace(c.help))
}

func usage(w io.Writer, root *cobra.Command) {
	fmt.Fprintln(w, "quiver: "+root.Short+".")
	fmt.Fprintln(w, "\nusage: quiver COMMAND [flags]\n\ncommands:")
	for _, sub := range root.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		fmt.Fprintf(w, "  %-15s %s\n", sub.Name(), sub.Short)
	}
	fmt.Fprintln(w, "\nRun \"quiver help COMMAND\" or \"quiver COMMAND --help\" for a command's flags;")
	fmt.Fprintln(w, "flags may come before or after a command's other words.")
}

var flagInHelp = regexp.MustCompile(`(?:^|[\s\[|(])(--[a-z][a-z0-9-]*)`)

// helpFlags are the flags c's usage and help name, for completion.
func helpFlags(c *command) []string {
	seen := map[string]bool{"--help": true}
	out := []string{"--help"}
	for _, m := range flagInHelp.FindAllStringSubmatch(c.usage+"\n"+c.help, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

func commandNames(root *cobra.Command, prefix string) []string {
	var out []string
	for _, sub := range root.Commands() {
		if !sub.Hidden && strings.HasPrefix(sub.Name(), prefix) {
			out = append(out, sub.Name())
		}
	}
	return out
}

func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}
