package process

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseStatReadsStateParentAndStartAfterAFreeFormName(t *testing.T) {
	stat := []byte("4242 (sh (x) y) T 17 4242 4242 0 -1 4194560 9 0 0 0 1234 56 7 8 20 0 1 0 987654 0 0")
	got, err := parseStat(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Stat{State: 'T', PPID: 17, Start: 987654}); got != want {
		t.Errorf("parseStat = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"4242 sh T 17", "4242 (sh) T 17 1 2", "4242 (sh) T x 4242 4242 0 -1 4194560 9 0 0 0 1 2 3 4 20 0 1 0 5 0"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) must fail", bad)
		}
	}
}

func TestReadMountinfoUndoesTheOctalEscapesOfRootAndPoint(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mountinfo")
	lines := "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
		`37 22 8:1 /var/lib/lab/vol\040a /pods/p\134q rw - ext4 /dev/sda1 rw` + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	mounts, err := ReadMountinfo(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{{Dev: "8:1", Root: "/", Point: "/"}, {Dev: "8:1", Root: "/var/lib/lab/vol a", Point: `/pods/p\q`}}
	if len(mounts) != len(want) || mounts[0] != want[0] || mounts[1] != want[1] {
		t.Errorf("ReadMountinfo = %+v, want %+v", mounts, want)
	}
}
