//go:build !windows

package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// privateFolder refuses dir as a place for the servers' run folder unless
// no other account can plant a file in it or above it: npm, git and uv
// read configuration (.npmrc, package.json, .git) in every folder above
// the one they run in, so each of those folders, dir included, must be
// owned by root or by this user and writable by neither group nor others.
// /tmp (world-writable) fails; $XDG_RUNTIME_DIR (/run/user/<uid>, 0700)
// and macOS's per-user $TMPDIR pass. Links are followed first: the folders
// checked are those the path really passes through.
func privateFolder(dir string) error {
	return privateFolderFor(dir, os.Getuid())
}

func privateFolderFor(dir string, uid int) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return err
	}
	for d := real; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: its owner is unknown", d)
		}
		if owner := int(st.Uid); owner != 0 && owner != uid {
			return fmt.Errorf("%s belongs to another account (uid %d)", d, owner)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s is writable by other accounts (mode %v)", d, fi.Mode().Perm())
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}
