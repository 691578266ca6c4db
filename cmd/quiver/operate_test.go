package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quiver-mcp/quiver/registry"
)

func TestServeLogFormat(t *testing.T) {
	t.Parallel()
	logOnce := func(format string) string {
		var stderr bytes.Buffer
		o := operating{logFormat: format}
		log, closer, err := o.logger(&env{stderr: &stderr, getenv: func(string) string { return "" }}, &common{logLevel: "info"})
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		log.Info("call refused", "session", "s1", "tool", "ex__notes_delete", "code", "deny.rule")
		return stderr.String()
	}
	text, js := logOnce("text"), logOnce("json")
	var rec map[string]any
	if err := json.Unmarshal([]byte(js), &rec); err != nil {
		t.Fatalf("--log-format json wrote %q: %v", js, err)
	}
	for k, v := range map[string]string{"level": "INFO", "msg": "call refused", "session": "s1", "tool": "ex__notes_delete", "code": "deny.rule"} {
		if rec[k] != v {
			t.Errorf("json: %s = %v, want %q", k, rec[k], v)
		}
		if want := k + "=" + v; k != "msg" && !strings.Contains(text, want) {
			t.Errorf("text lacks %s: %q", want, text)
		}
	}
	if _, ok := rec["time"]; !ok || !strings.HasPrefix(text, "time=") {
		t.Errorf("both formats carry the time: %q / %q", text, js)
	}

	o := operating{logFormat: "yaml"}
	if _, _, err := o.logger(&env{stderr: &bytes.Buffer{}}, &common{logLevel: "info"}); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "use text or json") {
		t.Errorf("--log-format yaml: %v", err)
	}
}

func TestServeLogFile(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	path := filepath.Join(t.TempDir(), "new", "quiver.log")
	o := operating{logFormat: "json", logFile: path}
	log, closer, err := o.logger(&env{stderr: &stderr}, &common{logLevel: "info"})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("quiver started")
	closer.Close()
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"msg":"quiver started"`) || stderr.Len() != 0 {
		t.Errorf("file %q (%v), stderr %q", b, err, stderr.String())
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 && os.PathSeparator == '/' {
		t.Errorf("the log file is readable by others: %v", fi.Mode())
	}
}

func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	parse := func(yaml string) *registry.Config {
		cfg, err := registry.ParseConfig("servers.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	withListen := parse("metrics:\n  listen: 0.0.0.0:9090\n")
	for _, tc := range []struct {
		name, flag string
		cfg        *registry.Config
		want, err  string
	}{
		{"none", "", parse("servers: {}\n"), "", ""},
		{"from_servers_yaml", "", withListen, "0.0.0.0:9090", ""},
		{"flag_wins", "127.0.0.1:9999", withListen, "127.0.0.1:9999", ""},
		{"not_an_address", "", parse("metrics:\n  listen: [a, b]\n"), "", "servers.yaml:2: metrics.listen must be an address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := operating{metrics: tc.flag}
			got, err := o.metricsAddr(tc.cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
