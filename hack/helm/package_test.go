package charttest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	repo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/drover-io/drover/internal/release"
)

// TestTheReleasedChartsAreARepositoryOfTheReleaseManifests packages the charts as `make
// release` does (internal/release.PackageCharts) for a version and an image, reads the index
// with Helm's repository code, loads each archive it names with Helm's loader and renders it:
// each is its release manifest as `make release-manifests IMG=<image>` writes it.
func TestTheReleasedChartsAreARepositoryOfTheReleaseManifests(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("0f", 32)
	for _, tc := range []struct{ version, image, chartVersion string }{
		{"v0.1.0", "registry.example.com/drover:v0.1.0", "0.1.0"},
		{"75b67e3-dirty", "registry.example.com:5000/team/drover:testing@" + digest, "0.0.0-g75b67e3-dirty"},
	} {
		out := t.TempDir()
		_, err := release.PackageCharts(release.ChartOptions{
			Dirs:    []string{ChartDir(root, "drover-hub"), ChartDir(root, "drover-agent")},
			Version: tc.version, Image: tc.image, URLBase: "https://example.invalid/" + tc.version + "/",
			Created: time.Unix(1700000000, 0), Out: out,
		})
		if err != nil {
			t.Fatal(err)
		}
		index, err := repo.LoadIndexFile(filepath.Join(out, release.ChartIndexName))
		if err != nil {
			t.Fatalf("Helm cannot read the index: %v", err)
		}
		for _, r := range releaseRenders[:2] {
			cv, err := index.Get(r.chart, tc.chartVersion)
			if err != nil {
				t.Fatalf("the index of %s has no %s %s: %v", tc.version, r.chart, tc.chartVersion, err)
			}
			archive := filepath.Join(out, filepath.Base(cv.URLs[0]))
			if cv.URLs[0] != "https://example.invalid/"+tc.version+"/"+filepath.Base(archive) || cv.AppVersion != tc.version {
				t.Errorf("index entry %s %s: urls %v, appVersion %s", r.chart, cv.Version, cv.URLs, cv.AppVersion)
			}
			if sum := fileDigest(t, archive); cv.Digest != sum {
				t.Errorf("the index's digest of %s is %s, the archive's %s", archive, cv.Digest, sum)
			}
			c, err := Load(archive)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(t.Context(), c, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ReleaseManifest(t.Context(), root, r.tree, tc.image)
			if err != nil {
				t.Fatal(err)
			}
			compareObjects(t, got, want)
			t.Logf("%s: %s renders config/%s with image %s", filepath.Base(archive), r.chart, r.tree, tc.image)
		}
	}
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
