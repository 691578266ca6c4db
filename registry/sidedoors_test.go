package registry

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests in this file close the side doors of issue 10: secrets that
// reached a child, a log or a command's output by ways other than a result.

// TestChildSeesOnlyTheDefaultEnvironment: a server that prints its
// environment (server-everything's get-env) shows none of quiver's own
// variables but the default set, its env and its env_passthrough.
// Not parallel: it sets quiver's environment.
// childEnviron calls exposed, a test server's environ tool, and returns
// its answer as printed and as a map.
func childEnviron(t *testing.T, h *harness, exposed string) (string, map[string]string) {
	t.Helper()
	out, err := h.call(exposed, `{}`)
	if err != nil {
		t.Fatalf("%s: %v", exposed, err)
	}
	m := map[string]string{}
	for _, kv := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return out, m
}

func TestChildSeesOnlyTheDefaultEnvironment(t *testing.T) {
	t.Setenv("QUIVER_TEST_DB_PASS", "hunter2-hunter2")
	t.Setenv("QUIVER_TEST_REGION", "eu-west-1")
	t.Setenv("QUIVER_TEST_GLOB_A", "glob-a")
	t.Setenv("LC_TIME", "C")
	t.Setenv("npm_config_cache", "/tmp/npm-cache")
	h := startRegistry(t, "servers:\n"+
		"  plain:\n    command: ${BIN}\n    env: {"+childEnv+": env, MINE: mine}\n"+
		"  wider:\n    command: ${BIN}\n    env: {"+childEnv+": env}\n    env_passthrough: [QUIVER_TEST_REGION, QUIVER_TEST_GLOB_*]\n",
		nil, Options{StateDir: t.TempDir()})
	h.ready()
	environ := func(exposed string) map[string]string {
		_, m := childEnviron(t, h, exposed)
		return m
	}
	plain := environ("plain__environ")
	for _, k := range []string{"QUIVER_TEST_DB_PASS", "QUIVER_TEST_REGION", "QUIVER_TEST_GLOB_A"} {
		if _, ok := plain[k]; ok {
			t.Errorf("a child without env_passthrough sees %s", k)
		}
	}
	for k, want := range map[string]string{"MINE": "mine", "LC_TIME": "C", "npm_config_cache": "/tmp/npm-cache",
		"PATH": os.Getenv("PATH"), childEnv: "env"} {
		if plain[k] != want {
			t.Errorf("the child's %s = %q; want %q", k, plain[k], want)
		}
	}
	if plain["QUIVER_STATE_DIR"] == "" {
		t.Error("the child lacks QUIVER_STATE_DIR")
	}
	for k := range plain {
		s := Server{}
		if k != "" && !s.passes(k) && k != "MINE" && k != childEnv && k != "QUIVER_STATE_DIR" {
			t.Errorf("the child sees %s, which is outside the default set", k)
		}
	}
	wider := environ("wider__environ")
	if wider["QUIVER_TEST_REGION"] != "eu-west-1" || wider["QUIVER_TEST_GLOB_A"] != "glob-a" {
		t.Errorf("env_passthrough did not pass its variables: %v", wider)
	}
	if _, ok := wider["QUIVER_TEST_DB_PASS"]; ok {
		t.Error("env_passthrough passed a variable it does not name")
	}
}

func TestChildEnviron(t *testing.T) {
	t.Parallel()
	parent := []string{"PATH=/bin", "HOME=/home/q", "DB_PASS=x", "LC_ALL=C", "npm_config_registry=https://r",
		"AWS_REGION=eu", "AWS_SECRET_ACCESS_KEY=y", "XDG_CACHE_HOME=/c", "=C:=C:\\"}
	s := Server{Env: map[string]string{"HOME": "/home/srv", "FOO": "bar"}, EnvPassthrough: []string{"AWS_REGION"}}
	got := s.childEnviron(parent, "QUIVER_STATE_DIR=/s")
	want := []string{"PATH=/bin", "HOME=/home/srv", "LC_ALL=C", "npm_config_registry=https://r", "AWS_REGION=eu",
		"XDG_CACHE_HOME=/c", "FOO=bar", "QUIVER_STATE_DIR=/s"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("childEnviron = %q\nwant %q", got, want)
	}
	s.EnvPassthrough = []string{"AWS_*"}
	if got := s.childEnviron(parent); !slices.Contains(got, "AWS_SECRET_ACCESS_KEY=y") {
		t.Errorf("AWS_* did not pass AWS_SECRET_ACCESS_KEY: %q", got)
	}
}

