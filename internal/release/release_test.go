package release

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/modroot"
)

// The release for this machine's platform (linux/amd64 on CI): the archive unpacks to a drover
// that reports the stamped version and commit, checksums.txt verifies every file with
// sha256sum (the packaged chart and its index among them), and the krew manifest names the
// archive with its digest.
func TestTheReleaseArchiveRunsAndItsChecksumsVerify(t *testing.T) {
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "drover-hub.yaml")
	if err := os.WriteFile(manifest, []byte("kind: List\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host := Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	out := filepath.Join(t.TempDir(), "release")
	opts := Options{Version: "v0.0.0-test", Commit: "0123456789abcdef", Platforms: []Platform{host},
		Root: root, Out: out, Created: time.Unix(1700000000, 0), Manifests: []string{manifest},
		Charts: []string{filepath.Join(root, "charts", "drover-hub")}, Image: "drover:v0.0.0-test",
		URLBase: "https://example.invalid/dl/", Log: io.Discard}
	names, err := Build(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	archiveFile := archiveName(opts.Version, host)
	for _, want := range []string{archiveFile, "drover-hub.yaml", "drover-hub-0.0.0-test.tgz", ChartIndexName, krewManifestName, checksumsName} {
		if !slices.Contains(names, want) {
			t.Errorf("release files %q lack %s", names, want)
		}
	}
	sum := exec.Command("sha256sum", "-c", checksumsName)
	sum.Dir = out
	if b, err := sum.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c checksums.txt: %v\n%s", err, b)
	}
	bin := unpack(t, filepath.Join(out, archiveFile), t.TempDir())
	got, err := exec.Command(bin, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("drover version --client -o json: %v\n%s", err, got)
	}
	var report struct {
		Client struct{ Version, Commit, Platform string } `json:"client"`
	}
	if err := json.Unmarshal(got, &report); err != nil {
		t.Fatalf("drover version -o json printed no JSON: %v\n%s", err, got)
	}
	c := report.Client
	if c.Version != opts.Version || c.Commit != opts.Commit || c.Platform != host.String() {
		t.Errorf("drover version reports client %+v, want version %s, commit %s, platform %s", c, opts.Version, opts.Commit, host)
	}
	checkKrewManifest(t, filepath.Join(out, krewManifestName), archiveFile, filepath.Join(out, archiveFile))
}

// unpack extracts a tar.gz into dir and returns the path of the drover binary in it.
func unpack(t *testing.T, path, dir string) string {
	t.Helper()
	var seen []string
	for _, f := range labtest.Untar(t, path) {
		seen = append(seen, f.Name)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Name)), f.Body, f.Mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"drover", "LICENSE", "README.md"} {
		if !slices.Contains(seen, want) {
			t.Errorf("archive holds %q, want %s too", seen, want)
		}
	}
	return filepath.Join(dir, "drover")
}

func checkKrewManifest(t *testing.T, path, archiveFile, archivePath string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("krew manifest: %v", err)
	}
	digest, err := fileSHA256(archivePath)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != "Plugin" || len(p.Spec.Platforms) != 1 {
		t.Fatalf("krew manifest = %s, want one Plugin platform", b)
	}
	pl := p.Spec.Platforms[0]
	if pl.URI != "https://example.invalid/dl/"+archiveFile || pl.SHA256 != digest || pl.Bin != "kubectl-drover" {
		t.Errorf("krew platform = %+v, want uri of %s, sha256 %s, bin kubectl-drover", pl, archiveFile, digest)
	}
}

func TestParsePlatformsRefusesAHalfPlatform(t *testing.T) {
	if _, err := ParsePlatforms("linux/amd64,darwin"); err == nil || !strings.Contains(err.Error(), `"darwin"`) {
		t.Fatalf("ParsePlatforms(linux/amd64,darwin) = %v, want an error naming darwin", err)
	}
	got, err := ParsePlatforms("linux/amd64, windows/arm64")
	if err != nil || len(got) != 2 || got[1] != (Platform{OS: "windows", Arch: "arm64"}) {
		t.Fatalf("ParsePlatforms = %v, %v", got, err)
	}
}
