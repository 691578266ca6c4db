package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/quiver-mcp/quiver/internal/exampleserver"
)

func exampleServerCmd() *command {
	return &command{
		summary: "run the example MCP server that ships with quiver (stdio)",
		usage:   "example-server [--notes FILE] [--start-delay DURATION] [--test-tools]",
		help: `
Runs a small, real MCP server over stdio: notes kept in a JSON file, text
search in a directory, and the current time. The default servers.yaml runs
it so quiver works on a machine with nothing else installed.

Flags:
  --notes FILE            the notes file (default: example-notes.json in
                          $QUIVER_STATE_DIR, else in quiver's state dir)
  --start-delay DURATION  wait this long before answering (to test slow servers)
  --test-tools            also offer echo, sleep, crash and big (for tests)`,
		run: func(ctx context.Context, e *env, args []string) error {
			var notes string
			var delay time.Duration
			var testTools bool
			fs := newFlags("example-server")
			fs.StringVar(&notes, "notes", "", "notes file")
			fs.DurationVar(&delay, "start-delay", 0, "delay before serving")
			fs.BoolVar(&testTools, "test-tools", false, "offer test tools")
			if err := parseFlagsOnly(fs, args); err != nil {
				return err
			}
			if notes == "" {
				notes = filepath.Join(defaultStateDir(e), "example-notes.json")
			}
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return nil
				}
			}
			err := exampleserver.Serve(ctx, exampleserver.Options{NotesFile: notes, TestTools: testTools}, e.stdin, e.stdout)
			if err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("example server: %w", err)
			}
			return nil
		},
	}
}
