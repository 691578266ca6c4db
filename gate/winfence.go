package gate

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// The Windows fence: the rules of winpath.go applied to a path argument
// in the server's frame, and the file system asked, one name at a time,
// through winFS (docs/ARCHITECTURE.md, "Paths on Windows"). Everything
// here runs on every OS; only the winFS that asks Windows itself
// (fence_windows.go) is Windows-only, and tests give a map instead.

// A winFS answers what the Windows fence needs to know of one name.
type winFS interface {
	// entry looks up the last name of p, an absolute path ("C:\a\b",
	// \\server\share\a) whose folders are already resolved. It returns
	// an error wrapping fs.ErrNotExist when there is no such name.
	entry(p string) (winEntry, error)
}

// A winEntry is one name as the file system holds it.
type winEntry struct {
	// name is the name as stored: its long name when p gave the 8.3 short
	// one (PROGRA~1), in the case it was created with.
	name string
	// link is where a symbolic link, junction or mount point leads, as
	// its reparse point says ("C:\x", `..\x`, \??\Volume{…}\); "" for
	// any other entry, including reparse points that are not links
	// (OneDrive placeholders, deduplicated files), which open in place.
	link string
}

// winPlacement is what the Windows fence made of one form of a path.
type winPlacement struct {
	readings []string
	// unresolved says why some reading could not be placed; the path is
	// then outside whatever its other readings are.
	unresolved string
}

