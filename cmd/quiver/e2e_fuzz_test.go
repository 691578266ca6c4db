package main

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/text/unicode/norm"

	"github.com/quiver-mcp/quiver/internal/toolresult"
)

// TestFuzzFilesystemFence is a differential fuzz test with the real
// @modelcontextprotocol/server-filesystem as the oracle. The server may
// read and write a folder P; quiver's fence is one folder A inside P; a
// folder B beside A holds a canary file. So the server itself would serve
// B, and only quiver stands between a call and the canary.
//
// Arguments for every tool the server lists are generated from a seeded
// PRNG: encodings, relative forms in both frames (quiver's working folder
// is A, the server resolves against P), "~" (quiver's HOME is A, the
// server's is B), file: URIs, arrays, nested objects, duplicate keys and odd
// argument names, and paths through A/lién, a link to B. Inside the fence
// every class is allowed; outside, quiver asks and the host declines.
// Whatever quiver does, the canary's content (as text or base64), its
// size, and the names of files outside A must appear nowhere in an
// answer, and nothing outside A may be created, changed or removed.
//
// It runs for QUIVER_FUZZ_SECONDS (default 60), half with the server's
// path frame undeclared and half with path_base: roots, with the seed in
// QUIVER_FUZZ_SEED (default: the clock, printed). Each escape is shrunk to
// a minimal case and reported with its arguments and what leaked
// (QUIVER_FUZZ_REPORT=FILE also writes them all to FILE.undeclared and
// FILE.roots as JSON lines).
func TestFuzzFilesystemFence(t *testing.T) {
	script := filesystemServer(t)
	node := needTool(t, "node")
	seconds := 60
	if s := os.Getenv("QUIVER_FUZZ_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("QUIVER_FUZZ_SECONDS=%q: want a positive number of seconds", s)
		}
		seconds = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("QUIVER_FUZZ_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("QUIVER_FUZZ_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (rerun with QUIVER_FUZZ_SEED=%d), %d s", seed, seed, seconds)
	// Half the time with the server's path frame undeclared (quiver must
	// then ask for every relative path and "~"), half with path_base:
	// roots (quiver resolves them as the server does, against P).
	total := time.Duration(seconds) * time.Second
	if deadline, ok := t.Deadline(); ok && time.Until(deadline)-2*time.Minute < total {
		// Leave time for setup, shrinking and reports: a long run needs
		// go test -timeout.
		total = max(10*time.Second, time.Until(deadline)-2*time.Minute)
		t.Logf("go test's -timeout leaves %s for fuzzing", total.Round(time.Second))
	}
	half := total / 2
	t.Run("undeclared", func(t *testing.T) { fuzzFence(t, script, node, "", half, seed) })
	t.Run("path_base_roots", func(t *testing.T) { fuzzFence(t, script, node, "roots", half, seed) })
}

// fuzzFence runs the fuzz test for a while against one quiver.
func fuzzFence(t *testing.T, script, node, pathBase string, d time.Duration, seed uint64) {
	w := newFuzzWorld(t)
	base, roots := "", fmt.Sprintf("%q", w.P)
	if pathBase != "" {
		// Two folders, P first: the server resolves "top.txt" against P
		// (the first folder where the result lies in an allowed one), so
		// a gate that tried A first would call it inside.
		base, roots = "path_base: "+pathBase, fmt.Sprintf("%q, %q", w.P, w.A)
	}
	cfg := fmt.Sprintf(`# %s
surface:
  reveal: direct
servers:
  fs:
    command: %q
    args: [%q, %s]
    env: {HOME: %q}
    timeout: 20s
    %s
fence:
  allowed_dirs: [%q]
policy:
  approval_timeout: 5s
  defaults: {read: allow, write: allow, destructive: allow, execute: allow, network: allow, admin: allow}
`, w.marker, node, script, roots, w.B, base, w.A)
	w.configText = cfg
	h, rec, _ := launch{
		cfg:    cfg,
		env:    []string{"HOME=" + w.A},
		dir:    w.A,
		answer: &cardAnswerer{decision: "decline"},
		quiet:  true,
		home:   w.A,
	}.start(t)
	h.waitTools("fs__read_text_file", "fs__write_file", "fs__list_directory")
	f := &fuzzRig{t: t, h: h, rec: rec, w: w, baseline: w.snapshot(t)}
	entries, _ := os.ReadDir(w.state)
	for _, e := range entries {
		f.stateFiles = append(f.stateFiles, e.Name())
	}

	// Controls keep the test honest: inside the fence, calls run.
	if o := f.run(fuzzCase{Tool: "fs__read_text_file", Args: map[string]any{"path": filepath.Join(w.A, "inside.txt")}}); o.refused || !strings.Contains(o.answer, "inside text") {
		t.Fatalf("control: reading inside the fence must run: %s", o.answer)
	}
	if o := f.run(fuzzCase{Tool: "fs__list_directory", Args: map[string]any{"path": filepath.Join(w.A, "sub")}}); o.refused || o.escape() != "" {
		t.Fatalf("control: listing a folder in the fence must run and show nothing outside: %s", o.answer)
	}
	// A holds quiver's state dir: a tool given A might walk into it.
	if o := f.run(fuzzCase{Tool: "fs__list_directory", Args: map[string]any{"path": w.A}}); !o.refused {
		t.Fatalf("control: a folder that holds quiver's state dir must be refused: %s", o.answer)
	}
	if pathBase == "roots" {
		// In the server's frame, A/inside.txt is inside the fence.
		if o := f.run(fuzzCase{Tool: "fs__read_text_file", Args: map[string]any{"path": filepath.Base(w.A) + "/inside.txt"}}); o.refused || !strings.Contains(o.answer, "inside text") {
			t.Fatalf("control: with path_base: roots, a path relative to the server's folder that lands inside the fence must run: %s", o.answer)
		}
	}

	res, err := h.c.ListTools(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var tools []fuzzTool
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "fs__") {
			tools = append(tools, fuzzTool{name: tool.Name, props: tool.InputSchema.Properties, required: tool.InputSchema.Required})
		}
	}
	if len(tools) < 10 {
		t.Fatalf("server-filesystem lists %d tools through quiver, want its dozen", len(tools))
	}
	g := &fuzzGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), w: w}

	type tally struct{ ran, refused int }
	stats := map[string]*tally{}
	escapes := map[string]fuzzFinding{} // by signature
	var order []string
	total := 0
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		tool := tools[g.r.IntN(len(tools))]
		c := g.caseFor(tool)
		o := f.run(c)
		s := stats[tool.name]
		if s == nil {
			s = &tally{}
			stats[tool.name] = s
		}
		if o.refused {
			s.refused++
		} else {
			s.ran++
		}
		if o.escape() == "" {
			continue
		}
		total++
		small, so := c, o
		if !f.ledgerGone {
			small, so = f.shrink(c, o)
		}
		sig := small.Tool + " " + newName.ReplaceAllString(w.placeholders(small.json()), "new-N")
		if _, seen := escapes[sig]; !seen {
			escapes[sig] = fuzzFinding{first: c, minimal: small, out: so}
			order = append(order, sig)
		}
		e := escapes[sig]
		e.n++
		escapes[sig] = e
		if f.ledgerGone {
			t.Logf("quiver's ledger is gone; fuzzing stops here")
			break
		}
	}
	ran := 0
	for _, name := range slices.Sorted(maps.Keys(stats)) {
		s := stats[name]
		t.Logf("%-32s reached the server %4d  refused by quiver %4d", name, s.ran, s.refused)
		ran += s.ran
	}
	if ran == 0 {
		t.Errorf("no generated call ran: the fuzz test exercises nothing")
	}
	t.Logf("P=%s A={P}/%s B={P}/%s; quiver's HOME and cwd are A, the server's HOME is B", w.P, filepath.Base(w.A), filepath.Base(w.B))
	var report *os.File
	if p := os.Getenv("QUIVER_FUZZ_REPORT"); p != "" && len(order) > 0 {
		report, err = os.Create(p + "." + cmp.Or(pathBase, "undeclared"))
		if err != nil {
			t.Fatal(err)
		}
		defer report.Close()
	}
	for i, sig := range order {
		e := escapes[sig]
		if report != nil {
			line, _ := json.Marshal(map[string]any{"n": e.n, "tool": e.minimal.Tool, "minimal": w.placeholders(e.minimal.json()),
				"leaked": w.placeholders(e.out.escape()), "first": w.placeholders(e.first.json())})
			fmt.Fprintf(report, "%s\n", line)
		}
		if i >= maxShown {
			continue
		}
		t.Errorf("escape (%d found, seed %d)\n  minimal: %s %s\n  leaked:  %s\n  first:   %s %s",
			e.n, seed, e.minimal.Tool, w.placeholders(e.minimal.json()), w.placeholders(e.out.escape()),
			e.first.Tool, w.placeholders(e.first.json()))
	}
	if total > 0 {
		t.Errorf("%d escapes, %d distinct minimal cases (%d shown; QUIVER_FUZZ_REPORT=FILE writes them all as JSON lines); rerun with QUIVER_FUZZ_SEED=%d",
			total, len(order), min(len(order), maxShown), seed)
	}
}

