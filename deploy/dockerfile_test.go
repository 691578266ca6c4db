package deploy

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildArgs are what a release passes as --build-arg; the test gives
// values it can find again in the binary's version output.
var buildArgs = map[string]string{
	"VERSION": "v0.0.0-dockerfile-test",
	"COMMIT":  "0123456789abcdef0123456789abcdef01234567",
	"DATE":    "2026-01-02T03:04:05Z",
}

// goBuild is the Dockerfile's "RUN ... go build ..." line, split as the
// shell would split it.
type goBuild struct {
	env  []string // the leading NAME=value words
	args []string // "go", "build", flags..., package
	out  string   // the -o argument
}

// dockerfileGoBuild finds the one RUN line with "go build" in the
// Dockerfile, joins its continuation lines and expands ${NAME} from args.
func dockerfileGoBuild(t *testing.T, dockerfile string, args map[string]string) goBuild {
	t.Helper()
	f, err := os.Open(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if s, ok := strings.CutSuffix(l, `\`); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "RUN "); ok && strings.Contains(rest, "go build") {
			runs = append(runs, rest)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("the Dockerfile has %d RUN lines with \"go build\", want exactly 1: %q", len(runs), runs)
	}
	words, err := shellWords(runs[0], args)
	if err != nil {
		t.Fatalf("RUN %s: %v", runs[0], err)
	}
	var b goBuild
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		b.env, words = append(b.env, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		t.Fatalf("RUN %s: want [NAME=value...] go build ..., nothing else on the line", runs[0])
	}
	b.args = words
	i := slices.Index(words, "-o")
	if i < 0 || i+1 >= len(words) {
		t.Fatalf("RUN %s: no -o OUTPUT; the final stage copies the binary from it", runs[0])
	}
	b.out = words[i+1]
	return b
}

// shellWords splits a POSIX shell command line of words, single and
// double quotes and ${NAME}/$NAME expansions; anything else a shell does
// (pipes, ;, &&, globs, backquotes) is refused, so the test never runs
// less than the line says.
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	expand := func(i int) (int, error) { // s[i] == '$'
		j := i + 1
		var name string
		if j < len(s) && s[j] == '{' {
			end := strings.IndexByte(s[j:], '}')
			if end < 0 {
				return 0, fmt.Errorf("unclosed ${")
			}
			name, j = s[j+1:j+end], j+end+1
		} else {
			k := j
			for k < len(s) && (s[k] == '_' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= 'a' && s[k] <= 'z' || s[k] >= '0' && s[k] <= '9') {
				k++
			}
			name, j = s[j:k], k
		}
		v, ok := vars[name]
		if !ok {
			return 0, fmt.Errorf("$%s is not an ARG the test knows", name)
		}
		w.WriteString(v)
		return j, nil
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			i++
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unclosed '")
			}
			w.WriteString(s[i+1 : i+1+end])
			i, inWord = i+end+2, true
		case c == '"':
			i++
			for i < len(s) && s[i] != '"' {
				switch s[i] {
				case '$':
					j, err := expand(i)
					if err != nil {
						return nil, err
					}
					i = j
				case '\\', '`':
					return nil, fmt.Errorf("%q inside double quotes: the test does not interpret it", s[i])
				default:
					w.WriteByte(s[i])
					i++
				}
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed \"")
			}
			i, inWord = i+1, true
		case c == '$':
			j, err := expand(i)
			if err != nil {
				return nil, err
			}
			i, inWord = j, true
		case strings.IndexByte(";&|<>`\\*?(){}[]", c) >= 0:
			return nil, fmt.Errorf("%q: the test runs one plain command, not shell syntax", c)
		default:
			w.WriteByte(c)
			i, inWord = i+1, true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// TestDockerfileBuildStage runs the Dockerfile's go build line (same env,
// flags and ldflags; only the -o folder is a temporary one) and then the
// binary it made: it must be static (the final image has no libc) and say
// the version, commit and date the build args gave it.
func TestDockerfileBuildStage(t *testing.T) {
	b := dockerfileGoBuild(t, filepath.Join("..", "Dockerfile"), buildArgs)
	if !slices.Contains(b.env, "CGO_ENABLED=0") {
		t.Fatalf("the Dockerfile's go build runs with %q, want CGO_ENABLED=0: the final image has no libc", b.env)
	}
	out := filepath.Join(t.TempDir(), "quiver")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	args := slices.Clone(b.args)
	args[slices.Index(args, "-o")+1] = out

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = ".." // WORKDIR /src, where COPY . . put the repository
	cmd.Env = append(os.Environ(), b.env...)
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", strings.Join(b.env, " "), strings.Join(args, " "), err, o)
	}

	if runtime.GOOS == "linux" {
		ef, err := elf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("the binary asks for a dynamic loader; distroless static has none")
			}
		}
		ef.Close()
	}

	for _, argv := range [][]string{{"--version"}, {"version"}} {
		o, err := exec.CommandContext(ctx, out, argv...).CombinedOutput()
		if err != nil {
			t.Errorf("quiver %s: %v\n%s", strings.Join(argv, " "), err, o)
			continue
		}
		for _, k := range []string{"VERSION", "COMMIT", "DATE"} {
			if !bytes.Contains(o, []byte(buildArgs[k])) {
				t.Errorf("quiver %s does not show the %s build arg %q (the Dockerfile's -ldflags -X must name the variables cmd/quiver prints):\n%s",
					strings.Join(argv, " "), k, buildArgs[k], o)
			}
		}
	}
}

// TestDockerfileImage builds the image when a container engine answers.
// This is the one test allowed to skip, in CI too: CI machines often have
// no engine, and the build stage is proven by TestDockerfileBuildStage.
func TestDockerfileImage(t *testing.T) {
	engine := ""
	for _, e := range []string{"docker", "podman"} {
		if _, err := exec.LookPath(e); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := exec.CommandContext(ctx, e, "info").Run()
		cancel()
		if err == nil {
			engine = e
			break
		}
	}
	if engine == "" {
		t.Skip("no container engine answers (docker or podman on PATH with \"info\" succeeding); the image is not built here, " +
			"also under CI=true: this is the one allowed skip, TestDockerfileBuildStage proves the build stage without an engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tag := "quiver-dockerfile-test:" + buildArgs["VERSION"]
	build := []string{"build", "-t", tag}
	for _, k := range []string{"VERSION", "COMMIT", "DATE"} {
		build = append(build, "--build-arg", k+"="+buildArgs[k])
	}
	build = append(build, "..")
	if o, err := exec.CommandContext(ctx, engine, build...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", engine, strings.Join(build, " "), err, o)
	}
	defer exec.Command(engine, "rmi", "-f", tag).Run()

	o, err := exec.CommandContext(ctx, engine, "image", "inspect", "--format", "{{.Config.User}}", tag).Output()
	if err != nil {
		t.Fatalf("%s image inspect: %v", engine, err)
	}
	if u := strings.TrimSpace(string(o)); u == "" || u == "0" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root") {
		t.Errorf("the image runs as user %q, want a non-root numeric USER", u)
	}
	o, err = exec.CommandContext(ctx, engine, "run", "--rm", tag, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s run %s --version: %v\n%s", engine, tag, err, o)
	}
	if !bytes.Contains(o, []byte(buildArgs["VERSION"])) {
		t.Errorf("the image's quiver --version does not show %q:\n%s", buildArgs["VERSION"], o)
	}
}