// winReadings places f, one form of a path argument, in the server's
// frame: every reading a Windows server may take, resolved through fsys.
func winReadings(fsys winFS, f string, fr frame, w *work) (winPlacement, error) {
	var out winPlacement
	unplaced := func(why string) {
		if out.unresolved == "" {
			out.unresolved = why
		}
	}
	var targets []winPath // absolute paths to resolve
	// "~", "~\x", "~/x": the server's HOME, as PowerShell and many
	// servers expand it; read literally as well (a folder named "~").
	if f == "~" || strings.HasPrefix(f, `~\`) || strings.HasPrefix(f, "~/") {
		h, why := parseWin(fr.home)
		if fr.home == "" || why != "" || h.kind != winDrive && h.kind != winUNC {
			unplaced("~ stands for this server's HOME, which is unknown")
		} else {
			h.comps = append(h.comps, splitWin(f[1:], false)...)
			targets = append(targets, h)
		}
	}
	// "/C:/x" is a file: URI's path: Windows servers read it as C:\x.
	// Read literally it would name "C:" under the current drive's root: a
	// file "C" with a stream of no name and no type, which NTFS does not
	// open, so that reading names nothing.
	if len(f) >= 3 && f[0] == '/' && isLetter(f[1]) && f[2] == ':' && (len(f) == 3 || isWinSep(f[3])) {
		f = f[1:]
	}
	p, why := parseWin(f)
	if why != "" {
		unplaced(why)
		return out, nil
	}
	switch p.kind {
	case winDrive, winUNC:
		targets = append(targets, p)
	case winRelative:
		if len(fr.bases) == 0 {
			switch {
			case fr.elsewhere && !strings.HasPrefix(f, "~") && !isFileURI(f):
				// Not a file here: nothing to judge.
			case otherSchemeURI(f):
				// https://host/x: a URI, not a file name (as on unix).
			case out.unresolved != "":
			case strings.HasPrefix(f, "~"):
				unplaced("a server that does not expand ~ reads it as a relative path, and this server declares no path_base")
			case f == "":
				unplaced("it is empty, which a server reads as its base folder, and this server declares no path_base")
			default:
				unplaced("it is a relative path and this server declares no path_base")
			}
			break
		}
		fallthrough
	default:
		if len(fr.bases) == 0 {
			unplaced(fmt.Sprintf("it is relative to the current drive or its folder (%s), and this server declares no path_base", f))
			break
		}
		for _, b := range fr.bases {
			bp, why := parseWin(b)
			if why != "" || bp.kind != winDrive && bp.kind != winUNC {
				unplaced(fmt.Sprintf("this server's path_base %q is not an absolute Windows folder", b))
				continue
			}
			t := bp
			switch p.kind {
			case winRelative:
				t.comps = append(append([]string(nil), bp.comps...), p.comps...)
			case winRooted:
				t.comps = p.comps
			case winDriveRelative:
				if bp.kind != winDrive || bp.drive != p.drive {
					unplaced(fmt.Sprintf("%s is relative to the current folder of drive %c:, which this server's frame does not give", f, p.drive))
					continue
				}
				t.comps = append(append([]string(nil), bp.comps...), p.comps...)
			}
			t.dirSlash = p.dirSlash
			targets = append(targets, t)
		}
	}
	seen := map[string]bool{}
	for _, t := range targets {
		for _, rd := range winForms(t) {
			if err := w.reading(); err != nil {
				return out, err
			}
			res, why, err := winResolve(fsys, rd, 0, w)
			if err != nil {
				return out, err
			}
			if why != "" {
				unplaced(why)
				continue
			}
			for _, r := range res {
				if !seen[r] {
					seen[r] = true
					out.readings = append(out.readings, r)
				}
			}
		}
	}
	return out, nil
}

// A winName is an absolute path as a root and names, ready to resolve.
type winName struct {
	root  string
	comps []string
	why   string // not a file Windows opens ("" when it is)
}

// winForms normalises an absolute path every way a Windows server may
// (winpath.go: the three trims; none for a verbatim path) and turns each
// into the names of files.
func winForms(p winPath) []winName {
	var out []winName
	// Windows' own trim first: it is the reading a well-behaved server
	// takes (the one read_file opens).
	hows := []int{trimDoc, trimNone, trimAll}
	if p.verbatim {
		hows = []int{trimNone}
	}
	// A device name anywhere as written, even one a later ".." removes:
	// Windows reads a path that begins with one as that device
	// (COM1.TXT\..\x is \\.\COM1), before it evaluates "..".
	for _, c := range p.comps {
		if d := deviceName(c); d != "" {
			return []winName{{why: fmt.Sprintf("it names the device %s (a reserved name in any folder), not a file", d)}}
		}
	}
	for _, how := range hows {
		comps := p.comps
		if !p.verbatim {
			comps = dotSteps(comps)
		} else {
			for _, c := range comps {
				if c == "." || c == ".." {
					return []winName{{why: fmt.Sprintf("it is a \\\\?\\ path with a %q name, which Windows does not evaluate", c)}}
				}
			}
		}
		comps = trimComps(comps, p.dirSlash, how)
		names, why := fileComps(comps)
		n := winName{root: p.rootString(), comps: names, why: why}
		dup := false
		for _, o := range out {
			dup = dup || o.root == n.root && o.why == n.why && strings.Join(o.comps, `\`) == strings.Join(n.comps, `\`)
		}
		if !dup {
			out = append(out, n)
		}
		// An administrative share (\\host\C$\x) is drive C: of that host,
		// quiver's own machine among them: read as C:\x as well, so that
		// quiver's files are found behind it.
		if p.kind == winUNC && len(p.share) == 2 && isLetter(p.share[0]) && p.share[1] == '$' && why == "" {
			out = append(out, winName{root: string([]byte{upperASCII(p.share[0]), ':'}), comps: names})
		}
	}
	return out
}

// winResolve resolves n through fsys as Windows opens it: each name is
// looked up below the folders resolved so far and takes its stored
// spelling (the long name of an 8.3 name, the case it was created in);
// a link, junction or mount point is replaced by its target, read as
// Windows reads it (a relative target from the link's folder, ".."
// evaluated lexically), and the walk starts again there. Below a name
// that does not exist nothing can be a link, so the rest is taken as
// written. The first trusted names of n are known resolved.
func winResolve(fsys winFS, n winName, trusted int, w *work) ([]string, string, error) {
	if n.why != "" {
		return nil, n.why, nil
	}
	root, comps := n.root, n.comps
	cur := make([]string, 0, len(comps))
	missing, links := false, 0
	for i := 0; i < len(comps); i++ {
		if err := w.step(); err != nil {
			return nil, "", err
		}
		c := comps[i]
		if missing || i < trusted {
			cur = append(cur, c)
			continue
		}
		if err := w.lookup(len(cur) + 1); err != nil {
			return nil, "", err
		}
		if fsys == nil {
			return nil, "quiver cannot ask this machine's file system about Windows names", nil
		}
		next := winJoin(root, append(cur, c))
		e, err := fsys.entry(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = true
			cur = append(cur, c)
			continue
		case err != nil:
			return nil, fmt.Sprintf("quiver cannot inspect %s: %v", next, err), nil
		case e.name == "" || strings.ContainsAny(e.name, `\/:`):
			return nil, fmt.Sprintf("quiver cannot tell the stored name of %s", next), nil
		}
		if e.link == "" {
			cur = append(cur, e.name)
			continue
		}
		links++
		if links > maxLinks {
			return nil, "", bad("too many levels of links")
		}
		tp, why := parseWin(e.link)
		if why != "" {
			return nil, fmt.Sprintf("%s leads to %s: %s", next, e.link, why), nil
		}
		rest := comps[i+1:]
		switch tp.kind {
		case winDrive, winUNC:
		case winRelative:
			tp.kind, tp.drive, tp.server, tp.share = winDrive, 0, "", ""
			tp.comps = append(append([]string(nil), cur...), tp.comps...)
			tp.rootOverride(root)
		case winRooted:
			tp.comps = append([]string(nil), tp.comps...)
			tp.rootOverride(root)
		default:
			return nil, fmt.Sprintf("%s leads to %s, relative to a drive's current folder", next, e.link), nil
		}
		if !tp.verbatim {
			tp.comps = dotSteps(tp.comps)
		}
		names, why := fileComps(tp.comps)
		if why != "" {
			return nil, fmt.Sprintf("%s leads to %s: %s", next, e.link, why), nil
		}
		root = tp.rootString()
		comps = append(names, rest...)
		cur, i, trusted = cur[:0], -1, 0
	}
	return []string{winJoin(root, cur)}, "", nil
}

// rootOverride gives p the root written as root ("C:" or \\server\share).
func (p *winPath) rootOverride(root string) {
	if s, ok := strings.CutPrefix(root, `\\`); ok {
		p.kind = winUNC
		p.server, p.share, _ = strings.Cut(s, `\`)
		return
	}
	p.kind, p.drive = winDrive, root[0]
}

// winRoot resolves an allowed folder or one of quiver's own files, given
// absolute, through fsys.
func winRoot(fsys winFS, abs string) (string, error) {
	p, why := parseWin(abs)
	if why == "" && p.kind != winDrive && p.kind != winUNC {
		why = "it is not an absolute Windows path (C:\\… or \\\\server\\share\\…)"
	}
	if why != "" {
		return "", bad("%s", why)
	}
	if !p.verbatim {
		p.comps = dotSteps(p.comps)
	}
	names, why := fileComps(trimComps(p.comps, p.dirSlash, trimDoc))
	if why != "" {
		return "", bad("%s", why)
	}
	rs, why, err := winResolve(fsys, winName{root: p.rootString(), comps: names}, 0, nil)
	if err != nil {
		return "", err
	}
	if why != "" {
		return "", bad("%s", why)
	}
	return rs[0], nil
}

// winAbs reports whether p is a full Windows path: a drive, a share, or
// either behind \\?\ or \\.\.
func winAbs(p string) bool {
	wp, why := parseWin(p)
	return why == "" && (wp.kind == winDrive || wp.kind == winUNC)
}

// winClean is p normalised as Windows normalises it, or p when it is not
// a path Windows can place.
func winClean(p string) string {
	wp, why := parseWin(p)
	if why != "" || wp.kind != winDrive && wp.kind != winUNC {
		return p
	}
	if !wp.verbatim {
		wp.comps = dotSteps(wp.comps)
	}
	return winJoin(wp.rootString(), trimComps(wp.comps, wp.dirSlash, trimDoc))
}

// winUnderCwd is where a string leads when a server running in cwd (an
// absolute folder, already resolved) opens it as a file name: relative
// names from cwd, "\x" from cwd's drive root, "C:x" from cwd when on its
// drive. Only the names below cwd are looked up.
func winUnderCwd(fsys winFS, cwd, s string, w *work) ([]string, error) {
	base, why := parseWin(cwd)
	p, why2 := parseWin(s)
	if why != "" || why2 != "" || p.verbatim {
		return nil, nil
	}
	var t winPath
	trusted := 0
	switch {
	case p.kind == winRelative, p.kind == winDriveRelative && base.kind == winDrive && p.drive == base.drive:
		t = base
		t.comps = append(append([]string(nil), base.comps...), p.comps...)
		trusted = len(base.comps)
		if slicesHasDots(p.comps) {
			trusted = 0
		}
	case p.kind == winRooted:
		t = base
		t.comps = p.comps
	default:
		return nil, nil
	}
	t.dirSlash = p.dirSlash
	var out []string
	for _, n := range winForms(t) {
		rs, why, err := winResolve(fsys, n, trusted, w)
		if err != nil {
			if errors.Is(err, errTooComplex) {
				return nil, err
			}
			continue
		}
		if why == "" {
			out = append(out, rs...)
		}
	}
	return out, nil
}

func slicesHasDots(comps []string) bool {
	for _, c := range comps {
		if c == "." || c == ".." {
			return true
		}
	}
	return false
}

// Hooks: the resolver asks these, so the fence is one piece of code on
// every OS and reads Windows paths whenever it has a winFS (on Windows
// always; in tests on any OS).

func (r *resolver) isAbs(p string) bool {
	if r.win != nil {
		return winAbs(p)
	}
	return filepath.IsAbs(p)
}

func (r *resolver) clean(p string) string {
	if r.win != nil {
		return winClean(p)
	}
	return filepath.Clean(p)
}

// insideAny reports whether the resolved path p is under one of roots.
func (r *resolver) insideAny(p string, roots []string) bool {
	if r.win == nil {
		return insideAny(p, roots)
	}
	for _, root := range roots {
		if winWithin(p, root) {
			return true
		}
	}
	return false
}

// withinFold reports whether p is root or under it, names compared
// without case (for quiver's own files: a false match refuses more).
func (r *resolver) withinFold(p, root string) bool {
	if r.win != nil {
		return winWithinLoose(p, root)
	}
	return withinFold(p, root)
}

// uriPath is the local path a file: URI names to this machine's servers:
// on Windows "file:///C:/x" is C:\x.
func (r *resolver) uriPath(u string) (string, error) {
	p, err := fileURIPath(u)
	if err != nil || r.win == nil {
		return p, err
	}
	if len(p) >= 3 && p[0] == '/' && isLetter(p[1]) && p[2] == ':' {
		p = p[1:]
	}
	return strings.ReplaceAll(p, "/", `\`), nil
}

// protectedFromCwdWindows is protectedFromCwd's check of one string s on
// Windows: where it leads from the server's folder cwd, through links.
func (g *Gate) protectedFromCwdWindows(c Call, class Class, cwd, s string, w *work, own []string) (Decision, bool) {
	rs, err := winUnderCwd(g.res.win, cwd, s, w)
	if errors.Is(err, errTooComplex) {
		return g.tooComplex(c, class, err), true
	}
	for _, r := range rs {
		if d, hit := g.protectedPath(s, r, class, own); hit {
			return d, true
		}
	}
	return Decision{}, false
}

// reading charges one reading resolved (work.physical does for unix).
func (w *work) reading() error {
	if w == nil {
		return nil
	}
	w.readings++
	if w.readings > maxReadings {
		return &tooComplex{fmt.Sprintf("their paths can be read in more than %d ways", maxReadings)}
	}
	return nil
}

// protectedBehindDevice refuses a path written through a device or volume
// (\\?\Volume{…}\x, \\?\GLOBALROOT\Device\HarddiskVolume3\x,
// \\.\HarddiskVolume3\x) whose rest leads to one of quiver's own files
// on that file's drive. Such a path cannot be placed, so it already asks;
// this keeps an approval from reaching quiver's files through it, as
// for any other spelling. The rest is tried after each of the first few
// names (a volume is named by one to three) and resolved through links.
func (g *Gate) protectedBehindDevice(raw string, class Class, w *work, own []string) (Decision, bool) {
	p, why := parseWin(raw)
	if why == "" || (!strings.HasPrefix(raw, `\\`) && !strings.HasPrefix(raw, `\??\`)) || len(raw) < 4 {
		return Decision{}, false
	}
	comps := splitWin(raw[4:], p.verbatim)
	for _, prot := range g.protected {
		parts := winParts(prot)
		if len(parts) == 0 || len(parts[0]) != 2 {
			continue // quiver's files on a share: no volume path leads there
		}
		for k := 1; k <= 3 && k < len(comps); k++ {
			names, why := fileComps(trimComps(dotSteps(comps[k:]), false, trimAll))
			if why != "" {
				continue
			}
			rs, why, err := winResolve(g.res.win, winName{root: parts[0], comps: names}, 0, w)
			if err != nil || why != "" {
				continue
			}
			if d, hit := g.protectedPath(raw, rs[0], class, own); hit {
				return d, true
			}
		}
	}
	return Decision{}, false
}
