package gate

import (
	"fmt"
	"strings"
	"unicode"
)

// Windows path rules as plain functions of strings, compiled and tested
// on every OS (docs/ARCHITECTURE.md, "Paths on Windows"). They follow
// Microsoft's "File path formats on Windows systems" and "Naming Files,
// Paths, and Namespaces": a path is identified (drive, drive-relative,
// rooted, UNC, device, relative), the current folder applied, separators
// canonicalised, "." and ".." evaluated lexically without climbing above
// the root, and trailing dots and spaces trimmed, all before any file
// system sees it. Only a path starting exactly with \\?\ (or the NT
// prefix \??\) skips that normalisation.

// winKind is how Windows identifies a path before normalising it.
type winKind int

const (
	winDrive         winKind = iota // C:\dir
	winUNC                          // \\server\share\dir, \\?\UNC\server\share
	winDriveRelative                // C:dir: the current folder of drive C:
	winRooted                       // \dir: the root of the current drive
	winRelative                     // dir: the current folder
)

// A winPath is a Windows path identified, with its components as written
// (split on either separator, empty ones dropped) unless verbatim.
type winPath struct {
	kind          winKind
	drive         byte   // upper case, for winDrive and winDriveRelative
	server, share string // for winUNC
	comps         []string
	// verbatim paths (\\?\, \??\) reach the file system as written:
	// only "\" separates, and "." and ".." are names, not steps.
	verbatim bool
	// dirSlash: the path ends in a separator, which keeps Windows from
	// trimming its last name's trailing dots and spaces.
	dirSlash bool
}

func isWinSep(c byte) bool { return c == '\\' || c == '/' }

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

// splitWin splits on "\" and, unless verbatim, "/", dropping empty parts.
func splitWin(s string, verbatim bool) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == '\\' || !verbatim && r == '/' })
}

