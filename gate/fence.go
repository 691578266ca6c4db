package gate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The fence resolves every path argument the way the operating system —
// or a downstream server that normalises first — would, and checks that it
// lies under a root. When a string can be read more than one way (a
// file:// URI or a literal name, with or without "~" expanded, backslashes
// as separators or not, percent-decoded or not, Unicode-normalised or not,
// ".." applied before or after symlinks, against any of the server's base
// folders) every reading is resolved and every one must be inside: quiver
// cannot know which reading the server will pick, so it never guesses.
//
// The frame. A path is judged where the server will open it, not where
// quiver runs: a relative path is read against each folder the server
// declares it resolves against (Tool.Bases: its path_base, or its allowed
// folders for servers like server-filesystem), and "~" is the server's
// HOME (Tool.Home). A reading quiver cannot place — a relative path, ".",
// "" or "./x" on a server that declares no base, "~" of an unknown HOME, a
// Windows path on this host — is unresolved, and an unresolved path is
// outside: the call asks, and only a one-use permit for the exact call can
// answer it (a grant for a path covers only paths quiver placed).
//
// The shapes. Arguments are paths by their name (path, file, dir, from,
// to, ... — isPathKey — or declared in config) and by their shape: any
// string at any depth that is "~" or starts with "/", "~/", "./", "../",
// "file:" (any case), a Windows drive or "\\" (also once trimmed or
// compatibility-normalised) is a path whatever its argument is called,
// unless it spans lines or is longer than any path: that is content, not a
// path. A value under a path name keeps the strict handling (too long or
// a control character is refused, not skipped). Object keys of the same
// shapes are paths too. quiver's own justification argument is the
// model's words and is not read for shapes.
//
// Protected paths. quiver's own files (WithProtected) are refused to every
// call before the fence is consulted; a call that may change something is
// also refused a reading that holds them (their folder or any ancestor).
// Reading an ancestor (listing a home folder) stays allowed: it shows that
// the files exist, not what they hold; but not an ancestor of those that
// hold secrets (WithSecrets), since a tool given a folder may walk into
// it. The folders quiver's servers run in (WithChildFolders) lie inside
// the fence and are not protected for the calls of their own server only;
// for any other call they are protected, as the run folder above them is. The check compares resolved paths:
// a hard link to a protected file, made elsewhere, is not recognised (no
// tool can make one inside the protected folders, which is where it would
// have to start).
//
// The caps. A call may carry at most maxPathValues path values, whose
// readings may number at most maxReadings and cost at most maxLstats file
// system lookups, maxLookups path components walked by the kernel (an
// lstat of a path k components deep walks k) and maxSteps components
// resolved in all; past any of them the
// call is refused (deny.args_too_complex) before more work is done, so
// the fence's cost per call is bounded whatever the model writes.

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// within reports whether p is root or under it. A sibling that shares a
// prefix (/work-evil beside /work) is not under it.
func within(p, root string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// withinFold is within with names compared without case.
func withinFold(p, root string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	n := len(root)
	return len(p) >= n && strings.EqualFold(p[:n], root) && (len(p) == n || p[n] == filepath.Separator)
}

func insideAny(p string, roots []string) bool {
	for _, r := range roots {
		if within(p, r) {
			return true
		}
	}
	return false
}

// A pathArg is one path found in the arguments.
type pathArg struct {
	arg      string   // top-level argument it came from
	raw      string   // as written
	primary  string   // the reading a well-behaved server takes
	readings []string // every reading quiver could place, resolved
	outside  []string // readings outside every root
	// unresolved says why some reading could not be placed in the
	// server's frame; such a path is outside.
	unresolved string
}

func (p pathArg) isOutside() bool { return len(p.outside) > 0 || p.unresolved != "" }

// fence finds and resolves every path in the arguments within the work
// caps, and refuses a bad path, a call too complex to check, or a reading
// that reaches quiver's own files.
func (g *Gate) fence(c Call, t *Tool, class Class, args map[string]any, shadows []shadow, skip string, roots []string) ([]pathArg, Decision, bool) {
	w := &work{}
	fr := frame{bases: t.Bases, home: t.Home, elsewhere: t.RelativeElsewhere}
	own := g.ownChildren(t)
	raws := collectPaths(args, shadows, t.PathArgs, skip)
	if len(raws) > maxPathValues {
		return nil, g.tooComplex(c, class, &tooComplex{fmt.Sprintf("they hold more than %d paths", maxPathValues)}), false
	}
	seen := make(map[string]placed, len(raws))
	paths := make([]pathArg, 0, len(raws))
	for _, rp := range raws {
		pl, ok := seen[rp.s]
		var err error
		if !ok {
			pl, err = g.res.readings(rp.s, fr, w)
			seen[rp.s] = pl
		}
		if errors.Is(err, errTooComplex) {
			return nil, g.tooComplex(c, class, err), false
		}
		if err != nil {
			dd := deny(CodeBadPath, fmt.Sprintf("The argument %q holds a path quiver will not resolve: %v. Pass a plain absolute path.", rp.arg, err))
			dd.Class = class
			return nil, dd, false
		}
		pa := pathArg{arg: rp.arg, raw: rp.s, primary: pl.primary, readings: pl.readings, unresolved: pl.unresolved}
		for _, r := range pl.readings {
			if !g.res.insideAny(r, roots) {
				pa.outside = append(pa.outside, r)
			}
		}
		paths = append(paths, pa)
	}
	// Protected before inside or outside: no fence, rule, grant or permit
	// reaches quiver's own files.
	for _, pa := range paths {
		for _, r := range pa.readings {
			if d, hit := g.protectedPath(pa.raw, r, class, own); hit {
				return nil, d, false
			}
		}
		if g.res.win != nil && pa.unresolved != "" {
			if d, hit := g.protectedBehindDevice(pa.raw, class, w, own); hit {
				return nil, d, false
			}
		}
	}
	if d, hit := g.protectedFromCwd(c, t, class, args); hit {
		return nil, d, false
	}
	return paths, Decision{}, true
}

// protectedFromCwd refuses a call any of whose strings, read as a file
// name in the folder the server runs in, is one of quiver's own files: a
// server that opens any string it is given ({"q": "servers.yaml"}) would
// find it there, whatever the argument is called. Each string is judged
// by where it leads, not by its name: a link in that folder ("cfg" to
// quiver's configuration folder) makes "cfg/servers.yaml" one of them.
// Only a string whose first name exists in the folder (or that climbs
// out with "..") can lead anywhere but where its name says, so only
// those are resolved, on a budget of their own; the folder's names are
// read once per call.
func (g *Gate) protectedFromCwd(c Call, t *Tool, class Class, args map[string]any) (Decision, bool) {
	if t.Cwd == "" || len(g.protected) == 0 || !g.res.isAbs(t.Cwd) {
		return Decision{}, false
	}
	cwd := t.Cwd
	if res, ok := g.roots.Load("cwd:" + cwd); ok {
		cwd = res.(string)
	} else if res, err := g.res.resolveRoot(cwd); err == nil {
		g.roots.Store("cwd:"+cwd, res)
		cwd = res
	}
	// Whether a name is there is asked of the name, one lstat, not by
	// reading the folder: a folder of many entries read at every call
	// was a fifth of a call's CPU. The lstat answers as the server's
	// open would, case folding included where the file system folds.
	exists := func(first string) bool {
		_, err := os.Lstat(filepath.Join(cwd, first))
		return err == nil
	}
	w := &work{}
	own := g.ownChildren(t)
	var d Decision
	hit := false
	var walk func(v any, depth int)
	check := func(s string) {
		s = strings.TrimFunc(s, isTrimmed)
		if hit || s == "" || len(s) > maxPathLen || strings.ContainsAny(s, "\n\r") || g.res.isAbs(s) {
			return
		}
		if g.res.win != nil {
			d, hit = g.protectedFromCwdWindows(c, class, cwd, s, w, own)
			return
		}
		if d, hit = g.protectedPath(s, filepath.Join(cwd, s), class, own); hit {
			return
		}
		// The kernel's reading (links first, then "..") and the cleaned
		// one (path.resolve: ".." first): each may start with a name that
		// is there.
		for _, rel := range []string{s, filepath.Clean(s)} {
			parts := splitPath(filepath.FromSlash(rel))
			if len(parts) == 0 || parts[0] != ".." && parts[0] != "." && !exists(parts[0]) {
				continue
			}
			r, err := physicalBelow(cwd, filepath.FromSlash(rel), w)
			if errors.Is(err, errTooComplex) {
				d, hit = g.tooComplex(c, class, err), true
				return
			}
			if err != nil {
				continue // not a name the server can open either
			}
			if d, hit = g.protectedPath(s, r, class, own); hit {
				return
			}
		}
	}
	walk = func(v any, depth int) {
		if hit || depth > maxArgDepth {
			return
		}
		switch x := v.(type) {
		case string:
			check(x)
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			for k, e := range x {
				check(k)
				walk(e, depth+1)
			}
		}
	}
	walk(any(args), 0)
	return d, hit
}

// protectedPath refuses reading r of the path written raw when it is one
// of quiver's own files, or holds one and the call may change something.
// own are the servers' folders that are the calling server's
// (ownChildren): only they are carved out.
// Names compare without case: on a case-insensitive file system (macOS,
// Windows) "~/.Config/Quiver" is the same folder, and refusing its
// lookalike on Linux costs nothing.
func (g *Gate) protectedPath(raw, r string, class Class, own []string) (Decision, bool) {
	// A carve-out widens what a call may touch, so it compares names
	// strictly, as the fence's roots do, never with the folding below.
	if g.res.insideAny(r, own) {
		return Decision{}, false // emptied before its server starts (WithChildFolders)
	}
	for _, p := range g.protected {
		var what string
		switch {
		case g.res.withinFold(r, p):
			what = "is one of quiver's own files (its configuration, toggles and state): no tool may read or change them"
		case class == ClassRead && g.secret[p] && g.res.withinFold(p, r):
			// A tool given a folder may walk it: a recursive search of
			// "~" reads every file under it, quiver's secrets included.
			// Whether this tool walks, quiver cannot know.
			d := deny(CodeProtectedPath, fmt.Sprintf("%s holds %s, where quiver keeps secrets (its page token, stored secrets, OAuth tokens), and a tool given a folder may read everything under it, whatever the fence or any approval says. "+
				"Give the tool a folder inside it that does not hold %s (a project folder), or a file; quiver's secrets are never shown to a model.", quoteReading(raw, r), p, p))
			d.Class, d.Paths = class, []string{r}
			return d, true
		case class != ClassRead && class != ClassExecute && g.res.withinFold(p, r):
			// Moving or deleting a folder that holds them. An execute tool
			// is not held to this: a command can reach quiver's files
			// whatever folder it runs in, so refusing a home folder as its
			// working directory would only look like protection; policy
			// is what fences commands.
			what = fmt.Sprintf("holds quiver's own files (%s, its configuration, toggles or state): no tool may move, delete or change them", p)
		default:
			continue
		}
		d := deny(CodeProtectedPath, fmt.Sprintf("%s %s, whatever the fence or any approval says. Leave them alone and work with other files; the user changes quiver's settings with the quiver command.", quoteReading(raw, r), what))
		d.Class, d.Paths = class, []string{r}
		return d, true
	}
	return Decision{}, false
}

// quoteReading is the path as written, and where it leads when that
// differs, for a refusal's sentence.
func quoteReading(raw, r string) string {
	subject := fmt.Sprintf("%q", raw)
	if r != raw {
		subject += fmt.Sprintf(" (which leads to %s)", r)
	}
	return subject
}

// tooComplex refuses a call whose paths would cost the fence more than
// its caps, saying which cap and how to split the call.
func (g *Gate) tooComplex(c Call, class Class, err error) Decision {
	d := deny(CodeArgsTooComplex, fmt.Sprintf("The arguments for %q are too much for quiver to check in one call: %v. Split the work into several smaller calls (at most %d paths each, not nested deep), and call again.",
		c.Name, err, maxPathValues))
	d.Class = class
	return g.refuse(c, d)
}

// outsideText says what lies outside, as one or two sentences starting
// with verb ("Reading"): the placed readings, then each path quiver could
// not place, as written, with why; tail ends the first sentence (", so
// the user must approve it").
func (g *Gate) outsideText(verb string, placedOut []string, unresolved []pathArg, roots []string, tail string) string {
	where := fmt.Sprintf("outside the folders quiver may touch (%s)", g.rootsText(roots))
	var why strings.Builder
	for i, u := range unresolved {
		switch {
		case i == 3:
			fmt.Fprintf(&why, "; nor where %d more paths lead", len(unresolved)-3)
		case i > 3:
		case i > 0:
			fmt.Fprintf(&why, "; nor where %q leads (%s)", u.raw, u.unresolved)
		default:
			fmt.Fprintf(&why, "quiver cannot tell where %q leads (%s)", u.raw, u.unresolved)
		}
	}
	if len(placedOut) == 0 {
		raws := make([]string, len(unresolved))
		for i, u := range unresolved {
			raws[i] = u.raw
		}
		return fmt.Sprintf("%s %s counts as %s%s: %s.", verb, quoteList(raws), where, tail, why.String())
	}
	is := "is"
	if len(placedOut) > 1 {
		is = "are"
	}
	text := fmt.Sprintf("%s %s %s %s%s.", verb, quoteList(placedOut), is, where, tail)
	if len(unresolved) > 0 {
		text += fmt.Sprintf(" Also, %s, so that counts as outside too.", why.String())
	}
	return text
}

// howInside tells the model how to stay inside the fence.
func (g *Gate) howInside(roots []string, unresolved []pathArg, asking bool) string {
	switch {
	case len(unresolved) == 0:
		return fmt.Sprintf("Use a path inside %s.", g.rootsText(roots))
	case asking:
		return fmt.Sprintf("Pass an absolute path inside %s instead; a path quiver cannot place can be approved only once, for this exact call.", g.rootsText(roots))
	}
	return fmt.Sprintf("Pass an absolute path inside %s instead.", g.rootsText(roots))
}

func (g *Gate) sessionRoots(in []string) []string {
	var out []string
	for _, r := range in {
		p := r
		if isFileURI(r) {
			var err error
			if p, err = g.res.uriPath(r); err != nil {
				continue // a root quiver cannot read widens nothing
			}
		}
		if !g.res.isAbs(p) {
			continue
		}
		if res, ok := g.roots.Load(p); ok {
			out = append(out, res.(string))
			continue
		}
		if res, err := g.res.resolveRoot(p); err == nil {
			res, _ := g.roots.LoadOrStore(p, res)
			out = append(out, res.(string))
		}
	}
	return out
}

func (g *Gate) rootsText(all []string) string {
	// The servers' own folders are fence roots so that their plain names
	// land inside, but they are quiver's: a person or model reading where
	// it may work is told the folders it was given.
	roots := make([]string, 0, len(all))
	for _, r := range all {
		if !contains(g.children, r) {
			roots = append(roots, r)
		}
	}
	if len(roots) == 0 {
		return "no folders are allowed yet"
	}
	if len(roots) > 4 {
		return strings.Join(roots[:4], ", ") + ", …"
	}
	return strings.Join(roots, ", ")
}
