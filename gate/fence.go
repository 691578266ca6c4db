package gate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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
// the files exist, not what they hold. The check compares resolved paths:
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
}

func newResolver(userHome string) *resolver {
	return &resolver{userHome: userHome, lookupHome: func(name string) (string, error) {
		u, err := user.Lookup(name)
		if err != nil {
			return "", err
		}
		return u.HomeDir, nil
	}}
}

// expandHome expands "~" in quiver's own configuration.
func (r *resolver) expandHome(p string) string {
	if r.userHome != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(r.userHome, p[1:])
	}
	return p
}

func (r *resolver) resolveRoot(abs string) (string, error) {
	if err := checkChars(abs); err != nil {
		return "", err
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
	if len(abs) > maxPathLen {
		return "", bad("the path is longer than %d bytes", maxPathLen)
	}
	cur := make([]byte, 1, len(abs)+1)
	cur[0] = filepath.Separator
	depth := 0    // components in cur
	missing := -1 // depth of the first component found missing, or -1
	comps := splitPath(abs)
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
		for _, v := range variants(forms[i]) {
			if v.err != nil {
				return out, v.err
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

// isWindowsPath reports whether s is a Windows path: a drive ("C:\",
// "C:/") or a UNC or device path ("\\server\share", "\\?\C:\").
func isWindowsPath(s string) bool {
	return isDrivePath(s) || strings.HasPrefix(s, `\\`)
}

func isDrivePath(s string) bool {
	return len(s) >= 3 && s[1] == ':' && (s[2] == '\\' || s[2] == '/') &&
		('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z')
}

// hasPathShape reports whether a string found anywhere in the arguments is
// a path by its shape, whatever its argument is called. A string that
// spans lines or is longer than any path is content, not a path.
func hasPathShape(s string) bool {
	if len(s) > maxPathLen {
		return false
	}
	t := strings.TrimFunc(s, isTrimmed)
	if strings.ContainsAny(t, "\n\r") {
		return false
	}
	if strings.Trim(t, "/") == "" {
		// "/" alone under a name that says nothing of paths is a
		// delimiter or a URL path far more often than the root folder;
		// under a path-like name it is still judged.
		return false
	}
	if shaped(t) || relativeShaped(t) {
		return true
	}
	if !isASCII(t) {
		// Lookalikes (fullwidth solidus and tilde) that a normalising
		// server reads as the real thing.
		return shaped(norm.NFKC.String(t))
	}
	return false
}

// otherSchemeURI reports whether t is a URI of a scheme other than file:
// (scheme://...) with no ".." part.
func otherSchemeURI(t string) bool {
	i := strings.Index(t, "://")
	if i <= 0 || isFileURI(t) {
		return false
	}
	for j, r := range t[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || j > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	parts := strings.FieldsFunc(t[i+3:], func(r rune) bool { return r == '/' || r == '\\' })
	return !slices.Contains(parts, "..")
}

// relativeShaped reports whether t looks like a relative path: no white
// space and no scheme, and either a ".." part or two non-empty parts
// around a separator with a letter somewhere ("outside/canary.txt",
// "sub\\x"; not "1/2" or "2024/01/02"). A server that opens any string
// as a file reaches what such a string names from its own folder, so the
// fence judges it like any path: in the server's frame, and outside where
// the server declares none.
func relativeShaped(t string) bool {
	if t == "" || strings.ContainsFunc(t, unicode.IsSpace) || strings.Contains(t, "://") {
		return false
	}
	parts := strings.FieldsFunc(t, func(r rune) bool { return r == '/' || r == '\\' })
	if slices.Contains(parts, "..") {
		return true
	}
	return len(parts) >= 2 && strings.ContainsAny(t, `/\`) && strings.ContainsFunc(t, unicode.IsLetter)
}

func shaped(t string) bool {
	for _, p := range []string{"/", "~/", "~\\", "./", "../", ".\\", "..\\", `\\`} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return t == "~" || isFileURI(t) || isDrivePath(t)
}

type variant struct {
	s   string
	err error
}

func variants(s string) []variant {
	var out []variant
	if t := strings.TrimFunc(s, isTrimmed); t != s && t != "" {
		// Servers that trim their arguments (JavaScript's trim also drops
		// U+FEFF).
		out = append(out, variant{s: t})
	}
	if strings.ContainsRune(s, '\\') {
		// Windows-minded servers (and some Node code) treat "\" as a
		// separator.
		out = append(out, variant{s: strings.ReplaceAll(s, `\`, "/")})
	}
	if strings.ContainsRune(s, '%') {
		// Decoded leniently, as Python's unquote does: a stray "%" does not
		// stop "%2e%2e" after it from decoding.
		if d := unquote(s); d != s {
			if why := oddDecoding(s, d); why != "" {
				return []variant{{err: bad("percent-encoding in the path %s", why)}}
			}
			out = append(out, variant{s: d})
		}
	}
	if isFileURI(s) {
		// A reading that became a file: URI (after trimming, say) is read
		// as one too.
		p, err := fileURIPath(s)
		if err != nil {
			return []variant{{err: err}}
		}
		out = append(out, variant{s: p})
	}
	if !isASCII(s) {
		// Lookalikes (fullwidth solidus, one-dot leader) become "/" and
		// "." under compatibility normalisation, which some file systems
		// and libraries apply.
		for _, f := range []norm.Form{norm.NFKC, norm.NFC, norm.NFD} {
			if n := f.String(s); n != s {
				out = append(out, variant{s: n})
			}
		}
	}
	return out
}

// oddDecoding says why a percent-decoded path is suspicious: it hides a
// separator, a dot segment, a control character or another layer of
// encoding — nothing an honest file name needs to encode.
func oddDecoding(raw, dec string) string {
	lower := strings.ToLower(raw)
	switch {
	case strings.Contains(lower, "%2f"), strings.Contains(lower, "%5c"):
		return "hides a path separator"
	case strings.Contains(lower, "%2e"):
		return "hides a dot"
	case strings.Contains(lower, "%00"):
		return "hides a NUL byte"
	case !utf8.ValidString(dec):
		return "decodes to invalid UTF-8"
	case checkChars(dec) != nil:
		return "decodes to a control character"
	}
	if unquote(dec) != dec {
		return "is encoded twice"
	}
	return ""
}

// unquote decodes every valid %XX and leaves anything else as it is.
func unquote(s string) string {
	if !strings.ContainsRune(s, '%') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// mentionsFileURI reports whether any argument string is, or once trimmed
// or normalised becomes, a file: URI: those are fenced under any name.
func mentionsFileURI(s string) bool {
	t := strings.TrimFunc(s, isTrimmed)
	return isFileURI(t) || isFileURI(norm.NFKC.String(t))
}

func isFileURI(s string) bool {
	return len(s) >= 5 && strings.EqualFold(s[:5], "file:")
}

// fileURIPath extracts the local path of a file: URI, refusing anything a
// local server could not open as a plain path.
func fileURIPath(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", bad("not a valid file URI: %v", errors.Unwrap(err))
	}
	if u.Opaque != "" {
		return "", bad("file URI without a path (%q)", s)
	}
	if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
		return "", bad("file URI names another host (%q)", u.Host)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", bad("file URI with a user, query or fragment")
	}
	if oddDecoding(u.EscapedPath(), u.Path) != "" && strings.ContainsRune(u.EscapedPath(), '%') {
		return "", bad("file URI %s", oddDecoding(u.EscapedPath(), u.Path))
	}
	if u.Path == "" {
		return "", bad("file URI without a path")
	}
	return u.Path, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

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

// pathKeyWords are argument names that carry paths, alone or as the last
// word of a longer name (output_path, outputPath, work-dir, file_name).
var pathKeyWords = []string{
	"path", "paths", "pathname", "pathnames", "file", "files", "filename", "filenames", "filepath",
	"dir", "dirs", "directory", "directories", "folder", "folders",
	"cwd", "root", "roots", "source", "sources", "destination", "destinations",
	"target", "targets", "src", "dst", "dest", "workdir",
	"uri", "uris", "location", "project", "workspace", "repository", "notebook",
}

// pathSuffixes end names written as one lowercase word (inputfile,
// outputdir, basepath); notPathNames are such words that are not paths.
var (
	pathSuffixes = []string{"file", "files", "path", "paths", "dir", "dirs", "folder", "directory"}
	notPathNames = []string{"profile", "profiles", "xpath", "jsonpath"}
	// onlyPathNames are paths only as a whole name ({"from": ..., "to":
	// ...}): as the last word of a longer one (reply_to, valid_from) they
	// are rarely paths.
	onlyPathNames = []string{"from", "to"}

	pathWordsAnywhere = []string{"path", "paths", "file", "files", "filepath", "filename", "dir", "directory", "folder"}
	notPathLast       = []string{"id", "ids", "type", "types", "size", "sizes", "count", "format", "mode", "ext", "extension",
		"pattern", "patterns", "content", "contents", "data", "url", "urls", "hash", "sha", "length", "limit", "encoding"}
)

// isPathKey reports whether an argument named name holds paths: its last
// word is a path word (output_path, workDir, old_path, newPath), or its
// last word is "name" after one (file_name, dirName), or it is one
// lowercase word ending in one (inputfile), or it is from or to. This is
// the one place names are judged; values are also paths by their shape
// (hasPathShape), whatever their name.
func isPathKey(name string) bool {
	// file1, path_2, src0: a number at the end numbers the path.
	words := nameWords(strings.TrimRightFunc(name, func(r rune) bool { return unicode.IsDigit(r) || r == '_' || r == '-' }))
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	if contains(pathKeyWords, last) || (len(words) == 1 && contains(onlyPathNames, last)) {
		return true
	}
	// pathInProject, file_path_list: a path word anywhere, unless the last
	// word makes it something else (file_id, file_size, dir_mode).
	if !contains(notPathLast, last) {
		for _, w := range words[:len(words)-1] {
			if contains(pathWordsAnywhere, w) {
				return true
			}
		}
	}
	if (last == "name" || last == "names") && len(words) > 1 && contains(pathKeyWords, words[len(words)-2]) {
		return true
	}
	if len(words) == 1 && !contains(notPathNames, last) {
		for _, suf := range pathSuffixes {
			if strings.HasSuffix(last, suf) {
				return true
			}
		}
	}
	return false
}

// nameWords splits an argument name into lowercase words at _, -, . and
// camelCase boundaries.
func nameWords(name string) []string {
	var words []string
	var cur []rune
	rs := []rune(name)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// inheritPath are keys inside a path argument's object that hold the path
// itself ({"files": [{"name": ...}]}, {"path": {"value": ...}}); other
// keys there (content, mode) do not.
var inheritPath = []string{"name", "names", "value", "values", "location", "uri", "base"}

// collectPaths finds the path strings in the arguments: values of declared
// or path-named keys (strings, arrays of them, at any depth), and any
// string or object key anywhere that is a path by its shape. Shadowed
// duplicate values are searched too. The top-level argument skip (quiver's
// own justification) is the model's words, not a path, unless declared.
// It stops after maxPathValues+1 values: the caller refuses past the cap.
func collectPaths(args map[string]any, shadows []shadow, declared []string, skip string) []rawPath {
	var out []rawPath
	isDeclared := func(k string) bool { return contains(declared, k) }
	for _, k := range pathyKeys(args, false, isDeclared) {
		if k.name == skip && skip != "" && !k.pathy {
			continue
		}
		if isPathShapedKey(k.name) {
			out = append(out, rawPath{arg: k.name, s: k.name})
		}
		walkPaths(k.name, k.name, args[k.name], k.pathy, 0, &out)
	}
	for _, s := range shadows {
		top := s.key
		if !s.top {
			top = "(nested)"
		} else if s.key == skip && skip != "" && !isDeclared(s.key) {
			continue
		}
		walkPaths(top, s.key, s.value, (s.top && isDeclared(s.key)) || isPathKey(s.key), 0, &out)
	}
	return out
}

type rawPath struct {
	arg string
	s   string
}

func walkPaths(top, key string, v any, pathy bool, depth int, out *[]rawPath) {
	if depth > maxArgDepth || len(*out) > maxPathValues {
		return
	}
	switch x := v.(type) {
	case string:
		if pathy || hasPathShape(x) || mentionsFileURI(x) {
			*out = append(*out, rawPath{arg: top, s: x})
		}
	case []any:
		for _, e := range x {
			walkPaths(top, key, e, pathy, depth+1, out)
		}
	case map[string]any:
		for _, k := range pathyKeys(x, pathy, nil) {
			if (pathy && looksLikePath(k.name)) || isPathShapedKey(k.name) {
				// {"files": {"/etc/x": "content"}}: the key is the path.
				*out = append(*out, rawPath{arg: top, s: k.name})
			}
			walkPaths(top, k.name, x[k.name], k.pathy, depth+1, out)
		}
	}
}

type pathyKey struct {
	name  string
	pathy bool
}

// pathyKeys are an object's keys in order, each with whether its value
// holds paths: a path name (or one declared), or a key like "name" either
// inside a path argument (inPath) or beside a path in the same object
// ({"path": "sub", "name": "../x"}).
func pathyKeys(obj map[string]any, inPath bool, declared func(string) bool) []pathyKey {
	keys := make([]pathyKey, 0, len(obj))
	sibling := false
	for k := range obj {
		p := isPathKey(k) || (declared != nil && declared(k))
		sibling = sibling || p
		keys = append(keys, pathyKey{k, p})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].name < keys[j].name })
	for i, k := range keys {
		if !k.pathy && (inPath || sibling) && contains(inheritPath, strings.ToLower(k.name)) {
			keys[i].pathy = true
		}
	}
	return keys
}

// procfs reports whether p is inside /proc, where what a path names
// depends on the process that resolves it.
func procfs(p string) bool {
	return p == "/proc" || strings.HasPrefix(p, "/proc/")
}

// isPathShapedKey reports whether a map key anywhere is a path by its
// shape or a file: URI, which is checked whatever object it is in.
func isPathShapedKey(k string) bool {
	return hasPathShape(k) || mentionsFileURI(k)
}

// looksLikePath reports whether a map key inside a path argument reads as
// a path: it has a separator, starts with "~" or ".", or is a file: URI.
func looksLikePath(k string) bool {
	return strings.ContainsAny(k, "/\\") || strings.HasPrefix(k, "~") || strings.HasPrefix(k, ".") || isFileURI(k)
}
