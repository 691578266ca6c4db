package gate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// maxPathLen is the longest path argument the fence will resolve; longer
// is refused rather than truncated (Linux PATH_MAX).
const maxPathLen = 4096

// maxForms bounds the readings of one path argument.
const maxForms = 64

// isTrimmed is what a trimming server drops from the ends of a string.
func isTrimmed(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' }

// maxLinks bounds symlink expansion like the kernel's ELOOP limit.
const maxLinks = 40

// errBadPath marks a path that cannot be resolved safely.
var errBadPath = errors.New("bad path")

type badPath struct{ why string }

func (b *badPath) Error() string { return b.why }

func (b *badPath) Is(err error) bool {
	return err == errBadPath
}

func bad(format string, a ...any) error { return &badPath{fmt.Sprintf(format, a...)} }

// resolver turns path strings into absolute, symlink-free paths.
type resolver struct {
	// userHome is the home of the user running quiver, for "~" in quiver's
	// own configuration (allowed_dirs); a server's paths use its own HOME.
	userHome string
	// lookupHome finds another user's home for "~name"; nil refuses.
	lookupHome func(name string) (string, error)
	// win, when set, makes the resolver read Windows paths (winfence.go),
	// asking it about names; set on Windows, and in tests anywhere.
	win winFS
}

func newResolver(userHome string) *resolver {
	return &resolver{userHome: userHome, lookupHome: func(name string) (string, error) {
		u, err := user.Lookup(name)
		if err != nil {
			return "", err
		}
		return u.HomeDir, nil
	}, win: osWinFS()}
}

// expandHome expands "~" in quiver's own configuration.
func (r *resolver) expandHome(p string) string {
	if r.userHome != "" && (p == "~" || strings.HasPrefix(p, "~/") || r.win != nil && strings.HasPrefix(p, `~\`)) {
		if r.win != nil {
			return r.userHome + `\` + p[1:]
		}
		return filepath.Join(r.userHome, p[1:])
	}
	return p
}

func (r *resolver) resolveRoot(abs string) (string, error) {
	if err := checkChars(abs); err != nil {
		return "", err
	}
	if r.win != nil {
		return winRoot(r.win, abs)
	}
	return resolveRootOS(filepath.Clean(abs))
}

// physical resolves an absolute path component by component, as the
// kernel does: a symlink is replaced by its target (relative to the link's
// directory) and resolution restarts there; ".." goes to the parent of what
// has been resolved so far, not of what was written. Components that do
// not exist are appended as written, since nothing under them can be a
// link. A dangling link is followed to where it points, because writing
// through it creates the target.
//
// Every component is resolved from the file system root, every time: a
// folder inside a root, even a root itself, can become a link after quiver
// first saw it, so no prefix is trusted.
//
// Below a component that does not exist nothing can be a link, so the
// rest is appended without looking, until ".." climbs back out of it.
// w, when not nil, is charged for every lookup and refuses past its caps.
func physical(abs string, w *work) (string, error) {
	return physicalBelow(string(filepath.Separator), abs, w)
}

// physicalBelow is physical for base joined with rel, where base is an
// absolute path already resolved (a server's working folder, resolved
// once): only rel's components are looked up, until a link or ".." leads
// out of base, from where every component is looked up again.
func physicalBelow(base, rel string, w *work) (string, error) {
	if len(base)+len(rel) > maxPathLen {
		return "", bad("the path is longer than %d bytes", maxPathLen)
	}
	cur := make([]byte, 1, len(base)+len(rel)+1)
	cur[0] = filepath.Separator
	depth := 0    // components in cur
	missing := -1 // depth of the first component found missing, or -1
	trusted := splitPath(base)
	for _, c := range trusted {
		if depth > 0 {
			cur = append(cur, filepath.Separator)
		}
		cur = append(cur, c...)
		depth++
	}
	comps := splitPath(rel)
	links := 0
	for i := 0; i < len(comps); i++ {
		if err := w.step(); err != nil {
			return "", err
		}
		c := comps[i]
		switch c {
		case ".":
			continue
		case "..":
			if depth > 0 {
				cut := bytes.LastIndexByte(cur, filepath.Separator)
				cur = cur[:max(cut, 1)]
				depth--
			}
			if depth < missing {
				missing = -1
			}
			continue
		}
		prev := len(cur)
		if depth > 0 {
			cur = append(cur, filepath.Separator)
		}
		cur = append(cur, c...)
		depth++
		if missing >= 0 {
			continue
		}
		if err := w.lookup(depth); err != nil {
			return "", err
		}
		next := string(cur)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				missing = depth
				continue
			}
			if errors.Is(err, syscall.ENAMETOOLONG) {
				return "", bad("a component of the path is too long")
			}
			// Permission denied and the like: quiver cannot see whether a
			// link hides here, so it will not vouch for the path.
			return "", bad("cannot inspect %s: %v", next, errors.Unwrap(err))
		}
		if procfs(next) {
			// /proc/self/cwd, /proc/<pid>/root, /dev/fd/N: links that mean
			// one thing in quiver and another in the server that opens them.
			return "", bad("%s is under /proc, whose links point into whichever process opens them", next)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		links++
		if links > maxLinks {
			return "", bad("too many levels of symbolic links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", bad("cannot read link %s", next)
		}
		cur, depth = cur[:prev], depth-1
		if filepath.IsAbs(target) {
			cur, depth = cur[:1], 0
		}
		rest := append(splitPath(target), comps[i+1:]...)
		comps = rest
		i = -1
	}
	return string(cur), nil
}

func splitPath(p string) []string {
	parts := strings.Split(p, string(filepath.Separator))
	out := parts[:0]
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// checkChars refuses what no honest path contains: NUL and other control
// characters, bidi overrides that make a path read differently than it
// resolves, and U+FFFD, which is what invalid UTF-8 or a lone surrogate
// becomes once decoded.
func checkChars(s string) error {
	if !utf8.ValidString(s) {
		return bad("the path is not valid UTF-8")
	}
	for _, r := range s {
		switch {
		case r == 0:
			return bad("the path contains a NUL byte")
		case r == utf8.RuneError:
			return bad("the path contains invalid UTF-8 or an unpaired surrogate")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return bad("the path contains a control character (U+%04X)", r)
		case isBidi(r):
			return bad("the path contains a bidirectional formatting character (U+%04X)", r)
		}
	}
	return nil
}

func isBidi(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// A frame is where a server places paths: the folders it resolves a
// relative path against, and its HOME.
type frame struct {
	bases     []string
	home      string
	elsewhere bool // relative paths are not on this machine (Tool.RelativeElsewhere)
}

// placed is what the fence made of one path string.
type placed struct {
	primary  string   // the reading a well-behaved server takes; "" if unresolved
	readings []string // every reading quiver could place, resolved
	// unresolved says why some reading could not be placed ("" when all
	// were); such a path is outside whatever its other readings are.
	unresolved string
}

// readings returns every plausible reading of a path argument as an
// absolute path in the server's frame, or an error when the string cannot
// be resolved safely. w is charged for the work.
func (r *resolver) readings(s string, fr frame, w *work) (placed, error) {
	var out placed
	if len(s) > maxPathLen {
		return out, bad("the path is longer than %d bytes", maxPathLen)
	}
	if err := checkChars(s); err != nil {
		return out, err
	}
	set := map[string]bool{}
	add := func(p string) {
		if !set[p] {
			set[p] = true
			out.readings = append(out.readings, p)
		}
	}
	unplaced := func(why string) {
		if out.unresolved == "" {
			out.unresolved = why
		}
	}

	var forms []string // strings to read as plain paths
	if isFileURI(s) {
		p, err := fileURIPath(s)
		if err != nil {
			return out, err
		}
		forms = append(forms, p)
	}
	forms = append(forms, s)

	// Variants a server might derive, applied to every form found until no
	// new one appears, so that any combination (padding, then fullwidth
	// dots, then backslashes) is covered; a string with more readings than
	// maxForms is refused rather than half checked.
	for i := 0; i < len(forms); i++ {
		for _, v := range variants(forms[i], r.win != nil) {
			if v.err != nil {
				return out, v.err
			}
			if r.win != nil && v.s == strings.ReplaceAll(forms[i], `\`, "/") {
				// On Windows "\" and "/" are one separator already; the
				// swap would only turn \\?\ into a path Windows never sees.
				continue
			}
			if !contains(forms, v.s) {
				if len(forms) == maxForms {
					return out, bad("the path can be read in too many ways")
				}
				forms = append(forms, v.s)
			}
		}
	}

	primary := ""
	for i, f := range forms {
		if err := checkChars(f); err != nil {
			return out, err
		}
		if r.win != nil {
			wp, err := winReadings(r.win, f, fr, w)
			if err != nil {
				return out, err
			}
			unplaced(wp.unresolved)
			for _, p := range wp.readings {
				if i == 0 && primary == "" {
					primary = p
				}
				add(p)
			}
			continue
		}
		if why := unplacedOS(f, fr); why != "" {
			unplaced(why)
			continue
		}
		var abs []string
		tilde := strings.HasPrefix(f, "~")
		switch {
		case f == "~" || strings.HasPrefix(f, "~/"):
			if fr.home == "" || !filepath.IsAbs(fr.home) {
				unplaced("~ stands for this server's HOME, which is unknown")
			} else {
				abs = append(abs, filepath.Join(fr.home, f[1:]))
			}
		case tilde:
			// "~name": a shell expands it when name is a user and leaves it
			// literal otherwise; quiver reads it the same way.
			name, _, _ := strings.Cut(f[1:], "/")
			if r.lookupHome != nil {
				if err := w.lookup(1); err != nil {
					return out, err
				}
				if h, err := r.lookupHome(name); err == nil && h != "" {
					abs = append(abs, filepath.Join(h, strings.TrimPrefix(f[1:], name)))
				}
			}
		}
		// The literal reading as well: a server that does not expand "~"
		// takes "~/x" as a directory named "~" under its base.
		switch {
		case filepath.IsAbs(f):
			abs = append(abs, f)
		case len(fr.bases) == 0:
			switch {
			case fr.elsewhere && !tilde && !isFileURI(f):
				// Not a file here: nothing to judge.
			case otherSchemeURI(f):
				// test://example, https://host/x: a URI, not a file name.
				// Read literally it is a relative name no further from
				// the server's folder than a bare word, which the fence
				// does not judge either; with a ".." part it is a path.
			case out.unresolved != "":
			case tilde:
				unplaced("a server that does not expand ~ reads it as a relative path, and this server declares no path_base")
			case f == "":
				unplaced("it is empty, which a server reads as its base folder, and this server declares no path_base")
			default:
				unplaced("it is a relative path and this server declares no path_base")
			}
		default:
			for _, b := range fr.bases {
				if !filepath.IsAbs(b) {
					unplaced(fmt.Sprintf("this server's path_base %q is not an absolute folder", b))
					continue
				}
				abs = append(abs, b+string(filepath.Separator)+f)
			}
		}
		for _, a := range abs {
			// Physical resolution applies ".." after symlinks (the kernel);
			// resolving the lexically cleaned path applies it before (Node's
			// path.resolve, Python's abspath). Both must be inside.
			p1, err := w.physical(a)
			if err != nil {
				return out, err
			}
			if i == 0 && primary == "" {
				primary = p1
			}
			add(p1)
			if c := filepath.Clean(a); c != a {
				p2, err := w.physical(c)
				if err != nil {
					return out, err
				}
				add(p2)
			}
		}
	}
	if out.unresolved == "" {
		out.primary = primary
	}
	return out, nil
}
