package volsync

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// The lab's rsync keeps what rsync -a keeps: a database's data directory arrives with its owner
// and modes, a symbolic link as a link, and a file whose content did not change gets the
// metadata that did.
func TestVolSyncRsyncKeepsOwnersModesAndLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("giving files to uid 999 needs root, as the lab's storage does: run the tests as root")
	}
	g := NewWithT(t)
	src, dst := t.TempDir(), t.TempDir()
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	data, control := filepath.Join(src, "pgdata"), filepath.Join(src, "pgdata", "pg_control")
	g.Expect(os.Mkdir(data, 0o700)).To(Succeed())
	g.Expect(os.WriteFile(control, []byte("control"), 0o600)).To(Succeed())
	g.Expect(os.Chmod(control, 0o640)).To(Succeed())
	g.Expect(os.Chown(control, 999, 998)).To(Succeed())
	g.Expect(os.Chtimes(control, mtime, mtime)).To(Succeed())
	g.Expect(os.Chown(data, 999, 999)).To(Succeed())
	g.Expect(os.Symlink("pgdata/pg_control", filepath.Join(src, "current"))).To(Succeed())
	// The destination already holds the file's content, as root's, and a file where the link goes.
	g.Expect(os.MkdirAll(filepath.Join(dst, "pgdata"), 0o750)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dst, "pgdata", "pg_control"), []byte("control"), 0o600)).To(Succeed())
	g.Expect(os.Chtimes(filepath.Join(dst, "pgdata", "pg_control"), mtime, mtime)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dst, "current"), []byte("old"), 0o600)).To(Succeed())

	r := &rsyncRun{ctx: context.Background()}
	st, err := r.sync(src, dst)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("written %d, deleted %d", st.written, st.deleted)

	for rel, want := range map[string]struct {
		mode     fs.FileMode
		uid, gid uint32
	}{
		"pgdata":            {mode: fs.ModeDir | 0o700, uid: 999, gid: 999},
		"pgdata/pg_control": {mode: 0o640, uid: 999, gid: 998},
		"current":           {mode: fs.ModeSymlink | 0o777},
	} {
		info, err := os.Lstat(filepath.Join(dst, rel))
		g.Expect(err).NotTo(HaveOccurred())
		sys := info.Sys().(*syscall.Stat_t)
		t.Logf("%s: %v %d:%d", rel, info.Mode(), sys.Uid, sys.Gid)
		g.Expect([]any{info.Mode(), sys.Uid, sys.Gid}).To(Equal([]any{want.mode, want.uid, want.gid}), rel)
	}
	g.Expect(os.Readlink(filepath.Join(dst, "current"))).To(Equal("pgdata/pg_control"))
	g.Expect(st.written).To(Equal(1), "only the link differed in content")
}
