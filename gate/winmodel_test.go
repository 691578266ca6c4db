package gate

import (
	"strings"
	"testing"
)

// winFullPath is a small model of Windows' own path normalisation
// (GetFullPathName), written from Microsoft's "File path formats on
// Windows systems" (Path normalization: identify the path, apply the
// current directory, canonicalize separators, evaluate relative
// components, trim characters; skip normalization for \\?\) and "Naming
// Files, Paths, and Namespaces" (reserved device names, streams), as an
// oracle for the fence's rules. It is written apart from winpath.go, as
// one pass over a string, and shares nothing with it.
//
// cwd is the current directory, a full drive path ("C:\work"). It
// returns the full path and whether the path names a legacy device.
func winFullPath(path, cwd string) (full string, device bool) {
	sep := func(c byte) bool { return c == '\\' || c == '/' }
	letter := func(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
	// Skip normalization: only a path starting exactly with \\?\ (and the
	// NT prefix \??\ it maps to).
	if strings.HasPrefix(path, `\\?\`) || strings.HasPrefix(path, `\??\`) {
		return path, false
	}
	// Identify the path and apply the current directory; rootLen is how
	// much of the result ".." may never remove.
	var s string
	rootLen := 0
	switch {
	case len(path) >= 3 && sep(path[0]) && sep(path[1]) && (path[2] == '.' || path[2] == '?') && (len(path) == 3 || sep(path[3])):
		s, rootLen = path, 4 // device path: the prefix is the root
	case len(path) >= 2 && sep(path[0]) && sep(path[1]):
		s, rootLen = path, -1 // UNC: \\server\share, found once canonical
	case len(path) >= 3 && letter(path[0]) && path[1] == ':' && sep(path[2]):
		s, rootLen = path, 3
	case legacyDevice(path):
		return `\\.\` + legacyDevice1(path), true
	case len(path) >= 1 && sep(path[0]):
		s, rootLen = cwd[:2]+path, 3 // root of the current drive
	case len(path) >= 2 && letter(path[0]) && path[1] == ':':
		if strings.EqualFold(cwd[:2], path[:2]) {
			s = cwd + `\` + path[2:]
		} else {
			s = path[:2] + `\` + path[2:] // no current folder set there: its root
		}
		rootLen = 3
	default:
		s, rootLen = cwd+`\`+path, 3
	}
	// Canonicalize separators: "/" becomes "\", and a run of separators
	// after the first two becomes one.
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' {
			c = '\\'
		}
		if c == '\\' && i >= 2 && b.Len() > 0 && b.String()[b.Len()-1] == '\\' {
			continue
		}
		b.WriteByte(c)
	}
	s = b.String()
	if rootLen == -1 {
		// \\server\share: up to the separator after the share, or the end.
		n, i := 0, 2
		for ; i < len(s); i++ {
			if s[i] == '\\' {
				n++
				if n == 2 {
					break
				}
			}
		}
		rootLen = min(i+1, len(s))
		if i >= len(s) {
			s += `\`
			rootLen = len(s)
		}
	}
	rootLen = min(rootLen, len(s))
	root, rest := s[:rootLen], s[rootLen:]
	if !strings.HasSuffix(root, `\`) {
		root += `\`
	}
	endsInSep := strings.HasSuffix(rest, `\`)
	// Evaluate relative components, never above the root.
	var segs []string
	for _, seg := range strings.Split(rest, `\`) {
		switch seg {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, seg)
		}
	}
	// Trim: a segment ending in a single period loses it; the last one,
	// unless a separator follows, loses all its trailing periods and
	// spaces. A segment of periods only is a name.
	for i, seg := range segs {
		if strings.Trim(seg, ".") == "" {
			continue
		}
		if i == len(segs)-1 && !endsInSep {
			segs[i] = strings.TrimRight(seg, ". ")
			continue
		}
		if strings.HasSuffix(seg, ".") && !strings.HasSuffix(seg, "..") {
			segs[i] = seg[:len(seg)-1]
		}
	}
	return root + strings.Join(segs, `\`), false
}

// legacyDevice: the path is a legacy device (CON, COM1.TXT, nul  ,
// COM1.TXT\file): its first name, before any extension and trailing
// spaces, is one of the names "Naming Files" reserves.
func legacyDevice(path string) bool { return legacyDevice1(path) != "" }

func legacyDevice1(path string) string {
	first := path
	if i := strings.IndexAny(first, `\/`); i >= 0 {
		first = first[:i]
	}
	if i := strings.IndexAny(first, ".:"); i >= 0 {
		first = first[:i]
	}
	first = strings.ToUpper(strings.TrimRight(first, " "))
	for _, d := range []string{"CON", "PRN", "AUX", "NUL"} {
		if first == d {
			return d
		}
	}
	if len(first) == 4 && (strings.HasPrefix(first, "COM") || strings.HasPrefix(first, "LPT")) && first[3] >= '1' && first[3] <= '9' {
		return first
	}
	return ""
}

// modelFile is where the model's full path puts a file: the device
// prefix of a drive dropped, the stream after a name's colon dropped
// (it is part of that file), and whether it is a plain drive path.
func modelFile(full string) (string, bool) {
	for _, pre := range []string{`\\?\`, `\\.\`, `\??\`} {
		full = strings.TrimPrefix(full, pre)
	}
	if len(full) < 3 || full[1] != ':' || full[2] != '\\' {
		return "", false
	}
	var names []string
	for _, seg := range strings.Split(full[3:], `\`) {
		base, _, _ := strings.Cut(seg, ":")
		if seg == "" || base == "." || base == ".." {
			if seg == "" {
				continue
			}
			return "", false
		}
		if base != "" {
			names = append(names, base)
		}
	}
	return winJoin(strings.ToUpper(full[:2]), names), true
}

// winFuzzTokens are the pieces fuzzed paths are made of: separators,
// dots, drives, prefixes, streams, device names, padding, case.
var winFuzzTokens = []string{`\`, `/`, `.`, `..`, `C:`, `D:`, `c:`, `\\?\`, `\\.\`, `\??\`, `UNC`,
	`work`, `WORK`, `Work-Evil`, `a`, `a.txt`, ` `, `:`, `::$DATA`, `:s`, `CON`, `com1`, `nul.txt`,
	`srv`, `share`, `~`, `~1`, `...`, `x.`, `y `, `\\`, `Users`}

func winFuzzPath(data []byte) string {
	var b strings.Builder
	for _, c := range data {
		b.WriteString(winFuzzTokens[int(c)%len(winFuzzTokens)])
	}
	return b.String()
}

// FuzzWindowsFence checks the fence's Windows rules against the model of
// Windows' own normalisation: whenever the fence places a path inside
// C:\work (every reading inside, nothing unresolved), Windows puts it
// inside C:\work too, as one of the readings; and a legacy device is
// never placed. The file system holds C:\work only, so every reading is
// the normalisation alone.
func FuzzWindowsFence(f *testing.F) {
	for _, seed := range [][]byte{{11, 0, 14}, {4, 0, 3, 0, 11}, {7, 4, 0, 11, 0, 3, 0, 5}, {8, 4, 0, 11, 0, 3, 0, 5}, {13, 0, 14}, {20}, {11, 0, 17, 18}, {1, 1, 28, 0, 29}} {
		f.Add(seed)
	}
	fsys := (&fakeWinFS{}).add(`C:\work`, "", "")
	fr := frame{bases: []string{`C:\work`}}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 24 {
			return
		}
		path := winFuzzPath(data)
		pl, err := winReadings(fsys, path, fr, &work{})
		if err != nil {
			t.Fatalf("%q: %v", path, err)
		}
		// The fence reads "/C:/x" as a file: URI's path, C:\x, as Windows
		// servers do; the model is asked about that.
		mpath := path
		if len(path) >= 3 && path[0] == '/' && isLetter(path[1]) && path[2] == ':' && (len(path) == 3 || isWinSep(path[3])) {
			mpath = path[1:]
		}
		full, device := winFullPath(mpath, `C:\work`)
		if pl.unresolved != "" || len(pl.readings) == 0 {
			return
		}
		if device {
			t.Fatalf("%q is the device %s to Windows; the fence placed it at %q", path, full, pl.readings)
		}
		inside := true
		for _, r := range pl.readings {
			inside = inside && winWithin(r, `C:\work`)
		}
		file, ok := modelFile(full)
		if !ok {
			if inside {
				t.Fatalf("%q is %q to Windows, no file on a drive; the fence placed it inside at %q", path, full, pl.readings)
			}
			return
		}
		if inside && !winWithin(file, `C:\work`) {
			t.Fatalf("%q: the fence placed it inside at %q; Windows opens %q (%q)", path, pl.readings, file, full)
		}
		found := false
		for _, r := range pl.readings {
			found = found || winWithin(r, file) && winWithin(file, r)
		}
		if !found {
			t.Fatalf("%q: Windows opens %q (%q); the fence read it only as %q", path, file, full, pl.readings)
		}
	})
}

// TestWindowsModel pins the model to the examples of Microsoft's
// documentation, so the oracle is known right where it is documented.
func TestWindowsModel(t *testing.T) {
	for _, tc := range []struct{ in, cwd, want string }{
		{`\utilities`, `C:\temp`, `C:\utilities`},
		{`filecompare`, `C:\utilities`, `C:\utilities\filecompare`},
		{`D:sources`, `C:\Documents`, `D:\sources`},
		{`C:\a\..\..\b`, `C:\x`, `C:\b`},
		{`C:/a//b\\c`, `C:\x`, `C:\a\b\c`},
		{`C:\a.\b`, `C:\x`, `C:\a\b`},
		{`C:\a\b. . .`, `C:\x`, `C:\a\b`},
		{`C:\a\...`, `C:\x`, `C:\a\...`},
		{`\\Server2\Share\Test\..\..\Foo.txt`, `C:\x`, `\\Server2\Share\Foo.txt`},
		{`\\.\C:\Test\..\..\D:\x`, `C:\x`, `\\.\D:\x`},
		{`\\?\C:\a\..\b.`, `C:\x`, `\\?\C:\a\..\b.`},
		{`CON`, `C:\x`, `\\.\CON`},
		{`COM1.TXT\file1.txt`, `C:\x`, `\\.\COM1`},
	} {
		if got, _ := winFullPath(tc.in, tc.cwd); got != tc.want {
			t.Errorf("model: %q in %q is %q; the documentation says %q", tc.in, tc.cwd, got, tc.want)
		}
	}
}
