package charttest

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTheModulesDroverSharesAreAtDroversVersions: the modules whose packages both this module's
// tests and drover's own build and tests compile are at one version in both, so the Go build
// cache holds one build of each (k8s.io/*, controller-runtime, x/net...) rather than a second
// for the charts' tests. Helm is pinned to the release whose requirements do not raise them
// above drover's (helm.sh/helm/v4 v4.3.2 wants golang.org/x/net v0.62.0, drover has v0.61.0).
func TestTheModulesDroverSharesAreAtDroversVersions(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	ours := compiled(t, filepath.Join(root, "hack", "helm"))
	drovers := compiled(t, root)
	var problems []string
	for mod, v := range ours {
		if dv, ok := drovers[mod]; ok && dv != v {
			problems = append(problems, mod+" "+v+" here, "+dv+" in drover's go.mod: go get "+mod+"@"+dv+" in hack/helm (or raise drover's)")
		}
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		t.Fatalf("modules compiled at another version than drover's:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("%d modules compiled here, %d of them shared with drover, all at drover's versions", len(ours), countShared(ours, drovers))
}

// compiled runs go list in dir over ./... with the tests and returns the modules compiled, at
// the version the build selects (after replace directives).
func compiled(t *testing.T, dir string) map[string]string {
	t.Helper()
	const format = `{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}`
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-test", "-f", format, "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", dir, err)
	}
	mods := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if mod, ver, ok := strings.Cut(line, " "); ok && ver != "" {
			mods[mod] = ver
		}
	}
	return mods
}

func countShared(a, b map[string]string) int {
	n := 0
	for m := range a {
		if _, ok := b[m]; ok {
			n++
		}
	}
	return n
}
