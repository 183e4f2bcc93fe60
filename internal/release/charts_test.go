package release

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/modroot"
)

func TestTheChartsVersionIsSemVerForEveryVersionGitDescribes(t *testing.T) {
	for version, want := range map[string]string{
		"v0.1.0":                   "0.1.0",
		"v1.2.3-rc.1":              "1.2.3-rc.1",
		"v0.1.0-3-gabc1234":        "0.1.0-3-gabc1234",
		"v0.1.0-3-gabc1234-dirty":  "0.1.0-3-gabc1234-dirty",
		"abc1234":                  "0.0.0-gabc1234",
		"0123456-dirty":            "0.0.0-g0123456-dirty",
		"dev":                      "0.0.0-gdev",
		"v0.1.0+build.5 (patched)": "0.0.0-gv0-1-0-build-5-patched",
	} {
		got := ChartVersion(version)
		if got != want || !semver.IsValid("v"+got) {
			t.Errorf("ChartVersion(%q) = %q (valid SemVer: %t), want %q", version, got, semver.IsValid("v"+got), want)
		}
	}
}

func TestAnImageReferenceSplitsIntoTheChartsValues(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for ref, want := range map[string]ImageRef{
		"drover:v0.1.0":                            {Repository: "drover", Tag: "v0.1.0"},
		"registry.example.com:5000/team/drover":    {Repository: "registry.example.com:5000/team/drover"},
		"registry.example.com:5000/drover:v1":      {Repository: "registry.example.com:5000/drover", Tag: "v1"},
		"registry.example.com/drover@" + digest:    {Repository: "registry.example.com/drover", Digest: digest},
		"registry.example.com/drover:v1@" + digest: {Repository: "registry.example.com/drover", Tag: "v1", Digest: digest},
	} {
		got, err := ParseImage(ref)
		if err != nil || got != want {
			t.Errorf("ParseImage(%q) = %+v, %v; want %+v", ref, got, err, want)
		}
	}
	if _, err := ParseImage("drover@sha256:short"); err == nil {
		t.Error("ParseImage accepted a digest that is not sha256:<64 hex digits>")
	}
}

// TestTheChartsArePackagedTheSameForTheSameCommit packages the repository's charts twice: the
// archives are equal byte for byte, hold each chart under <name>/ with the release's version
// and image, and the index names each archive with its digest.
func TestTheChartsArePackagedTheSameForTheSameCommit(t *testing.T) {
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	opts := ChartOptions{
		Dirs:    []string{filepath.Join(root, "charts", "drover-hub"), filepath.Join(root, "charts", "drover-agent")},
		Version: "v0.1.0", Image: "registry.example.com/drover:v0.1.0", URLBase: "https://example.invalid/dl/",
		Created: time.Unix(1700000000, 0),
	}
	var outs []string
	for range 2 {
		opts.Out = t.TempDir()
		names, err := PackageCharts(opts)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"drover-hub-0.1.0.tgz", "drover-agent-0.1.0.tgz", ChartIndexName}; strings.Join(names, " ") != strings.Join(want, " ") {
			t.Fatalf("PackageCharts wrote %q, want %q", names, want)
		}
		outs = append(outs, opts.Out)
	}
	for _, name := range []string{"drover-hub-0.1.0.tgz", "drover-agent-0.1.0.tgz", ChartIndexName} {
		a, _ := os.ReadFile(filepath.Join(outs[0], name))
		b, _ := os.ReadFile(filepath.Join(outs[1], name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two packagings of the same commit", name)
		}
	}
	files := map[string]string{}
	for _, f := range labtest.Untar(t, filepath.Join(outs[0], "drover-hub-0.1.0.tgz")) {
		files[f.Name] = string(f.Body)
	}
	if !strings.Contains(files["drover-hub/Chart.yaml"], "\nversion: \"0.1.0\"\n") || !strings.Contains(files["drover-hub/Chart.yaml"], "\nappVersion: \"v0.1.0\"\n") {
		t.Errorf("the packaged Chart.yaml does not carry the release's version:\n%s", files["drover-hub/Chart.yaml"])
	}
	if !strings.Contains(files["drover-hub/values.yaml"], "\n  repository: \"registry.example.com/drover\"\n  # Empty: the chart's appVersion (none with a digest).\n  tag: \"\"\n") {
		t.Errorf("the packaged values.yaml does not name the release's image:\n%s", files["drover-hub/values.yaml"])
	}
	for _, want := range []string{"drover-hub/templates/deployment-drover-hub.yaml", "drover-hub/crds/drclusters.drover.io.yaml", "drover-hub/values.schema.json"} {
		if files[want] == "" {
			t.Errorf("the archive lacks %s", want)
		}
	}
	checkIndex(t, outs[0])
}

func checkIndex(t *testing.T, dir string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, ChartIndexName))
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		APIVersion string `json:"apiVersion"`
		Entries    map[string][]struct {
			Version, AppVersion, Digest string
			URLs                        []string `json:"urls"`
		} `json:"entries"`
	}
	if err := yaml.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"drover-hub", "drover-agent"} {
		e := index.Entries[name]
		digest, _ := fileSHA256(filepath.Join(dir, name+"-0.1.0.tgz"))
		if len(e) != 1 || e[0].Version != "0.1.0" || e[0].AppVersion != "v0.1.0" || e[0].Digest != digest ||
			len(e[0].URLs) != 1 || e[0].URLs[0] != "https://example.invalid/dl/"+name+"-0.1.0.tgz" {
			t.Errorf("index.yaml's entry of %s = %+v, want version 0.1.0, appVersion v0.1.0, digest %s and its URL", name, e, digest)
		}
	}
}
