// Command rug runs the rug-pull test server (package rugserver) over stdio
// on the tool file its one argument names. quiver's end-to-end tests build
// it once per run.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/quiver-mcp/quiver/internal/rugserver"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: rug TOOLS.json")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rugserver.Serve(ctx, os.Args[1], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rug:", err)
		os.Exit(1)
	}
}