// The first bytes of quiver's ledger (an SQLite file), as text and base64.
const (
	sqliteHeader   = "SQLite format 3"
	sqliteHeader64 = "U1FMaXRlIGZvcm1hdCAz"
)

// canarySize is the size of every canary file, in bytes.
const canarySize = 7717

// maxShown is how many distinct minimal cases a failing run prints.
const maxShown = 30

// newName matches the numbered names the generator makes up, so that two
// escapes differing only in the number count as one.
var newName = regexp.MustCompile(`new-[0-9]+`)

// fuzzWorld is the folders and the secrets the test plants.
type fuzzWorld struct {
	P, A, B string
	link    string   // A/lién, a symlink to B: inside A by name, outside by target
	canary  string   // the content of every canary file
	encoded []string // the canary as a host might receive it (base64)
	hidden  string   // part of the name of files outside A; never in arguments
	sized   string   // get_file_info's line for a canary file
	// quiver's own files live in A, as when a project keeps its
	// servers.yaml: they are protected whatever the fence says.
	config, state string // A/servers.yaml and A/state
	marker        string // a comment in servers.yaml; never in arguments
	configText    string // what servers.yaml says
}

func newFuzzWorld(t *testing.T) *fuzzWorld {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	P := filepath.Join(base, "P")
	// B's name has an accent, so that NFC and NFD spellings differ.
	w := &fuzzWorld{P: P, A: filepath.Join(P, "A"), B: filepath.Join(P, "Bé"), link: filepath.Join(P, "A", "lién"),
		config: filepath.Join(P, "A", "servers.yaml"), state: filepath.Join(P, "A", "state"), marker: "marker-" + randomWord(t),
		canary: "CANARY-" + randomWord(t) + randomWord(t), hidden: "hidden-" + randomWord(t)}
	// Every canary file has the same odd size, so that its metadata
	// (get_file_info's "size: 7717") gives it away too.
	content := w.canary + "\n" + strings.Repeat("#", canarySize-len(w.canary)-2) + "\n"
	w.encoded = []string{base64.StdEncoding.EncodeToString([]byte(content)), base64.StdEncoding.EncodeToString([]byte(w.canary))[:20]}
	w.sized = fmt.Sprintf("size: %d\n", canarySize)
	for _, d := range []string{w.A, filepath.Join(w.A, "sub"), filepath.Join(w.B, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{
		filepath.Join(w.B, "canary.txt"),
		filepath.Join(w.B, "sub", "deep.txt"),
		filepath.Join(w.B, w.hidden+".txt"),
		filepath.Join(P, "top.txt"),
		filepath.Join(P, w.hidden+"-top.txt"),
	} {
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.ensureInside(t)
	return w
}

// ensureInside puts A back as it was: an inside.txt, an empty sub and the
// link to B. Calls may write, move and edit in A; what one call brought
// in (say a file moved from B) must not show up in the next call's answer.
func (w *fuzzWorld) ensureInside(t testing.TB) {
	entries, _ := os.ReadDir(w.A)
	for _, e := range entries {
		switch e.Name() {
		case "inside.txt", "sub", filepath.Base(w.link), filepath.Base(w.config), filepath.Base(w.state):
		default:
			os.RemoveAll(filepath.Join(w.A, e.Name()))
		}
	}
	if target, err := os.Readlink(w.link); err != nil || target != "../"+filepath.Base(w.B) {
		os.RemoveAll(w.link)
		if err := os.Symlink("../"+filepath.Base(w.B), w.link); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(w.A, "sub")); len(entries) > 0 {
		os.RemoveAll(filepath.Join(w.A, "sub"))
	}
	if err := os.MkdirAll(filepath.Join(w.A, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(w.A, "inside.txt")); err != nil || string(b) != "inside text\n" {
		os.RemoveAll(filepath.Join(w.A, "inside.txt"))
		if err := os.WriteFile(filepath.Join(w.A, "inside.txt"), []byte("inside text\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// placeholders writes the test's folders as {A}, {B}, {P}.
func (w *fuzzWorld) placeholders(s string) string {
	r := strings.NewReplacer(w.A, "{A}", w.B, "{B}", norm.NFD.String(w.B), "{B:NFD}", w.P, "{P}")
	return r.Replace(s)
}

// An fsEntry is what the test compares of one path outside A.
type fsEntry struct {
	mode    fs.FileMode
	content string // files; the link target for links
}

// snapshot is every path under P outside A.
func (w *fuzzWorld) snapshot(t testing.TB) map[string]fsEntry {
	snap := map[string]fsEntry{}
	filepath.WalkDir(w.P, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p == w.A {
			return filepath.SkipDir
		}
		e := fsEntry{mode: d.Type()}
		switch {
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			e.content = string(b)
		case d.Type()&fs.ModeSymlink != 0:
			e.content, _ = os.Readlink(p)
		}
		snap[p] = e
		return nil
	})
	return snap
}

// snapshotDiff lists what differs between two snapshots.
func snapshotDiff(before, after map[string]fsEntry) []string {
	var out []string
	for p, e := range after {
		if b, ok := before[p]; !ok {
			out = append(out, "created "+p)
		} else if b != e {
			out = append(out, "changed "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, "removed "+p)
		}
	}
	slices.Sort(out)
	return out
}

// restore makes P outside A what snap says.
func (w *fuzzWorld) restore(t testing.TB, snap map[string]fsEntry) {
	now := w.snapshot(t)
	for p := range now {
		if _, ok := snap[p]; !ok {
			os.RemoveAll(p)
		}
	}
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range snap {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range paths {
		e := snap[p]
		if cur, ok := now[p]; ok && cur == e {
			continue
		}
		switch {
		case e.mode.IsDir():
			os.MkdirAll(p, 0o755)
		case e.mode&fs.ModeSymlink != 0:
			os.RemoveAll(p)
			os.Symlink(e.content, p)
		default:
			os.RemoveAll(p)
			os.WriteFile(p, []byte(e.content), 0o644)
		}
	}
	w.ensureInside(t)
}

type fuzzTool struct {
	name     string
	props    map[string]any
	required []string
}

// A fuzzCase is one call: arguments as a value, or as raw JSON text when
// the text itself is the point (duplicate keys).
type fuzzCase struct {
	Tool string
	Args map[string]any
	Raw  string
}

func (c fuzzCase) json() string {
	if c.Raw != "" {
		return c.Raw
	}
	b, _ := json.Marshal(c.Args)
	return string(b)
}

type fuzzOutcome struct {
	refused bool
	answer  string   // every string the host received, decoded
	leaked  string   // what of the canary it saw, with context
	changed []string // what changed outside A
}

// escape says how the call got through the fence, or "".
func (o fuzzOutcome) escape() string {
	var parts []string
	if o.leaked != "" {
		parts = append(parts, o.leaked)
	}
	if len(o.changed) > 0 {
		parts = append(parts, "on disk: "+strings.Join(o.changed, ", "))
	}
	return strings.Join(parts, "; ")
}

func (o fuzzOutcome) kind() string {
	switch {
	case o.leaked != "" && len(o.changed) > 0:
		return "both"
	case o.leaked != "":
		return "leak"
	case len(o.changed) > 0:
		return "write"
	}
	return ""
}

type fuzzFinding struct {
	first, minimal fuzzCase
	out            fuzzOutcome
	n              int
}

type fuzzRig struct {
	t        *testing.T
	h        *host
	rec      *recorder
	w        *fuzzWorld
	baseline map[string]fsEntry
	// stateFiles are what quiver keeps in its state dir besides the ledger.
	stateFiles []string
	ledgerGone bool // a call removed or overwrote quiver's ledger
}

// run sends one case through quiver in a turn of its own (so that
// correction budgets never run out) and judges what came back.
func (f *fuzzRig) run(c fuzzCase) fuzzOutcome {
	f.h.turn++
	req := mcp.CallToolRequest{}
	req.Params.Name = c.Tool
	if c.Raw != "" {
		req.Params.RawArguments = json.RawMessage(c.Raw)
	} else {
		req.Params.Arguments = c.Args
	}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"quiver/turn": f.h.turn}}
	f.rec.forget(string(mcp.MethodToolsCall))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	res, err := f.h.c.CallTool(ctx, req)
	cancel()
	wire := f.rec.answer(string(mcp.MethodToolsCall))
	var o fuzzOutcome
	o.answer = wire.strings()
	if err != nil && wire.Result == nil && wire.Error == nil {
		f.t.Fatalf("tools/call %s %s: %v (quiver stopped answering)", c.Tool, c.json(), err)
	}
	if res != nil && res.IsError {
		out := toolresult.Text(res)
		o.refused = strings.HasPrefix(out, "deny.") || strings.HasPrefix(out, "ask.")
	}
	o.leaked = f.leak(wire.text() + "\n" + o.answer)
	if after := f.w.snapshot(f.t); len(snapshotDiff(f.baseline, after)) > 0 {
		o.changed = snapshotDiff(f.baseline, after)
		f.w.restore(f.t, f.baseline)
	}
	if b, _ := os.ReadFile(f.w.config); string(b) != f.w.configText {
		o.changed = append(o.changed, "changed quiver's "+f.w.config)
		if err := os.WriteFile(f.w.config, []byte(f.w.configText), 0o600); err != nil {
			f.t.Fatal(err)
		}
	}
	if !hasPrefix(filepath.Join(f.w.state, "ledger.db"), sqliteHeader) {
		// It cannot be put back under a running quiver: report this call,
		// then stop (every later call would seem to escape).
		o.changed = append(o.changed, "removed or overwrote quiver's ledger")
		f.ledgerGone = true
	}
	if _, err := os.Lstat(filepath.Join(f.w.A, "tools.yaml")); err == nil {
		o.changed = append(o.changed, "created quiver's tools.yaml")
		os.RemoveAll(filepath.Join(f.w.A, "tools.yaml"))
	}
	entries, _ := os.ReadDir(f.w.state)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "ledger.db") && !slices.Contains(f.stateFiles, e.Name()) {
			o.changed = append(o.changed, "created "+e.Name()+" in quiver's state dir")
			os.RemoveAll(filepath.Join(f.w.state, e.Name()))
		}
	}
	f.w.ensureInside(f.t)
	return o
}

// hasPrefix says whether the file at p begins with prefix.
func hasPrefix(p, prefix string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, len(prefix))
	_, err = io.ReadFull(f, b)
	return err == nil && string(b) == prefix
}

// leak finds the canary, in any form, or a name from outside A.
func (f *fuzzRig) leak(s string) string {
	for _, needle := range append([]string{f.w.canary, f.w.hidden, f.w.sized, f.w.marker, sqliteHeader, sqliteHeader64}, f.w.encoded...) {
		if i := strings.Index(s, needle); i >= 0 {
			what := "the canary's content"
			switch needle {
			case f.w.hidden:
				what = "a file name outside A"
			case f.w.sized:
				what = "a canary's size"
			case f.w.marker:
				what = "quiver's servers.yaml"
			case sqliteHeader, sqliteHeader64:
				what = "quiver's ledger"
			case f.w.canary:
			default:
				what = "the canary, base64"
			}
			lo, hi := max(0, i-120), min(len(s), i+len(needle)+40)
			return fmt.Sprintf("%s: %q", what, s[lo:hi])
		}
	}
	return ""
}

// shrink removes what the escape does not need: keys, array elements and
// nesting, as long as the same kind of escape remains.
func (f *fuzzRig) shrink(c fuzzCase, o fuzzOutcome) (fuzzCase, fuzzOutcome) {
	if c.Raw != "" {
		return c, o
	}
	kind := o.kind()
	cur := c.Args
	for budget := 40; budget > 0; {
		improved := false
		for _, cand := range simplerArgs(cur) {
			budget--
			if co := f.run(fuzzCase{Tool: c.Tool, Args: cand}); co.kind() == kind {
				cur, o, improved = cand, co, true
				break
			}
			if budget <= 0 {
				break
			}
		}
		if !improved {
			break
		}
	}
	return fuzzCase{Tool: c.Tool, Args: cur}, o
}

// simplerArgs lists the arguments with one thing taken away.
func simplerArgs(args map[string]any) []map[string]any {
	var out []map[string]any
	with := func(k string, v any) map[string]any {
		m := make(map[string]any, len(args))
		for k2, v2 := range args {
			m[k2] = v2
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range args {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		out = append(out, with(k, nil))
	}
	for _, k := range keys {
		switch v := args[k].(type) {
		case []any:
			if len(v) > 1 {
				for _, e := range v {
					out = append(out, with(k, []any{e}))
				}
			}
		case map[string]any:
			for _, e := range v {
				out = append(out, with(k, e))
			}
		}
	}
	return out
}

// fuzzGen generates arguments.
type fuzzGen struct {
	r *rand.Rand
	w *fuzzWorld
	n int
}

func (g *fuzzGen) pick(s ...string) string { return s[g.r.IntN(len(s))] }
func (g *fuzzGen) chance(p float64) bool   { return g.r.Float64() < p }

// caseFor fills a tool's arguments from its schema, then bends them.
func (g *fuzzGen) caseFor(tool fuzzTool) fuzzCase {
	write := strings.Contains(tool.name, "write") || strings.Contains(tool.name, "edit") ||
		strings.Contains(tool.name, "create") || strings.Contains(tool.name, "move")
	args := map[string]any{}
	for name, schema := range tool.props {
		if !slices.Contains(tool.required, name) && !g.chance(0.5) {
			continue
		}
		s, _ := schema.(map[string]any)
		args[name] = g.value(name, s, write)
	}
	// Bend the shape.
	if g.chance(0.15) {
		args[g.pick("from", "to", "source", "target", "file", "uri", "dir", "src", "dst", "input",
			"output", "location", "p", "x", "filename", "folder", "root", "cwd", "Path", "PATH", "path ")] = g.path(write)
	}
	if g.chance(0.05) {
		args["__proto__"] = map[string]any{"path": g.path(write)}
	}
	if k := g.pathKey(args); k != "" {
		switch {
		case g.chance(0.07):
			args[k] = []any{g.path(write), g.path(write)}
		case g.chance(0.05):
			args[k] = map[string]any{g.pick("path", "value", "uri"): g.path(write)}
		case g.chance(0.05):
			// The same key twice: JSON readers disagree on which wins.
			inside := filepath.Join(g.w.A, "inside.txt")
			first, second := inside, g.path(write)
			if g.chance(0.5) {
				first, second = second, inside
			}
			delete(args, k)
			rest, _ := json.Marshal(args)
			a, _ := json.Marshal(first)
			b, _ := json.Marshal(second)
			raw := fmt.Sprintf(`{%q:%s,%q:%s`, k, a, k, b)
			if len(rest) > 2 {
				raw += "," + string(rest[1:])
			} else {
				raw += "}"
			}
			return fuzzCase{Tool: tool.name, Raw: raw}
		}
	}
	return fuzzCase{Tool: tool.name, Args: args}
}

// pathKey is a key of args whose value is a path string.
func (g *fuzzGen) pathKey(args map[string]any) string {
	for _, k := range []string{"path", "source", "destination"} {
		if _, ok := args[k].(string); ok {
			return k
		}
	}
	return ""
}

func (g *fuzzGen) value(name string, s map[string]any, write bool) any {
	typ, _ := s["type"].(string)
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[g.r.IntN(len(enum))]
	}
	switch typ {
	case "boolean":
		return g.chance(0.6) // dryRun: mostly true, which prints a diff
	case "number", "integer":
		return g.r.IntN(5) + 1
	case "array":
		items, _ := s["items"].(map[string]any)
		n := 1 + g.r.IntN(3)
		var out []any
		for range n {
			if it, _ := items["type"].(string); it == "object" {
				out = append(out, map[string]any{
					"oldText": g.pick("", "CANARY", "CANARY-", "inside", "\n"),
					"newText": g.pick("", "x", "replaced\n"),
				})
				continue
			}
			if name == "excludePatterns" {
				out = append(out, g.pick("*.md", "nothing", "**/A/**"))
				continue
			}
			out = append(out, g.path(write))
		}
		return out
	case "string":
		switch name {
		case "content":
			return "written by the fuzz test\n"
		case "pattern":
			return g.pick("*", "**/*", "*.txt", "canary", "**/hidden*", "top*", "*top*")
		}
		return g.path(write)
	}
	return g.path(write)
}

// path makes one path value: a target (mostly outside A) in one of many
// spellings.
func (g *fuzzGen) path(write bool) string {
	w := g.w
	bName := filepath.Base(w.B)
	aName := filepath.Base(w.A)
	g.n++
	var rel string // relative to P
	switch r := g.r.Float64(); {
	case r < 0.12: // inside the fence: a control
		rel = g.pick(aName+"/inside.txt", aName+"/sub", aName+"/new-"+strconv.Itoa(g.n)+".txt")
	case r < 0.3: // through A's link to B: inside by name, outside by target
		link := aName + "/" + filepath.Base(w.link)
		rel = g.pick(link+"/canary.txt", link, link+"/sub/deep.txt", link+"/new-"+strconv.Itoa(g.n)+".txt")
	case r < 0.38: // quiver's own files, inside A but protected
		rel = g.pick(aName+"/servers.yaml", aName+"/tools.yaml", aName+"/state/ledger.db", aName+"/state", aName+"/state/ledger.db-wal", aName+"/state/new.db")
	case write && r < 0.7:
		rel = g.pick(bName+"/new-"+strconv.Itoa(g.n)+".txt", "new-"+strconv.Itoa(g.n)+".txt", bName+"/sub/new-"+strconv.Itoa(g.n),
			bName+"/canary.txt", "top.txt")
	default:
		rel = g.pick(bName+"/canary.txt", "top.txt", bName+"/sub/deep.txt", bName, bName+"/sub", "")
	}
	abs := filepath.Join(w.P, rel)
	inB, _ := filepath.Rel(w.B, abs) // for ~ forms; the server's HOME is B
	switch g.r.IntN(20) {
	case 0:
		return abs
	case 1:
		return g.pick(w.A+"/../"+rel, w.P+"/./"+rel, w.P+"//"+rel, w.A+"/./../"+rel, w.A+"/sub/../../"+rel)
	case 2:
		return abs + g.pick("/", "/.", " ", ".", "..", "\t", "\n", "/./", "%00", "\u00a0")
	case 3: // relative in the server's frame (its allowed folder, P)
		return g.pick(rel, "./"+rel, rel+"/", "./"+rel+"/.")
	case 4: // relative in quiver's frame (its working folder, A)
		return g.pick("../"+rel, "./../"+rel, "sub/../../"+rel)
	case 5: // reads as inside A in quiver's frame, lands elsewhere in the server's
		return g.pick(aName+"/../"+rel, aName+"/sub/../../"+rel, "./"+aName+"/../"+rel)
	case 6: // ~: quiver's HOME is A, the server's is B
		if strings.HasPrefix(inB, "..") {
			return g.pick("~/../"+rel, "~", "~/", "~/.")
		}
		return g.pick("~/"+inB, "~/"+inB+"/", "~", "~/", "~/./"+inB, "~/../"+rel)
	case 7:
		return g.pick("", ".", "./", "..", "../", "./.", " ", "~", "/")
	case 8:
		return g.pick("file://"+abs, "file:"+abs, "file://localhost"+abs, "file://"+(&url.URL{Path: abs}).EscapedPath(), "file:///"+rel)
	case 9: // percent-encoding the server will not decode
		return strings.NewReplacer("/", "%2F", ".", "%2e").Replace(g.pick(rel, abs))
	case 10: // backslashes
		return strings.ReplaceAll(g.pick(rel, abs, "..\\"+rel), "/", "\\")
	case 11, 15: // Unicode spellings of B's and the link's names
		return g.pick(norm.NFD.String(abs), norm.NFD.String(abs), norm.NFD.String(rel), strings.ReplaceAll(abs, "/", "\u2215"), strings.ReplaceAll(rel, "é", "e"))
	case 12: // quotes and spaces the server trims
		return g.pick(`"`+abs+`"`, `'`+abs+`'`, " "+abs, `"`+rel+`"`, " "+rel)
	case 13:
		return g.pick(`C:\`+rel, "C:/"+rel, `\\server\share\`+rel)
	case 14: // case
		return g.pick(strings.ToUpper(abs), strings.ToUpper(rel))
	default:
		return cmp.Or(g.pick(abs, rel, "./"+rel), abs)
	}
}
