package gate

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

// fakeWinFS is a Windows file system as a map, for running the Windows
// fence anywhere: names fold by upper-casing each letter (as NTFS's
// upcase table does), an entry may have an 8.3 short name, and a link
// (symbolic link, junction, mount point) holds its target as written.
type fakeWinFS struct {
	entries map[string]fakeWinEntry // by the folded full path of stored names
}

type fakeWinEntry struct {
	name, short, link string
}

func winKey(p string) string { return strings.ToUpper(p) }

// add puts path (stored names) in the file system with its folders; short
// gives its last name an 8.3 name, link makes it a link.
func (f *fakeWinFS) add(path, short, link string) *fakeWinFS {
	if f.entries == nil {
		f.entries = map[string]fakeWinEntry{}
	}
	parts := winParts(path)
	for i := 1; i < len(parts); i++ {
		p := parts[0] + `\` + strings.Join(parts[1:i+1], `\`)
		if _, ok := f.entries[winKey(p)]; !ok || i == len(parts)-1 {
			e := fakeWinEntry{name: parts[i]}
			if i == len(parts)-1 {
				e.short, e.link = short, link
			}
			f.entries[winKey(p)] = e
		}
	}
	return f
}

func (f *fakeWinFS) entry(p string) (winEntry, error) {
	if e, ok := f.entries[winKey(p)]; ok {
		return winEntry{name: e.name, link: e.link}, nil
	}
	i := strings.LastIndexByte(p, '\\')
	dir, last := winKey(p[:i]), winKey(p[i+1:])
	for k, e := range f.entries {
		if e.short != "" && winKey(e.short) == last && k[:strings.LastIndexByte(k, '\\')] == dir {
			return winEntry{name: e.name, link: e.link}, nil
		}
	}
	return winEntry{}, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
}

const (
	winHome = `C:\Users\Jonathan Smith`
	winWork = winHome + `\work`
	winCfg  = winHome + `\AppData\Roaming\quiver`
	winSt   = winHome + `\AppData\Local\quiver\state`
)

// winMachine is a Windows machine: a user whose folder has an 8.3 name,
// quiver's files under %AppData% and %LocalAppData%, a work folder with
// links of every kind, a share and a second drive.
func winMachine() *fakeWinFS {
	f := &fakeWinFS{}
	f.add(winHome, "JONATH~1", "").
		add(winWork+`\a.txt`, "", "").
		add(winWork+`\sub\b.txt`, "", "").
		add(winWork+`\Long Name Folder\c.txt`, "LONGNA~1", "").
		add(winWork+`\link-out`, "", winHome+`\secret stuff`).
		add(winWork+`\jout`, "", `\??\C:\Windows`).
		add(winWork+`\rel-in`, "", `sub`).
		add(winWork+`\rel-out`, "", `..\secret stuff`).
		add(winWork+`\vol`, "", `\??\Volume{1b3b8e52-0000-0000-0000-100000000000}\`).
		add(winWork+`\cfg`, "", winCfg).
		add(winWork+`\...`, "", "").
		add(winHome+`\secret stuff\key.txt`, "SECRET~1", "").
		add(winHome+`\work-evil\x`, "", "").
		add(winCfg+`\servers.yaml`, "", "").
		add(winSt+`\ledger.db`, "", "").
		add(`C:\Windows\win.ini`, "", "").
		add(`C:\Program Files\app`, "", "").
		add(`D:\data\x.csv`, "", "").
		add(`\\fileserver\team\proj\doc.md`, "", "")
	f.entries[winKey(winHome+`\secret stuff`)] = fakeWinEntry{name: "secret stuff", short: "SECRET~1"}
	return f
}

// winGate is a gate that reads Windows paths through fsys, with the work
// folder and a share allowed and quiver's files protected.
func winGate(t *testing.T, fsys winFS, p Policy) *Gate {
	t.Helper()
	p.AllowedDirs = append(p.AllowedDirs, winWork, `\\fileserver\team\proj`)
	g, err := New(p, func(o *options) { o.winfs = fsys }, WithProtected(winCfg+`\servers.yaml`, winSt))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestWindowsFence: the Windows fence, run on every OS against a Windows
// machine held in a map. Each case names the rule it proves: a path that
// resolves inside the allowed folders runs without a card, one outside
// or that quiver cannot place for certain asks, and quiver's own files
// are refused. The attacks are the shapes Windows reads differently from
// how they are written.
func TestWindowsFence(t *testing.T) {
	fsys := winMachine()
	g := winGate(t, fsys, Policy{})
	read := framed(ClassRead, []string{winWork}, winHome)
	noBase := framed(ClassRead, nil, winHome)
	write := framed(ClassWrite, []string{winWork}, winHome)
	remote := elsewhere()
	allow := want{Allow, CodeAllow, nil}
	// Paths appear in reasons quoted (%q), their backslashes doubled.
	ask := func(s ...string) want {
		for i := range s {
			s[i] = strings.Trim(fmt.Sprintf("%q", s[i]), `"`)
		}
		return want{Ask, CodeAskReadOutside, s}
	}
	protected := want{Deny, CodeProtectedPath, nil}
	cases := []struct {
		rule string
		tool *Tool
		path string
		want want
	}{
		// Forms of a path.
		{"drive_path_inside", read, winWork + `\a.txt`, allow},
		{"forward_slashes_are_separators", read, `C:/Users/Jonathan Smith/work/a.txt`, allow},
		{"mixed_slashes_and_doubled_separators", read, `C:\Users/Jonathan Smith\\work//sub\..\a.txt`, allow},
		{"dotdot_is_lexical_and_climbs_out", read, winWork + `\..\secret stuff\key.txt`, ask(winHome + `\secret stuff\key.txt`)},
		{"dotdot_never_climbs_above_the_drive", read, `C:\..\..\Users\Jonathan Smith\work\a.txt`, allow},
		{"relative_against_the_base", read, `sub\b.txt`, allow},
		{"relative_climbing_out_of_the_base", read, `..\secret stuff\key.txt`, ask()},
		{"relative_without_a_base_is_unplaced", noBase, `sub\b.txt`, ask("path_base")},
		{"drive_relative_on_the_bases_drive", read, `C:sub\b.txt`, allow},
		{"drive_relative_on_another_drive_is_unplaced", read, `D:data\x.csv`, ask("drive D:")},
		{"drive_relative_without_a_base_is_unplaced", noBase, `C:a.txt`, ask("path_base")},
		{"rooted_is_the_base_drives_root", read, `\Users\Jonathan Smith\work\a.txt`, allow},
		{"rooted_outside", read, `\Windows\win.ini`, ask(`C:\Windows\win.ini`)},
		{"rooted_on_a_remote_server_is_unplaced", remote, `\Windows\win.ini`, ask()},
		{"relative_on_a_remote_server_is_not_a_file_here", remote, `src\main.go`, allow},
		{"uri_of_another_scheme_is_no_file", noBase, `https://example.com/a/b`, allow},
		{"unc_inside_the_share_root", read, `\\fileserver\team\proj\doc.md`, allow},
		{"unc_server_and_share_without_case", read, `\\FILESERVER\Team\PROJ\doc.md`, allow},
		{"unc_sibling_sharing_a_prefix", read, `\\fileserver\team\proj-evil\x`, ask()},
		{"unc_dotdot_stops_at_the_share", read, `\\fileserver\team\proj\..\..\..\other\x`, ask(`\\fileserver\team\other\x`)},
		{"unc_with_forward_slashes", read, `//fileserver/team/proj/doc.md`, allow},
		{"verbatim_drive_path", read, `\\?\C:\Users\Jonathan Smith\work\a.txt`, allow},
		{"verbatim_dotdot_is_a_name_not_a_step", read, `\\?\C:\Users\Jonathan Smith\work\..\secret stuff`, ask(`\\?\`)},
		{"verbatim_unc", read, `\\?\UNC\fileserver\team\proj\doc.md`, allow},
		{"dot_device_drive_is_normalised", read, `\\.\C:\Users\Jonathan Smith\work\sub\..\a.txt`, allow},
		{"dot_device_with_forward_slashes", read, `//./C:/Users/Jonathan Smith/work/a.txt`, allow},
		{"nt_prefix_drive", read, `\??\C:\Users\Jonathan Smith\work\a.txt`, allow},
		{"device_is_not_a_file", read, `\\.\PhysicalDrive0`, ask("PhysicalDrive0")},
		{"volume_guid_is_unplaced", read, `\\?\Volume{1b3b8e52-0000-0000-0000-100000000000}\x`, ask("Volume")},
		{"globalroot_is_unplaced", read, `\\?\GLOBALROOT\Device\HarddiskVolume3\Users\Jonathan Smith\work\a.txt`, ask("GLOBALROOT")},
		// Names compared as Windows compares them.
		{"case_insensitive_inside", read, `c:\users\JONATHAN SMITH\Work\A.TXT`, allow},
		{"sibling_with_a_shared_prefix_in_other_case", read, `C:\Users\Jonathan Smith\Work-Evil\x`, ask(`work-evil`)},
		{"only_ascii_folds_for_inside", read, "C:\\Users\\Jonathan Smith\\wor\u212A\\x", ask()},
		// 8.3 short names, through the file system.
		{"short_name_resolves_inside", read, `C:\Users\JONATH~1\work\LONGNA~1\c.txt`, allow},
		{"short_name_resolves_outside", read, `C:\Users\JONATH~1\SECRET~1\key.txt`, ask(`secret stuff`)},
		{"short_name_of_quivers_folder_owner", read, `C:\Users\JONATH~1\AppData\Roaming\quiver\servers.yaml`, protected},
		// Alternate data streams.
		{"stream_of_a_file_inside", read, winWork + `\a.txt:secret`, allow},
		{"data_stream_of_a_file_inside", read, winWork + `\a.txt::$DATA`, allow},
		{"stream_of_quivers_file", read, winCfg + `\servers.yaml::$DATA`, protected},
		{"stream_of_a_link_is_the_link", read, winWork + `\link-out:x`, ask()},
		{"stream_of_dotdot_is_no_file", read, winWork + `\..:x\a.txt`, ask()},
		// Reserved device names.
		{"device_name_con", read, winWork + `\CON`, ask("device CON")},
		{"device_name_with_extension", read, winWork + `\com1.txt`, ask("device COM1")},
		{"device_name_with_spaces_and_extensions", read, winWork + `\nul  .tar.gz`, ask("device NUL")},
		{"device_name_in_a_folder_position", read, winWork + `\aux\x.txt`, ask("device AUX")},
		{"device_lookalike_is_a_name", read, winWork + `\console.txt`, allow},
		// Trailing dots and spaces that Windows strips.
		{"trailing_dot_reaches_the_link", read, winWork + `\link-out.\key.txt`, ask(`secret stuff`)},
		{"trailing_spaces_reach_the_link", read, winWork + `\link-out  `, ask(`secret stuff`)},
		{"trailing_dots_reach_quivers_files", read, winCfg + `.\servers.yaml. .`, protected},
		{"three_dots_is_a_name", read, winWork + `\...`, allow},
		{"wildcard_is_no_name", read, winWork + `\*`, ask("does not allow")},
		// Links judged by where they lead.
		{"symlink_out", read, winWork + `\link-out\key.txt`, ask(`secret stuff`)},
		{"junction_out", read, winWork + `\jout\win.ini`, ask(`C:\Windows\win.ini`)},
		{"relative_link_inside", read, winWork + `\rel-in\b.txt`, allow},
		{"relative_link_climbing_out", read, winWork + `\rel-out\key.txt`, ask(`secret stuff`)},
		{"mount_point_on_an_unnamed_volume", read, winWork + `\vol\x`, ask("Volume")},
		{"link_to_quivers_folder", read, winWork + `\cfg\servers.yaml`, protected},
		// quiver's own files.
		{"protected_config_any_case", read, `c:\users\jonathan smith\appdata\roaming\QUIVER\SERVERS.YAML`, protected},
		{"protected_state_under_local_appdata", read, winSt + `\ledger.db`, protected},
		{"protected_behind_an_admin_share", read, `\\localhost\C$\Users\Jonathan Smith\AppData\Roaming\quiver\servers.yaml`, protected},
		{"protected_behind_a_volume_guid", read, `\\?\Volume{1b3b8e52-0000-0000-0000-100000000000}\Users\JONATH~1\AppData\Roaming\quiver\servers.yaml`, protected},
		{"protected_behind_globalroot", read, `\\?\GLOBALROOT\Device\HarddiskVolume3\Users\Jonathan Smith\AppData\Local\quiver\state\ledger.db`, protected},
		{"protected_behind_a_dot_device", read, `\\.\HarddiskVolume3\Users\Jonathan Smith\AppData\Roaming\quiver\servers.yaml`, protected},
		{"protected_dotless_i_lookalike", read, winHome + "\\AppData\\Roaming\\qu\u0131ver\\servers.yaml", protected},
		{"folder_holding_protected_is_refused_to_a_write", write, winHome + `\AppData`, protected},
		{"folder_holding_protected_may_be_read", read, winHome + `\AppData`, ask()},
		// Home and URIs.
		{"tilde_is_the_servers_home", read, `~\work\a.txt`, allow},
		{"tilde_slash_is_the_servers_home", read, `~/work/a.txt`, allow},
		{"tilde_outside", read, `~\secret stuff\key.txt`, ask()},
		{"file_uri_with_a_drive", read, `file:///C:/Users/Jonathan%20Smith/work/a.txt`, allow},
		{"file_uri_lower_case_drive", read, `file:///c:/users/jonathan%20smith/work/a.txt`, allow},
		{"file_uri_outside", read, `file:///C:/Windows/win.ini`, ask(`C:\Windows\win.ini`)},
		{"file_uri_to_quivers_files", read, `file:///C:/Users/Jonathan%20Smith/AppData/Roaming/quiver/servers.yaml`, protected},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			check(t, g.Evaluate(context.Background(), call(tc.tool, `{"path":`+js(tc.path)+`}`)), tc.want)
		})
	}
}

