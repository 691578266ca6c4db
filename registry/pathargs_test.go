package registry

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPathArgs(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	cfg, err := ParseConfig("servers.yaml", []byte("servers:\n  fs:\n    command: fs-server\n    path_args: {write_report: [out, template]}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cfg.Server("fs")
	if got := s.PathArgs["write_report"]; !slices.Equal(got, []string{"out", "template"}) {
		t.Fatalf("path_args = %v", s.PathArgs)
	}
	_, err = ParseConfig("servers.yaml", []byte("servers:\n  fs:\n    command: fs-server\n    path_args: {write_report: []}\n"), noEnv)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "servers.yaml:4: servers.fs.path_args") {
		t.Fatalf("an empty list must be an error at its line: %v", err)
	}
}

func TestOneDocumentOnly(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	for _, ok := range []string{"---\nservers: {}\n", "servers: {}\n---\n", "servers: {}\n"} {
		if _, err := ParseConfig("servers.yaml", []byte(ok), noEnv); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	_, err := ParseConfig("servers.yaml", []byte("servers: {}\n---\nsurface: {reveal: call}\n"), noEnv)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "second YAML document") {
		t.Fatalf("a second document must not be ignored silently: %v", err)
	}
}
