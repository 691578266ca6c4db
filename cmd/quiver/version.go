package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/quiver-mcp/quiver/registry"
)

// A release build (the Dockerfile, .goreleaser.yaml) sets these with
// -ldflags "-X main.version=… -X main.commit=… -X main.buildDate=…": an
// image is built without .git, so the toolchain records no commit, and it
// never records the build's time. Unset, version is registry.Version and
// the commit is the toolchain's.
var version, commit, buildDate string

// buildInfo is what quiver version prints: enough to tell two builds apart
// in a bug report.
type buildInfo struct {
	Version string `json:"version"`
	// Module is the module version the Go toolchain recorded: a tag for
	// go install …@vX, "(devel)" for a build from a clone.
	Module     string `json:"module,omitempty"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	// Modified says the work tree had changes the commit does not hold.
	Modified bool   `json:"modified,omitempty"`
	Built    string `json:"built,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildInfoFrom(bi)
}

// buildInfoFrom reads what the toolchain recorded in bi (nil: nothing).
// A build records its commit only from a clone's own work tree (not a git
// worktree, whose .git is a file) and unless -buildvcs=false.
func buildInfoFrom(bi *debug.BuildInfo) (b buildInfo) {
	b = buildInfo{Version: registry.Version, Built: buildDate, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if version != "" {
		b.Version = version
	}
	defer func() {
		if commit != "" {
			b.Commit = commit
		}
	}()
	if bi == nil {
		return b
	}
	b.Module = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.CommitTime = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

func (b buildInfo) write(w io.Writer) {
	fmt.Fprintf(w, "quiver %s\n", b.Version)
	switch {
	case b.Commit == "":
		fmt.Fprintln(w, "commit:   unknown (built without version control information)")
	case b.Modified:
		fmt.Fprintf(w, "commit:   %s, with changes not committed\n", b.Commit)
	default:
		fmt.Fprintf(w, "commit:   %s\n", b.Commit)
	}
	if b.CommitTime != "" {
		fmt.Fprintf(w, "committed: %s\n", b.CommitTime)
	}
	if b.Built != "" {
		fmt.Fprintf(w, "built:    %s\n", b.Built)
	}
	if b.Module != "" && b.Module != "(devel)" {
		fmt.Fprintf(w, "module:   %s\n", b.Module)
	}
	fmt.Fprintf(w, "go:       %s %s\n", b.Go, b.Platform)
}

func versionCmd() *command {
	return &command{
		summary: "print quiver's version, commit and Go version",
		usage:   "version [--json]",
		help: `
Prints quiver's version, the commit it was built from (and whether the
work tree had changes), the commit's time, the build date when the build
set one, and the Go version and platform. "quiver --version" prints the
same.

Flags:
  --json   one JSON object: version, module, commit, commit_time,
           modified, built, go, platform`,
		run: func(ctx context.Context, e *env, args []string) error {
			var asJSON bool
			fs := newFlags("version")
			fs.BoolVar(&asJSON, "json", false, "JSON")
			if err := parseFlagsOnly(fs, args); err != nil {
				return err
			}
			b := readBuildInfo()
			if asJSON {
				out, _ := json.Marshal(b)
				fmt.Fprintln(e.stdout, string(out))
				return nil
			}
			b.write(e.stdout)
			return nil
		},
	}
}
