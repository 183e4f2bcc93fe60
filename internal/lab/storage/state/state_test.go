package state

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAnImageStateIsZeroUntilWrittenAndAnUpdateKeepsWhatItDoesNotChange(t *testing.T) {
	dir := t.TempDir()
	path := ImagePath(dir, "pvc-1")
	if want := filepath.Join(dir, "images", "pvc-1.json"); path != want {
		t.Fatalf("ImagePath = %s, want %s", path, want)
	}
	st, err := Read(path)
	if err != nil || st != (ImageState{}) {
		t.Fatalf("Read of a never replicated image = %+v, %v; want the zero state", st, err)
	}
	if err := Write(path, ImageState{Role: RolePrimary, Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := Update(path, func(s *ImageState) { s.NeedsResync = true })
	if err != nil {
		t.Fatal(err)
	}
	if want := (ImageState{Role: RolePrimary, Epoch: 3, NeedsResync: true}); got != want {
		t.Errorf("Update = %+v, want %+v", got, want)
	}
	if again, err := Read(path); err != nil || again != got {
		t.Errorf("Read after Update = %+v, %v; want %+v", again, err, got)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Error("a damaged image state must be reported")
	}
}

func TestTheLayoutPutsVolumesSnapshotsImagesAndGroupsInTheirOwnDirectories(t *testing.T) {
	if got, want := VolumePath("/d", "h"), "/d/volumes/h"; got != want {
		t.Errorf("VolumePath = %s, want %s", got, want)
	}
	if got, want := SnapshotPath("/d", "h"), "/d/snapshots/h"; got != want {
		t.Errorf("SnapshotPath = %s, want %s", got, want)
	}
	if got := Dirs("/d"); len(got) != 4 || got[0] != "/d/volumes" || got[1] != "/d/images" || got[2] != "/d/snapshots" || got[3] != "/d/groups" {
		t.Errorf("Dirs = %v", got)
	}
	if got, want := GroupPath("/d", "g"), "/d/groups/g.json"; got != want {
		t.Errorf("GroupPath = %s, want %s", got, want)
	}
	if got, want := GroupIntentPath("/d", "g"), "/d/groups/g.intent.json"; got != want {
		t.Errorf("GroupIntentPath = %s, want %s", got, want)
	}
	if got, want := GroupStagingPrefix("/d", "g"), "/d/volumes/.incoming-group-g-"; got != want {
		t.Errorf("GroupStagingPrefix = %s, want %s", got, want)
	}
}
