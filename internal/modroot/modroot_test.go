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

func TestFindPassesTheGoModOfANestedModule(t *testing.T) {
	nested := filepath.Join(t.TempDir(), "nested", "pkg")
	if err := os.MkdirAll(nested, 0o750); err != nil {
		t.Fatal(err)
	}
	// A module inside drover's tree whose working directory is a package of its own.
	if err := os.WriteFile(filepath.Join(filepath.Dir(nested), "go.mod"), []byte("module github.com/drover-io/drover/nested\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(filepath.Dir(nested)), "go.mod"), []byte("// drover\nmodule github.com/drover-io/drover\n\ngo 1.26.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(nested)
	got, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Dir(filepath.Dir(nested)); got != want {
		t.Errorf("Find() from %s = %s, want the directory of drover's go.mod %s (not the nested module's)", nested, got, want)
	}
}