// parseWin identifies s as Windows does, or says why it names nothing
// quiver can place on a drive or share.
func parseWin(s string) (winPath, string) {
	var p winPath
	p.dirSlash = s != "" && isWinSep(s[len(s)-1])
	switch {
	case strings.HasPrefix(s, `\\?\`), strings.HasPrefix(s, `\??\`):
		p.verbatim = true
		p.dirSlash = strings.HasSuffix(s, `\`)
		return parseDevice(p, s[4:])
	case len(s) >= 4 && isWinSep(s[0]) && isWinSep(s[1]) && (s[2] == '?' || s[2] == '.') && isWinSep(s[3]):
		return parseDevice(p, s[4:])
	case len(s) >= 2 && isWinSep(s[0]) && isWinSep(s[1]):
		if len(s) > 2 && isWinSep(s[2]) {
			return p, "it starts with three separators, which names no server"
		}
		return parseUNC(p, s[2:])
	case len(s) >= 2 && isLetter(s[0]) && s[1] == ':':
		p.drive = upperASCII(s[0])
		if len(s) > 2 && isWinSep(s[2]) {
			p.kind = winDrive
		} else {
			p.kind = winDriveRelative
		}
		p.comps = splitWin(s[2:], false)
	case s != "" && isWinSep(s[0]):
		p.kind = winRooted
		p.comps = splitWin(s, false)
	default:
		p.kind = winRelative
		p.comps = splitWin(s, false)
	}
	return p, ""
}

// parseDevice reads what follows \\?\ or \\.\: a drive, UNC\server\share,
// or a device or volume, which is not a folder quiver can place.
func parseDevice(p winPath, rest string) (winPath, string) {
	comps := splitWin(rest, p.verbatim)
	if len(rest) > 0 && (rest[0] == '\\' || !p.verbatim && rest[0] == '/') {
		return p, "it is a device path with an empty device name"
	}
	if !p.verbatim {
		// \\.\ is normalised with the prefix as its root: ".." climbs out
		// of the drive (\\.\C:\..\D:\x is D:\x), so it is evaluated before
		// the drive is read.
		comps = dotSteps(comps)
		if len(comps) > 0 && strings.TrimRight(comps[0], ". ") != comps[0] {
			return p, fmt.Sprintf("its device name %q ends in a dot or a space, which Windows may trim", comps[0])
		}
	}
	switch {
	case len(comps) == 0:
		return p, "it names the device namespace itself, not a file"
	case len(comps[0]) == 2 && isLetter(comps[0][0]) && comps[0][1] == ':':
		p.kind, p.drive, p.comps = winDrive, upperASCII(comps[0][0]), comps[1:]
		return p, ""
	case strings.EqualFold(comps[0], "UNC"):
		if len(comps) < 3 {
			return p, "it is a UNC device path without a server and a share"
		}
		p.kind, p.server, p.share, p.comps = winUNC, comps[1], comps[2], comps[3:]
		return p, ""
	}
	return p, fmt.Sprintf("it names the device or volume %q, not a folder on a drive or share quiver can place", comps[0])
}

func parseUNC(p winPath, rest string) (winPath, string) {
	comps := splitWin(rest, false)
	if len(comps) < 2 {
		return p, "it is a UNC path without a server and a share"
	}
	if strings.HasPrefix(comps[0], "?") || comps[0] == "." {
		return p, fmt.Sprintf("it names the device %q", comps[0])
	}
	for _, c := range comps[:2] {
		if strings.TrimRight(c, ". ") != c {
			return p, fmt.Sprintf("its server or share %q ends in a dot or a space, which Windows may read as a step or trim", c)
		}
	}
	p.kind, p.server, p.share, p.comps = winUNC, comps[0], comps[1], comps[2:]
	return p, ""
}

// rootString is how a path's root is written in a resolved path: "C:"
// or \\server\share.
func (p winPath) rootString() string {
	if p.kind == winUNC {
		return `\\` + p.server + `\` + p.share
	}
	return string([]byte{p.drive, ':'})
}

// winJoin writes a root and components as one absolute path.
func winJoin(root string, comps []string) string {
	if len(comps) == 0 {
		return root + `\`
	}
	return root + `\` + strings.Join(comps, `\`)
}

// dotSteps evaluates "." and ".." lexically, never above the root, as
// Windows does before the file system sees the path.
func dotSteps(comps []string) []string {
	out := make([]string, 0, len(comps))
	for _, c := range comps {
		switch c {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, c)
		}
	}
	return out
}

// onlyDots reports whether c is made of periods only ("...", a name).
func onlyDots(c string) bool { return strings.Trim(c, ".") == "" }

// Trimming, three ways. Microsoft documents that a segment ending in a
// single period loses it and that the last segment, unless a separator
// follows, loses all its trailing periods and spaces (trimDoc). Windows
// versions and libraries differ in the details (some trim every
// segment's dots and spaces, trimAll; a server that prefixes \\?\ trims
// nothing), so the fence reads a path every way and needs all inside.
const (
	trimNone = iota
	trimDoc
	trimAll
)

// A name trimmed to nothing ("  ", ". .") is gone: the path names the
// folder above it.
func trimComps(comps []string, dirSlash bool, how int) []string {
	out := make([]string, 0, len(comps))
	for i, c := range comps {
		switch {
		case how == trimNone || onlyDots(c):
		case how == trimAll:
			// Every name before its stream, and the stream too.
			base, stream, hasStream := strings.Cut(c, ":")
			if !onlyDots(base) {
				base = strings.TrimRight(base, ". ")
			}
			if hasStream {
				base += ":" + strings.TrimRight(stream, ". ")
			}
			c = base
		case i == len(comps)-1 && !dirSlash:
			c = strings.TrimRight(c, ". ")
		case strings.HasSuffix(c, ".") && !strings.HasSuffix(c, ".."):
			c = c[:len(c)-1]
		}
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// reservedDevices are the names Windows maps to devices in any folder
// (with any extension, and trailing spaces or dots, on Windows before 11).
var reservedDevices = []string{"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$",
	"COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9", "COM¹", "COM²", "COM³",
	"LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³"}

// deviceName returns the device a name stands for ("NUL" for
// "nul.txt  "), or "".
func deviceName(c string) string {
	base, _, _ := strings.Cut(c, ":")
	base, _, _ = strings.Cut(base, ".")
	base = strings.ToUpper(strings.TrimRight(base, " "))
	for _, d := range reservedDevices {
		if base == d {
			return d
		}
	}
	return ""
}

// fileComps turns normalised components into the names of files and
// folders: an alternate data stream ("a.txt:secret", "a.txt::$DATA",
// "dir:$I30:$INDEX_ALLOCATION") is part of the file before the colon,
// so it is judged as that file; a stream of a folder ("dir\:s") is the
// folder. It says why when a name is not one Windows opens as a file.
func fileComps(comps []string) ([]string, string) {
	out := make([]string, 0, len(comps))
	for _, c := range comps {
		if d := deviceName(c); d != "" {
			return nil, fmt.Sprintf("it names the device %s (a reserved name in any folder), not a file", d)
		}
		if i := strings.IndexAny(c, `<>"|?*`); i >= 0 {
			return nil, fmt.Sprintf("its name %q holds %q, which Windows does not allow in a file name", c, c[i])
		}
		base, _, _ := strings.Cut(c, ":")
		switch {
		case base == "":
			continue // a stream of the folder above
		case base == "." || base == "..":
			return nil, fmt.Sprintf("its name %q is a stream of %q, which is no file", c, base)
		}
		out = append(out, base)
	}
	return out, ""
}