func TestEnvPassthroughNames(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, "servers:\n  a:\n    command: x\n    env_passthrough: [AWS_REGION, GOOGLE_*]\n", nil)
	if s, _ := cfg.Server("a"); !slices.Equal(s.EnvPassthrough, []string{"AWS_REGION", "GOOGLE_*"}) || !slices.Equal(s.Written.EnvPassthrough, s.EnvPassthrough) {
		t.Errorf("EnvPassthrough = %q, written %q", s.EnvPassthrough, s.Written.EnvPassthrough)
	}
	for _, bad := range []string{
		"servers:\n  a:\n    command: x\n    env_passthrough: [\"NOT A NAME\"]\n",
		"servers:\n  a:\n    command: x\n    env_passthrough: [\"*\"]\n",
		"servers:\n  a:\n    command: x\n    env_passthrough: [\"A*B\"]\n",
	} {
		_, err := ParseConfig("servers.yaml", []byte(bad), testLookup(nil))
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "servers.yaml:4: servers.a.env_passthrough:") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	_, err := ParseConfig("servers.yaml", []byte("servers:\n  r:\n    url: https://h/mcp\n    env_passthrough: [A]\n"), testLookup(nil))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "env_passthrough") {
		t.Errorf("env_passthrough on a url server: %v", err)
	}
}

// TestSecretFlagValuesAreSecrets: the value after --password and the like,
// and the X of --password=X, are secrets: redacted wherever they show, and
// shown redacted in Written when the file has them literally.
func TestSecretFlagValuesAreSecrets(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DB_PASS": "hunter2-hunter2", "K": "k-0123456789", "ROOT": "/srv/data", "SSH_ID": "/home/me/.ssh/id"}
	cfg := mustParse(t, `
servers:
  db:
    command: server
    args: [--password, "${DB_PASS}", "--api-key=${K}", --token, literal-token-123, --db-password=literal-pw-456,
           --user, bob-the-user, --password=set-here-1234, not-a-password-value, --keywords, files-and-more, --token-file, /etc/token, --root, "${ROOT}", --clientSecret, cs-abcdefgh, --key, ~/.ssh/id_ed25519, --auth, none, --private-key, "${SSH_ID}"]
`, vars)
	s, _ := cfg.Server("db")
	got := map[string]string{}
	for _, sec := range cfg.Secrets {
		got[sec.Var] = sec.Value
	}
	want := map[string]string{"DB_PASS": "hunter2-hunter2", "K": "k-0123456789", "--token": "literal-token-123",
		"--db-password": "literal-pw-456", "--clientSecret": "cs-abcdefgh", "--password": "set-here-1234"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("secrets %v\nwant %v", got, want)
	}
	shown := strings.Join(s.Written.Args, " ")
	if w := "--password ${DB_PASS} --api-key=${K} --token [redacted:--token] --db-password=[redacted:--db-password] " +
		"--user bob-the-user --password=[redacted:--password] not-a-password-value --keywords files-and-more --token-file /etc/token --root ${ROOT} --clientSecret [redacted:--clientSecret] --key ~/.ssh/id_ed25519 --auth none --private-key ${SSH_ID}"; shown != w {
		t.Errorf("Written.Args = %s\nwant          %s", shown, w)
	}
	if red := Redact(strings.Join(s.Args, " "), cfg.Secrets); strings.Contains(red, "hunter2") || strings.Contains(red, "literal-") ||
		strings.Contains(red, "0123456789") || !strings.Contains(red, "bob-the-user") {
		t.Errorf("the args as redacted: %s", red)
	}
	if !slices.Contains(s.Args, "literal-token-123") || !slices.Contains(s.Args, "--db-password=literal-pw-456") {
		t.Errorf("the child must still get the values: %q", s.Args)
	}
}

