package gate

// On Windows the fence places no path yet (see windowsUnplaced): every
// path argument of a local server counts as outside, so a call that names
// one goes to a person, with the path on the card. Drive letters, UNC and
// \\?\ paths, junctions, case-insensitive names, 8.3 short names and the
// components Windows rewrites (trailing dots and spaces, "NUL") all need
// their own resolution before a path can be judged inside; until then the
// fence refuses to guess.

// resolveRootOS keeps an allowed folder as written (absolute and clean):
// no path is ever placed inside it on Windows, so it widens nothing.
func resolveRootOS(abs string) (string, error) { return abs, nil }

func unplacedOS(f string, fr frame) string { return windowsUnplaced(f, fr) }