// sameNameStrict reports whether Windows certainly takes a and b for one
// name: identical, or differing only in the case of ASCII letters, which
// every NTFS upcase table folds. Other letters compare exactly: volumes
// fold them by the table they were formatted with (simple one-to-one
// upper-casing, no "ß" to "SS", no normalisation), which quiver cannot
// read, so a path is inside only where every table agrees.
func sameNameStrict(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if upperASCII(a[i]) != upperASCII(b[i]) {
			return false
		}
	}
	return true
}

// sameNameLoose reports whether some volume could take a and b for one
// name: they fold equal under Unicode simple folding or upper-case to
// the same letters ("ı" and "i" both become "I"). Used where a false
// match only refuses more (quiver's own files).
func sameNameLoose(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	ra, rb := []rune(a), []rune(b)
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		if ra[i] != rb[i] && unicode.ToUpper(ra[i]) != unicode.ToUpper(rb[i]) &&
			unicode.ToUpper(unicode.ToLower(ra[i])) != unicode.ToUpper(unicode.ToLower(rb[i])) {
			return false
		}
	}
	return true
}

// winParts splits a resolved path into its root ("C:" or \\server\share,
// as one part) and names.
func winParts(p string) []string {
	if rest, ok := strings.CutPrefix(p, `\\`); ok {
		parts := splitWin(rest, true)
		if len(parts) < 2 {
			return nil
		}
		return append([]string{`\\` + parts[0] + `\` + parts[1]}, parts[2:]...)
	}
	return splitWin(p, true)
}

// winWithin reports whether the resolved path p is root or under it.
// Names compare as sameNameStrict: "C:\Work-Evil" is not inside
// "c:\work", and neither is a name that only some volumes fold alike.
func winWithin(p, root string) bool { return winUnder(p, root, sameNameStrict) }

// winWithinLoose is winWithin for quiver's own files: a name any volume
// could fold alike counts as the same.
func winWithinLoose(p, root string) bool { return winUnder(p, root, sameNameLoose) }

func winUnder(p, root string, same func(a, b string) bool) bool {
	pp, rp := winParts(p), winParts(root)
	if len(rp) == 0 || len(pp) < len(rp) || strings.HasPrefix(p, `\\`) != strings.HasPrefix(root, `\\`) {
		return false
	}
	for i := range rp {
		if !same(pp[i], rp[i]) {
			return false
		}
	}
	return true
}