func TestSecretFlag(t *testing.T) {
	t.Parallel()
	for arg, want := range map[string]bool{
		"--password": true, "-password": true, "--api-key": true, "--apiKey": true, "--access_token": true,
		"--client-secret": true, "--key": true, "--auth": false, "--passwd=x": true, "--github-pat": true,
		"--keywords": false, "--token-file": false, "--author": false, "-p": false, "--port": false,
		"password": false, "--": false, "--verbose": false, "--key-file": false,
	} {
		if _, got := secretFlag(arg); got != want {
			t.Errorf("secretFlag(%q) = %v; want %v", arg, got, want)
		}
	}
}

// TestEveryURLVariableButTheHostIsSecret: a variable in a url's path is a
// secret like one in its query; one that is the whole host or port is not.
func TestEveryURLVariableButTheHostIsSecret(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"ID": "tenant-4711-abc", "HOST": "mcp.example.com", "PORT": "8443", "SUB": "acme-corp"}
	cfg := mustParse(t, `
servers:
  path:
    url: https://h.example.com/${ID}/sse
    transport: sse
  hostport:
    url: https://${HOST}:${PORT}/mcp
  sub:
    url: https://${SUB}.example.com/mcp
`, vars)
	got := map[string]bool{}
	for _, s := range cfg.Secrets {
		got[s.Var] = true
	}
	if want := map[string]bool{"ID": true, "SUB": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("secrets %v; want %v", got, want)
	}
}

// TestURLPathSecretIsRedactedInStatus: doctor shows a server's last error,
// which quotes its url; a variable in the url's path is redacted there.
func TestURLPathSecretIsRedactedInStatus(t *testing.T) {
	t.Parallel()
	const id = "tenant-4711-abcdef"
	h := startRegistry(t, "servers:\n  remote:\n    url: http://127.0.0.1:1/${ID}/sse\n    transport: sse\n",
		map[string]string{"ID": id}, Options{})
	cat := h.ready()
	st, _ := cat.Status("remote")
	if st.State != StateDown || !strings.Contains(st.LastError, "[redacted:ID]") || strings.Contains(st.LastError, id) || strings.Contains(h.logs.String(), id) {
		t.Errorf("state %s, last error %q; the id must be redacted:\n%s", st.State, st.LastError, h.logs)
	}
}

