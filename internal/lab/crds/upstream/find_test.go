package upstream_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-io/drover/internal/lab/crds/upstream"
)

// holding writes files (name to content) into a new directory and returns it.
func holding(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFindTakesTheFirstLocationThatHoldsEveryFile(t *testing.T) {
	sources := []upstream.Source{source("a.yaml", "a"), source("b.yaml", "b")}
	partial := holding(t, map[string]string{"a.yaml": "a"})
	complete := holding(t, map[string]string{"a.yaml": "a", "b.yaml": "b"})
	other := holding(t, map[string]string{"a.yaml": "a", "b.yaml": "b"})
	absent := filepath.Join(t.TempDir(), "absent")

	got, err := upstream.Find([]string{absent, partial, complete, other}, sources)
	if err != nil || got != complete {
		t.Fatalf("Find = %q, %v; want %s, the first complete location", got, err, complete)
	}
	_, err = upstream.Find([]string{absent, partial}, sources)
	if !errors.Is(err, upstream.ErrNotFound) {
		t.Fatalf("Find with no complete location = %v, want ErrNotFound", err)
	}
	for _, want := range []string{absent + " (no such directory)", partial + " (1 of 2 files missing, such as b.yaml)", "`make upstream-apis`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
}

func TestFindRefusesALocationWithAFileOfAnotherSum(t *testing.T) {
	sources := []upstream.Source{source("a.yaml", "a")}
	changed := holding(t, map[string]string{"a.yaml": "a, changed"})
	good := holding(t, map[string]string{"a.yaml": "a"})
	_, err := upstream.Find([]string{changed, good}, sources)
	mismatch, ok := errors.AsType[*upstream.MismatchError](err)
	if !ok || mismatch.File != "a.yaml" || mismatch.Where != changed {
		t.Fatalf("Find = %v, want a *MismatchError of a.yaml in %s: a changed file is never passed over", err, changed)
	}
	if upstream.MaySkip(err) {
		t.Fatal("a test may skip on a file of another sum")
	}
}

func TestLocationsAreTheVariableTheCacheThenTheSharedCopy(t *testing.T) {
	root := filepath.Join("/src", "drover")
	t.Setenv(upstream.DirEnv, "")
	want := []string{filepath.Join(root, ".cache", "upstream-apis"), filepath.Join("/src", "shared", "upstream-apis")}
	if got := upstream.Locations(root); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Locations = %q, want %q", got, want)
	}
	t.Setenv(upstream.DirEnv, "/data/apis")
	if got := upstream.Locations(root); fmt.Sprint(got) != fmt.Sprint(append([]string{"/data/apis"}, want...)) {
		t.Fatalf("Locations with %s set = %q, want it first", upstream.DirEnv, got)
	}
}

// fakeT records how Require ends a test.
type fakeT struct{ skipped, failed string }

func (f *fakeT) Helper()           {}
func (f *fakeT) Skip(args ...any)  { f.skipped = fmt.Sprint(args...) }
func (f *fakeT) Fatal(args ...any) { f.failed = fmt.Sprint(args...) }

func TestRequireSkipsOnMissingFilesUnlessTheyAreRequired(t *testing.T) {
	_, notFound := upstream.Find([]string{filepath.Join(t.TempDir(), "absent")}, []upstream.Source{source("a.yaml", "a")})

	t.Setenv(upstream.RequireEnv, "")
	var ft fakeT
	upstream.Require(&ft, notFound)
	if ft.failed != "" || !strings.Contains(ft.skipped, "run `make upstream-apis`") || strings.Contains(ft.skipped, "\n") {
		t.Fatalf("Require without %s: skipped %q, failed %q; want one line to skip with, naming the command", upstream.RequireEnv, ft.skipped, ft.failed)
	}

	t.Setenv(upstream.RequireEnv, "1")
	ft = fakeT{}
	upstream.Require(&ft, notFound)
	if ft.skipped != "" || !strings.Contains(ft.failed, upstream.RequireEnv) || !strings.Contains(ft.failed, "make upstream-apis") {
		t.Fatalf("Require with %s=1: skipped %q, failed %q; want a failure saying why and what to run", upstream.RequireEnv, ft.skipped, ft.failed)
	}

	t.Setenv(upstream.RequireEnv, "")
	ft = fakeT{}
	upstream.Require(&ft, &upstream.MismatchError{File: "a.yaml"})
	if ft.skipped != "" || ft.failed == "" {
		t.Fatalf("Require of a sum mismatch: skipped %q, failed %q; want a failure", ft.skipped, ft.failed)
	}
}

func TestTheManifestPinsEveryFile(t *testing.T) {
	sources, err := upstream.Sources()
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) < 10 {
		t.Fatalf("the manifest lists %d files", len(sources))
	}
	if got, want := sources[0].URL(upstream.DefaultBaseURL), "https://raw.githubusercontent.com/csi-addons/kubernetes-csi-addons/"+sources[0].Commit+"/"+sources[0].Path; got != want {
		t.Fatalf("URL = %s, want %s", got, want)
	}
}

func TestParseSourcesRefusesAnEntryItCannotUseSafely(t *testing.T) {
	good := source("a.yaml", "a")
	line := func(s upstream.Source) string {
		return strings.Join([]string{s.File, s.Project, s.Repository, s.Commit, s.Path, s.SHA256}, "\t")
	}
	if got, err := upstream.ParseSources("# comment\n\n" + line(good) + "\n"); err != nil || len(got) != 1 || got[0] != good {
		t.Fatalf("ParseSources of one good line = %v, %v", got, err)
	}
	bad := map[string]func(*upstream.Source){
		"a file name that leaves the directory": func(s *upstream.Source) { s.File = "../a.yaml" },
		"a hidden file name":                    func(s *upstream.Source) { s.File = ".a.yaml" },
		"a repository not on GitHub":            func(s *upstream.Source) { s.Repository = "gitlab.com/x/y" },
		"a short commit":                        func(s *upstream.Source) { s.Commit = "0123456" },
		"a path out of the repository":          func(s *upstream.Source) { s.Path = "../x.yaml" },
		"a sum that is not sha256":              func(s *upstream.Source) { s.SHA256 = "abc" },
	}
	for name, spoil := range bad {
		t.Run(name, func(t *testing.T) {
			s := good
			spoil(&s)
			if _, err := upstream.ParseSources(line(s)); err == nil {
				t.Fatalf("ParseSources accepted %q", line(s))
			}
		})
	}
	if _, err := upstream.ParseSources(line(good) + "\n" + line(good)); err == nil {
		t.Fatal("ParseSources accepted a file listed twice")
	}
	if _, err := upstream.ParseSources("a.yaml\tp\tgithub.com/x/y"); err == nil {
		t.Fatal("ParseSources accepted a line of three fields")
	}
}
