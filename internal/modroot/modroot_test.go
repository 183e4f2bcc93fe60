package modroot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindReturnsTheDirectoryOfGoMod(t *testing.T) {
	root, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("%s holds no go.mod: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "modroot")); err != nil {
		t.Fatalf("%s is not the module's root: %v", root, err)
	}
}