// TestLiteralSecretsInEnvAndHeaders: a token written into the file itself
// is a secret, shown redacted in Written; other literals stay readable.
func TestLiteralSecretsInEnvAndHeaders(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
servers:
  a:
    command: x
    env: {API_KEY: literal-key-value, PLAIN: hello-world, USE_AUTH: "true", AUTH_MODE: oauth, TOKEN_FILE: /run/secrets/token}
  b:
    url: https://h/mcp
    headers: {Authorization: Bearer lit-0123456789abcdef, X-Plain: plain-value}
  c:
    url: https://h/mcp
    headers: {Authorization: Basic dXNlcjpwYXNzd29yZA==}
`, nil)
	var got []string
	for _, sec := range cfg.Secrets {
		got = append(got, sec.Var+"="+sec.Value)
	}
	slices.Sort(got)
	// Settings under a secret's name (a flag, a mode, a path) are not
	// secrets: hiding "true" would blank it out of every result.
	if want := []string{"API_KEY=literal-key-value", "Authorization=Bearer lit-0123456789abcdef", "Authorization=dXNlcjpwYXNzd29yZA=="}; !slices.Equal(got, want) {
		t.Errorf("secrets %q\nwant %q", got, want)
	}
	a, _ := cfg.Server("a")
	b, _ := cfg.Server("b")
	if a.Env["API_KEY"] != "literal-key-value" || a.Written.Env["API_KEY"] != "[redacted:API_KEY]" || a.Written.Env["PLAIN"] != "hello-world" {
		t.Errorf("env %v, written %v", a.Env, a.Written.Env)
	}
	if b.Written.Headers["Authorization"] != "[redacted:Authorization]" || b.Written.Headers["X-Plain"] != "plain-value" {
		t.Errorf("headers written %v", b.Written.Headers)
	}
	if red := Redact("key literal-key-value, auth Bearer lit-0123456789abcdef", cfg.Secrets); strings.Contains(red, "literal-key") || strings.Contains(red, "lit-0123") {
		t.Errorf("Redact = %q", red)
	}
}

func TestPathBase(t *testing.T) {
	t.Parallel()
	lookup := testLookup(map[string]string{"HOME": "/home/quiver", "DATA": "/srv/data"})
	for _, tc := range []struct{ entry, want string }{
		{"command: x\n    path_base: roots", PathBaseRoots},
		{"command: x\n    path_base: none", PathBaseNone},
		{"command: x\n    path_base: cwd", PathBaseCwd},
		{"command: x\n    path_base: /srv/../srv/./data/", "/srv/data"},
		{"command: x\n    path_base: ${DATA}", "/srv/data"},
		{"command: x\n    env: {HOME: /home/srv}\n    path_base: ~/proj", "/home/srv/proj"},
		{"command: x\n    path_base: ~/proj", "/home/quiver/proj"},
		{"command: x\n    path_base: \"~\"", "/home/quiver"},
		{"command: x\n    path_base: data", "/etc/quiver/data"},
		{"command: x\n    path_base: ./root", "/etc/quiver/root"},
		{"command: x\n    path_base: src", "/etc/quiver/src"},
		{"command: x\n    path_base: ../shared", "/etc/shared"},
		{"command: x", ""},
		{"url: https://h/mcp\n    path_base: /srv", "/srv"},
	} {
		cfg, err := ParseConfig("/etc/quiver/servers.yaml", []byte("servers:\n  a:\n    "+tc.entry+"\n"), lookup)
		if err != nil {
			t.Errorf("%q: %v", tc.entry, err)
			continue
		}
		if s, _ := cfg.Server("a"); s.PathBase != tc.want {
			t.Errorf("%q: PathBase = %q; want %q", tc.entry, s.PathBase, tc.want)
		}
	}
	for _, tc := range []struct{ entry, msg string }{
		{"command: x\n    path_base: ~bob/x", "only ~ and ~/"},
		{"command: x\n    env: {HOME: \"\"}\n    path_base: ~/x", "has no HOME"},
		{"url: https://h/mcp\n    path_base: ~/x", "has no HOME"},
		{"command: x\n    path_base: \" \"", "is empty"},
		// A word that looks like a keyword is refused, not taken as a
		// folder beside servers.yaml (issue 29).
		{"command: x\n    path_base: root", `"root" is not a path_base keyword: did you mean roots? (a folder of that name beside servers.yaml is written ./root)`},
		{"command: x\n    path_base: Roots", "did you mean roots?"},
		{"command: x\n    path_base: cdw", "did you mean cwd?"},
		{"command: x\n    path_base: NONE", "did you mean none?"},
	} {
		_, err := ParseConfig("/etc/quiver/servers.yaml", []byte("servers:\n  a:\n    "+tc.entry+"\n"), lookup)
		line := strings.Count(tc.entry, "\n") + 3
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "servers.yaml:"+strconv.Itoa(line)+": servers.a.path_base:") ||
			!strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: %v; want an error at line %d saying %q", tc.entry, err, line, tc.msg)
		}
	}
}

func TestHomeAndRootDirs(t *testing.T) {
	t.Parallel()
	home, root := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "f.txt")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	lookup := testLookup(map[string]string{"HOME": "/home/quiver", "ROOT": root, "SRVHOME": home, "FILE": file})
	cfg, err := ParseConfig("servers.yaml", []byte(`
servers:
  fs:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", "${ROOT}/", /does/not/exist, "~/sub", relative, "${FILE}", --root=/x]
    env: {HOME: "${SRVHOME}"}
    path_base: roots
  inherits:
    command: x
  remote:
    url: https://h/mcp
`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	fs, _ := cfg.Server("fs")
	if fs.Home() != home {
		t.Errorf("Home = %q; want the env's %q", fs.Home(), home)
	}
	if got, want := fs.RootDirs(), []string{root, filepath.Join(home, "sub")}; !slices.Equal(got, want) {
		t.Errorf("RootDirs = %q; want %q", got, want)
	}
	if s, _ := cfg.Server("inherits"); s.Home() != "/home/quiver" {
		t.Errorf("Home = %q; want quiver's own HOME", s.Home())
	}
	if s, _ := cfg.Server("remote"); s.Home() != "" || s.RootDirs() != nil {
		t.Errorf("a remote server: Home %q, RootDirs %q", s.Home(), s.RootDirs())
	}
}

// TestAddedServerSecretsAreRedactedFromItsFirstTry: Apply starts a new
// server before its configuration is in force; the secrets of its entry
// are hidden from its first error and its first stderr lines all the same.
func TestAddedServerSecretsAreRedactedFromItsFirstTry(t *testing.T) {
	t.Parallel()
	const id, token = "tenant-4711-abcdef", "s3cr3t-t0ken-added"
	h := startRegistry(t, "servers: {}\n", nil, Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	h.ready()
	apply(t, h, "servers:\n  remote:\n    url: http://127.0.0.1:1/${ID}/sse\n    transport: sse\n"+
		exampleServer("talky", childStderrEnv+": \"token=${TOKEN}\""), map[string]string{"ID": id, "TOKEN": token})
	eventually(t, 10*time.Second, "the stderr line logged", func() bool { return len(h.logs.find("stderr: token=", "server", "talky")) > 0 })
	st, _ := h.reg.Catalog().Status("remote")
	if st.State != StateDown || !strings.Contains(st.LastError, "[redacted:ID]") {
		t.Errorf("state %s, last error %q", st.State, st.LastError)
	}
	if logs := h.logs.String(); strings.Contains(logs, id) || strings.Contains(logs, token) || strings.Contains(st.LastError, id) {
		t.Errorf("a secret of the added servers shows:\n%s\nlast error %q", logs, st.LastError)
	}
}

// TestTransportLogsAreRedacted: what mcp-go's transports log through
// quiver's logger (errors quoting a server's url) is redacted.
func TestTransportLogsAreRedacted(t *testing.T) {
	t.Parallel()
	sink := &logSink{}
	secrets := []Secret{{Var: "ID", Value: "tenant-4711-abcdef"}}
	log := slog.New(redactingHandler{inner: (&recordHandler{sink: sink}), secrets: func() []Secret { return secrets }}).With("server", "remote")
	log.Error("failed to listen to server. retry in 1 second tenant-4711-abcdef",
		"err", errors.New(`Get "https://h/tenant-4711-abcdef/sse": EOF`), "status", 500,
		slog.Group("req", "url", "https://h/tenant-4711-abcdef/sse"))
	recs := sink.records()
	if len(recs) != 1 {
		t.Fatalf("records %v", recs)
	}
	if out := sink.String(); strings.Contains(out, "tenant-4711") || !strings.Contains(out, "[redacted:ID]") ||
		!strings.Contains(out, "status=500") || !strings.Contains(out, "server=remote") {
		t.Errorf("logged %s", out)
	}
}

// TestConfigErrorsQuoteURLsAsWritten: a url that is wrong once expanded is
// quoted as the file has it: the value may hold a key, and a config error
// reaches the log and the terminal.
func TestConfigErrorsQuoteURLsAsWritten(t *testing.T) {
	t.Parallel()
	_, err := ParseConfig("servers.yaml", []byte("servers:\n  r:\n    url: ${FULL}\n"), testLookup(map[string]string{"FULL": "ftp://me:hunter2pw@h/mcp"}))
	if err == nil || strings.Contains(err.Error(), "hunter2pw") || !strings.Contains(err.Error(), "${FULL}") {
		t.Errorf("err = %v", err)
	}
}

// TestURLPasswordInArgsIsASecret: a url with a password written literally
// in args (postgresql://admin:PW@host) is a secret: redacted wherever it
// shows, and Written (config effective) shows the url without it
// (issue 29).
func TestURLPasswordInArgsIsASecret(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
servers:
  pg:
    command: server
    args: ["postgresql://admin:hunter2-pw@localhost/app", "https://example.com/a@b", "postgresql://${U}:${P}@h/db"]
`, map[string]string{"U": "me", "P": "var-pw-1234"})
	s, _ := cfg.Server("pg")
	if w := "postgresql://admin:[redacted:password]@localhost/app https://example.com/a@b postgresql://${U}:${P}@h/db"; strings.Join(s.Written.Args, " ") != w {
		t.Errorf("Written.Args = %s\nwant          %s", strings.Join(s.Written.Args, " "), w)
	}
	if s.Args[0] != "postgresql://admin:hunter2-pw@localhost/app" {
		t.Errorf("the child must still get the url: %q", s.Args[0])
	}
	if red := Redact(strings.Join(s.Args, " "), cfg.Secrets); strings.Contains(red, "hunter2-pw") || strings.Contains(red, "var-pw-1234") {
		t.Errorf("the args as redacted: %s", red)
	}
}
