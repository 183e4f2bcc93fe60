package tools

import (
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/semver"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// demoBuild is one tools module's `go build`s on a fresh machine: the module's directory and the
// packages built from it.
type demoBuild struct {
	name, dir string
	pkgs      []string
}

// demoBuilds returns the builds of `make demo` (hack/build-tools.sh's demo set, as its --list
// prints it, with kubectl, which make test and make lab-up build from the same module) and
// drover's own.
func demoBuilds(t *testing.T, root string) []demoBuild {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-tools.sh"), "--list", "demo", "kubectl")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/build-tools.sh --list: %v\n%s", err, stderrOf(err))
	}
	builds := []demoBuild{{"drover", root, []string{"./cmd/drover"}}}
	index := map[string]int{}
	for _, line := range strings.Fields(string(out)) {
		parts := strings.Split(line, "|")
		if len(parts) != 3 {
			t.Fatalf("hack/build-tools.sh --list printed %q, want name|dir|package", line)
		}
		dir, pkg := parts[1], parts[2]
		if i, ok := index[dir]; ok {
			builds[i].pkgs = append(builds[i].pkgs, pkg)
			continue
		}
		index[dir] = len(builds)
		builds = append(builds, demoBuild{dir, filepath.Join(root, "hack", "tools", dir), []string{pkg}})
	}
	if len(builds) < 6 {
		t.Fatalf("hack/build-tools.sh --list demo printed %d tools modules, want at least 5:\n%s", len(builds)-1, out)
	}
	return builds
}

// TestTheDemosBuildsCompileEachSharedModuleOnce checks that every module whose packages two of
// the demo's builds compile is at one version in all of them. The Go build cache then holds one
// build of a shared package (its key is its source and its dependencies' keys, all the way down,
// whatever module builds it), so a fresh machine compiles k8s.io/api, client-go, grpc, otel and
// the AWS SDK once for the lab's binaries and drover instead of up to five times: the source the
// demo's builds compile fell from 176 MB to 118 MB when the versions were aligned. A module a
// build only lists in go.mod, without compiling a package of it, does not count.
func TestTheDemosBuildsCompileEachSharedModuleOnce(t *testing.T) {
	root, err := labtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// versions[module][version] = the builds compiling that version of the module.
	versions := map[string]map[string][]string{}
	for _, b := range demoBuilds(t, root) {
		for mod, ver := range compiledModules(t, b.dir, b.pkgs) {
			if versions[mod] == nil {
				versions[mod] = map[string][]string{}
			}
			versions[mod][ver] = append(versions[mod][ver], b.name)
		}
	}
	if problems := unaligned(versions); len(problems) > 0 {
		t.Errorf("the demo's builds compile %d shared modules at different versions, so a fresh "+
			"machine compiles them (and every package importing them) once per version. Raise each "+
			"build to the highest version with go get in its directory (drover's is the repository's "+
			"root; the others are hack/tools/<build>), go mod tidy, and run this test again:\n%s",
			len(problems), strings.Join(problems, "\n"))
	}
}

// compiledModules runs go list in dir and returns the modules, with the version the build selects
// (after replace directives), of the packages that building pkgs compiles.
func compiledModules(t *testing.T, dir string, pkgs []string) map[string]string {
	t.Helper()
	const format = `{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}`
	args := append([]string{"list", "-deps", "-f", format}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, stderrOf(err))
	}
	mods := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		mod, ver, ok := strings.Cut(line, " ")
		if ok && ver != "" { // the main module has no version
			mods[mod] = ver
		}
	}
	return mods
}

// stderrOf returns what a failed command wrote to its standard error.
func stderrOf(err error) string {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return string(exitErr.Stderr)
	}
	return ""
}

// unaligned describes each module compiled at more than one version: the versions, the builds
// compiling each, and the go get commands that raise the others to the highest.
func unaligned(versions map[string]map[string][]string) []string {
	var problems []string
	for mod, byVersion := range versions {
		if len(byVersion) < 2 {
			continue
		}
		vers := slices.SortedFunc(maps.Keys(byVersion), semver.Compare)
		highest := vers[len(vers)-1]
		var parts, raise []string
		for _, v := range vers {
			builds := slices.Sorted(slices.Values(byVersion[v]))
			parts = append(parts, fmt.Sprintf("%s (%s)", v, strings.Join(builds, ", ")))
			if v != highest {
				raise = append(raise, builds...)
			}
		}
		problems = append(problems, fmt.Sprintf("  %s: %s; go get %s@%s in %s",
			mod, strings.Join(parts, ", "), mod, highest, strings.Join(raise, ", ")))
	}
	slices.Sort(problems)
	return problems
}

func TestAModuleAtTwoVersionsIsReportedWithTheCommandThatRaisesTheLowerOnes(t *testing.T) {
	got := unaligned(map[string]map[string][]string{
		"golang.org/x/net":       {"v0.57.0": {"kube", "drover"}, "v0.61.0": {"etcd"}, "v0.9.0": {"kwok"}},
		"k8s.io/api":             {"v0.37.2": {"kube", "kwok"}},
		"google.golang.org/grpc": {"v1.83.2": {"etcd"}, "v1.82.1": {"kube"}},
	})
	want := []string{
		"  golang.org/x/net: v0.9.0 (kwok), v0.57.0 (drover, kube), v0.61.0 (etcd); go get golang.org/x/net@v0.61.0 in kwok, drover, kube",
		"  google.golang.org/grpc: v1.82.1 (kube), v1.83.2 (etcd); go get google.golang.org/grpc@v1.83.2 in kube",
	}
	if !slices.Equal(got, want) {
		t.Errorf("unaligned:\n got %q\nwant %q", got, want)
	}
}
