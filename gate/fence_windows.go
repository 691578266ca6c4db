package gate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/windows"
)

// The thin Windows layer of the fence: it only answers what the rules in
// winpath.go and winfence.go (which run and are tested on every OS) ask
// of one name. See docs/ARCHITECTURE.md, "Paths on Windows".

// osWinFS is Windows' own file system.
func osWinFS() winFS { return winOS{} }

// resolveRootOS and unplacedOS are the unix fence's; on Windows the
// resolver always has a winFS and reads paths through it instead.
func resolveRootOS(abs string) (string, error) { return winRoot(winOS{}, abs) }

func unplacedOS(string, frame) string { return "" }

type winOS struct{}

// entry asks FindFirstFile about p's last name: it matches the long or
// the 8.3 short name and gives back the long name as stored, its
// attributes and, for a reparse point, its tag. A name that redirects
// (a symbolic link, a junction or a mount point) is read with
// os.Readlink; one that does not (a OneDrive placeholder, a deduplicated
// file) opens in place and is an ordinary entry.
func (winOS) entry(p string) (winEntry, error) {
	last := p[strings.LastIndexByte(p, '\\')+1:]
	if last == "" || strings.ContainsAny(last, `*?<>"|`) {
		// FindFirstFile would read these as a pattern.
		return winEntry{}, fmt.Errorf("%q is not a plain file name", last)
	}
	ext := `\\?\` + p
	if rest, ok := strings.CutPrefix(p, `\\`); ok {
		ext = `\\?\UNC\` + rest
	}
	name, err := windows.UTF16PtrFromString(ext)
	if err != nil {
		return winEntry{}, err
	}
	var d windows.Win32finddata
	h, err := windows.FindFirstFile(name, &d)
	if err != nil {
		switch {
		case errors.Is(err, windows.ERROR_FILE_NOT_FOUND), errors.Is(err, windows.ERROR_PATH_NOT_FOUND),
			errors.Is(err, windows.ERROR_INVALID_NAME), errors.Is(err, windows.ERROR_BAD_NETPATH),
			errors.Is(err, windows.ERROR_BAD_NET_NAME), errors.Is(err, windows.ERROR_DIRECTORY):
			// Nothing a server could open by that name.
			return winEntry{}, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
		}
		return winEntry{}, err
	}
	windows.FindClose(h)
	e := winEntry{name: windows.UTF16ToString(d.FileName[:])}
	if d.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT == 0 {
		return e, nil
	}
	const nameSurrogate = 0x20000000 // IsReparseTagNameSurrogate
	switch tag := d.Reserved0; {
	case tag == windows.IO_REPARSE_TAG_SYMLINK, tag == windows.IO_REPARSE_TAG_MOUNT_POINT:
		target, err := os.Readlink(p)
		if err != nil {
			return winEntry{}, fmt.Errorf("read the link: %w", err)
		}
		e.link = volumeToPath(target)
		if e.link == "" {
			// Readlink answers the empty string for nothing it can read;
			// no target is no place.
			return winEntry{}, errors.New("the link has no target quiver can read")
		}
	case tag&nameSurrogate != 0:
		return winEntry{}, fmt.Errorf("it is a reparse point (tag %#x) that leads elsewhere in a way quiver cannot follow", tag)
	}
	return e, nil
}

// volumeToPath turns a mount point's target on a volume named by its GUID
// (\??\Volume{…}\x) into a path on one of the folders the volume is
// mounted at (D:\x), which the rules can place; any other target is
// returned as it is.
func volumeToPath(target string) string {
	var rest string
	for _, pre := range []string{`\??\`, `\\?\`} {
		if r, ok := strings.CutPrefix(target, pre); ok && strings.HasPrefix(strings.ToLower(r), "volume{") {
			rest = r
		}
	}
	if rest == "" {
		return target
	}
	vol, tail, _ := strings.Cut(rest, `\`)
	name, err := windows.UTF16PtrFromString(`\\?\` + vol + `\`)
	if err != nil {
		return target
	}
	buf := make([]uint16, 1024)
	var n uint32
	if err := windows.GetVolumePathNamesForVolumeName(name, &buf[0], uint32(len(buf)), &n); err != nil {
		return target
	}
	// A list of NUL-terminated paths; the first will do: each names the
	// same volume, and the rules judge where it lies.
	first := windows.UTF16ToString(buf)
	if first == "" {
		return target
	}
	return strings.TrimSuffix(first, `\`) + `\` + tail
}