// TestWindowsFenceFrames: the session's roots, given by a Windows host
// as file: URIs, widen the fence; a string a server opens from the folder
// it runs in is judged there, through links, against quiver's files.
func TestWindowsFenceFrames(t *testing.T) {
	g := winGate(t, winMachine(), Policy{})
	ctx := context.Background()
	read := framed(ClassRead, []string{winWork}, winHome)

	c := call(read, `{"path":"D:\\data\\x.csv"}`)
	check(t, g.Evaluate(ctx, c), want{Ask, CodeAskReadOutside, nil})
	c.Roots = []string{"file:///D:/data"}
	check(t, g.Evaluate(ctx, c), want{Allow, CodeAllow, nil})
	c.Roots = []string{"file:///d%3A/data/"}
	check(t, g.Evaluate(ctx, c), want{Allow, CodeAllow, nil})

	inCfg := framed(ClassRead, []string{winWork}, winHome)
	inCfg.Cwd = winCfg
	for _, q := range []string{"servers.yaml", "SERVERS.YAML.", "C:servers.yaml", `.\servers.yaml::$DATA`} {
		check(t, g.Evaluate(ctx, call(inCfg, `{"q":`+js(q)+`}`)), want{Deny, CodeProtectedPath, nil})
	}
	inWork := framed(ClassRead, []string{winWork}, winHome)
	inWork.Cwd = winWork
	check(t, g.Evaluate(ctx, call(inWork, `{"q":"cfg\\servers.yaml"}`)), want{Deny, CodeProtectedPath, nil})
	check(t, g.Evaluate(ctx, call(inWork, `{"q":"hello"}`)), want{Allow, CodeAllow, nil})
}

