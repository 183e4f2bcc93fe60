package driver

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCopyTreeKeepsOwnersModesAndLinks copies a volume as a database leaves it: a data
// directory of its own user, a file only its group reads, and a symbolic link. The copy must
// keep what the application checks at its start (owner, mode) and what rsync's quick check
// compares (modification times).
func TestCopyTreeKeepsOwnersModesAndLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("giving files to uid 999 needs root, as the lab's storage does: run the tests as root")
	}
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	must(t, os.Mkdir(filepath.Join(src, "data"), 0o750))
	must(t, os.Chmod(filepath.Join(src, "data"), 0o750))
	must(t, os.WriteFile(filepath.Join(src, "data", "pg_control"), []byte("control"), 0o640))
	must(t, os.Chmod(filepath.Join(src, "data", "pg_control"), 0o640))
	must(t, os.Lchown(filepath.Join(src, "data", "pg_control"), 999, 998))
	must(t, os.Chtimes(filepath.Join(src, "data", "pg_control"), mtime, mtime))
	must(t, os.Symlink("data/pg_control", filepath.Join(src, "current")))
	must(t, os.Lchown(filepath.Join(src, "current"), 999, 999))
	must(t, os.Lchown(filepath.Join(src, "data"), 999, 999))
	must(t, os.Chtimes(filepath.Join(src, "data"), mtime, mtime))

	n, err := CopyTree(src, dst)
	must(t, err)
	if n != int64(len("control")) {
		t.Errorf("CopyTree copied %d bytes, want %d", n, len("control"))
	}
	for _, c := range []struct {
		rel      string
		mode     fs.FileMode
		uid, gid uint32
		mtime    bool
	}{
		{rel: "data", mode: fs.ModeDir | 0o750, uid: 999, gid: 999, mtime: true},
		{rel: "data/pg_control", mode: 0o640, uid: 999, gid: 998, mtime: true},
		{rel: "current", mode: fs.ModeSymlink | 0o777, uid: 999, gid: 999},
	} {
		info, err := os.Lstat(filepath.Join(dst, c.rel))
		if err != nil {
			t.Errorf("%s is not in the copy: %v", c.rel, err)
			continue
		}
		st := info.Sys().(*syscall.Stat_t)
		t.Logf("%s: %v uid %d gid %d mtime %s", c.rel, info.Mode(), st.Uid, st.Gid, info.ModTime().UTC().Format(time.RFC3339Nano))
		if info.Mode() != c.mode || st.Uid != c.uid || st.Gid != c.gid {
			t.Errorf("%s is %v owned by %d:%d in the copy, want %v owned by %d:%d", c.rel, info.Mode(), st.Uid, st.Gid, c.mode, c.uid, c.gid)
		}
		if c.mtime && !info.ModTime().Equal(mtime) {
			t.Errorf("%s was modified at %s in the copy, want %s", c.rel, info.ModTime().UTC(), mtime)
		}
	}
	if link, err := os.Readlink(filepath.Join(dst, "current")); err != nil || link != "data/pg_control" {
		t.Errorf("the link in the copy points to %q (%v), want data/pg_control", link, err)
	}
}

// TestCopyTreeOfMissingSourceIsEmpty: a volume never written has no directory yet; its copy is
// an empty one.
func TestCopyTreeOfMissingSourceIsEmpty(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "copy")
	n, err := CopyTree(filepath.Join(t.TempDir(), "missing"), dst)
	must(t, err)
	entries, err := os.ReadDir(dst)
	must(t, err)
	if n != 0 || len(entries) != 0 {
		t.Errorf("the copy of a missing volume holds %d entries and %d bytes, want an empty directory", len(entries), n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
