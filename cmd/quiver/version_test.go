package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/registry"
)

// TestVersion: quiver --version is accepted and prints what quiver version
// prints; --json gives the version, the Go version and the platform
// (issue 29).
func TestVersion(t *testing.T) {
	t.Parallel()
	flag, err := exec.Command(quiverBin, "--version").Output()
	if err != nil {
		t.Fatalf("quiver --version: %v", err)
	}
	cmd, err := exec.Command(quiverBin, "version").Output()
	if err != nil || !bytes.Equal(flag, cmd) || !strings.HasPrefix(string(cmd), "quiver "+registry.Version+"\n") ||
		!strings.Contains(string(cmd), "\ncommit:") || !strings.Contains(string(cmd), "\ngo:       "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("quiver --version printed\n%s\nquiver version (%v) printed\n%s", flag, err, cmd)
	}
	out, err := exec.Command(quiverBin, "version", "--json").Output()
	var b buildInfo
	if err != nil || json.Unmarshal(out, &b) != nil || b.Version != registry.Version || b.Go != runtime.Version() || b.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("quiver version --json: %v\n%s", err, out)
	}
}

// TestBuildInfoFrom: the commit, its time and a dirty work tree come from
// what the toolchain recorded.
func TestBuildInfoFrom(t *testing.T) {
	t.Parallel()
	b := buildInfoFrom(&debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-01T23:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}})
	var w strings.Builder
	b.write(&w)
	for _, want := range []string{"commit:   0123456789abcdef0123456789abcdef01234567, with changes not committed\n",
		"committed: 2026-12-01T23:00:00Z\n", "module:   v0.2.0\n"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("want %q in\n%s", want, w.String())
		}
	}
	if b := buildInfoFrom(nil); b.Commit != "" || b.Go != runtime.Version() {
		t.Errorf("no build info: %+v", b)
	}
}