// TestWindowsAllowedFolders: allowed folders and quiver's files are read
// by the same rules (short names, links, case) when the gate is made.
func TestWindowsAllowedFolders(t *testing.T) {
	fsys := winMachine()
	for _, tc := range []struct{ root, want string }{
		{`c:\users\jonath~1\WORK`, winWork},
		{`C:/Users/Jonathan Smith/work/`, winWork},
		{`C:\Users\Jonathan Smith\work\cfg`, winCfg},
		{`\\?\C:\Program Files\app`, `C:\Program Files\app`},
		{`\\fileserver\team\proj\..\proj`, `\\fileserver\team\proj`},
	} {
		got, err := winRoot(fsys, tc.root)
		if err != nil || got != tc.want {
			t.Errorf("allowed folder %q: %q, %v; want %q", tc.root, got, err, tc.want)
		}
	}
	for _, root := range []string{`work`, `\work`, `C:work`, `\\.\PhysicalDrive0`, `C:\x\CON`} {
		if got, err := winRoot(fsys, root); err == nil {
			t.Errorf("allowed folder %q was placed at %q; want refused", root, got)
		}
	}
	if _, err := New(Policy{AllowedDirs: []string{`work`}}, func(o *options) { o.winfs = fsys }); err == nil {
		t.Error("a relative allowed folder was accepted")
	}
}

// TestWindowsDeviceDotDot: in a \\.\ path the device prefix is the root,
// so ".." climbs out of the drive: \\.\C:\..\D:\x is D:\x. Read as C:\D\x
// it would be inside an allowed C:\.
func TestWindowsDeviceDotDot(t *testing.T) {
	fsys := (&fakeWinFS{}).add(`D:\x`, "", "")
	for _, p := range []string{`\\.\C:\..\D:\x`, `//./C:/work/../../D:/x`} {
		pl, err := winReadings(fsys, p, frame{}, nil)
		if err != nil || pl.unresolved != "" || len(pl.readings) != 1 || pl.readings[0] != `D:\x` {
			t.Errorf("%q: %+v, %v; want D:\\x", p, pl, err)
		}
	}
}
