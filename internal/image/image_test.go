package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/drover-io/drover/internal/image"
)

var testCreated = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// testOptions packages the real host binary and a fake binary for the other platform, gzipped
// at the fastest level to keep the tests quick (make image uses the default level).
func testOptions() image.Options {
	return image.Options{
		Binaries: []image.Binary{
			{Platform: hostPlatform, Path: hostBinary},
			{Platform: otherPlatform, Path: fakeBinary},
		},
		Version:   testVersion,
		Revision:  testCommit,
		Created:   testCreated,
		GzipLevel: gzip.BestSpeed,
	}
}

// sharedIndex is the index built from testOptions, built once for the tests that only read it.
var sharedIndex = sync.OnceValues(func() (v1.ImageIndex, error) {
	return image.Build(testOptions())
})

func mustSharedIndex(t *testing.T) v1.ImageIndex {
	t.Helper()
	idx, err := sharedIndex()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return idx
}

func mustBuild(t *testing.T, opts image.Options) v1.ImageIndex {
	t.Helper()
	start := time.Now()
	idx, err := image.Build(opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	d := mustDigest(t, idx)
	t.Logf("built index %s in %s", d, time.Since(start).Round(time.Millisecond))
	return idx
}

func mustDigest(t *testing.T, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return h
}

func mustPlatformImage(t *testing.T, idx v1.ImageIndex, p v1.Platform) v1.Image {
	t.Helper()
	img, err := image.PlatformImage(idx, p)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestTheImageRunsDroverAsNonRootFromItsOwnFilesystem(t *testing.T) {
	img := mustPlatformImage(t, mustSharedIndex(t), hostPlatform)
	root := t.TempDir()
	headers := extract(t, img, root)

	t.Run("drover version prints the stamped version and commit", func(t *testing.T) {
		out, err := exec.Command(filepath.Join(root, image.BinaryPath), "version", "--client", "-o", "json").Output()
		if err != nil {
			t.Fatalf("drover version --client -o json: %v\n%s", err, out)
		}
		var report struct {
			Client struct{ Version, Commit string } `json:"client"`
		}
		if err := json.Unmarshal(out, &report); err != nil {
			t.Fatalf("drover version -o json printed no JSON: %v\n%s", err, out)
		}
		if report.Client.Version != testVersion || report.Client.Commit != testCommit {
			t.Errorf("drover version reports client %+v, want version %s and commit %s", report.Client, testVersion, testCommit)
		}
	})
	t.Run("the binary is static, so it runs on an image without libc", func(t *testing.T) {
		f, err := elf.Open(filepath.Join(root, image.BinaryPath))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = f.Close() }()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Fatal("the binary asks for a dynamic loader: build it with CGO_ENABLED=0")
			}
		}
	})
	t.Run("the config runs the binary as 65532:65532", func(t *testing.T) {
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("user = %q, want 65532:65532", cfg.Config.User)
		}
		if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != image.BinaryPath {
			t.Errorf("entrypoint = %q, want [%s]", cfg.Config.Entrypoint, image.BinaryPath)
		}
		if !cfg.Created.Equal(testCreated) {
			t.Errorf("created = %s, want %s", cfg.Created.Time, testCreated)
		}
		wantLabels := map[string]string{image.LabelVersion: testVersion, image.LabelRevision: testCommit, image.LabelSource: image.DefaultSource}
		for k, v := range wantLabels {
			if cfg.Config.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, cfg.Config.Labels[k], v)
			}
		}
		if cfg.Architecture != hostPlatform.Architecture || cfg.OS != "linux" {
			t.Errorf("platform = %s/%s, want %s", cfg.OS, cfg.Architecture, hostPlatform.String())
		}
	})
	t.Run("passwd and group name the nonroot user 65532", func(t *testing.T) {
		for file, want := range map[string]string{"etc/passwd": "nonroot:x:65532:65532:", "etc/group": "nonroot:x:65532:"} {
			b, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), want) {
				t.Errorf("%s = %q, want a line starting %q", file, b, want)
			}
		}
	})
	t.Run("the CA bundle holds the public roots", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(root, image.CACertificatesPath))
		if err != nil {
			t.Fatal(err)
		}
		if n := countCertificates(t, b); n < 100 {
			t.Errorf("CA bundle holds %d certificates, want the ~150 NSS roots", n)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(b) {
			t.Error("the CA bundle has no certificate crypto/x509 can read")
		}
	})
	t.Run("files are owned by root with fixed times, the binary executable", func(t *testing.T) {
		for path, h := range headers {
			if !h.ModTime.Equal(testCreated) {
				t.Errorf("%s mtime = %s, want %s", path, h.ModTime, testCreated)
			}
			if h.Uid != 0 && path != "home/nonroot" {
				t.Errorf("%s is owned by uid %d, want 0", path, h.Uid)
			}
		}
		if h := headers[strings.TrimPrefix(image.BinaryPath, "/")]; h == nil || h.Mode != 0o755 {
			t.Errorf("binary header = %+v, want mode 0755", h)
		}
	})
}

// extract unpacks img's flattened filesystem under root and returns its tar headers by name.
func extract(t *testing.T, img v1.Image, root string) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	headers := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers
		}
		if err != nil {
			t.Fatalf("failed to read the image's filesystem: %v", err)
		}
		headers[h.Name] = h
		if !filepath.IsLocal(h.Name) {
			t.Fatalf("image entry %q escapes the root", h.Name)
		}
		dst := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			err = writeFile(dst, tr, os.FileMode(h.Mode).Perm())
		default:
			t.Fatalf("unexpected entry %q of type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

func countCertificates(t *testing.T, pemBytes []byte) int {
	t.Helper()
	n := bytes.Count(pemBytes, []byte("-----BEGIN CERTIFICATE-----"))
	if n != bytes.Count(pemBytes, []byte("-----END CERTIFICATE-----")) {
		t.Fatal("the CA bundle has unbalanced PEM blocks")
	}
	return n
}
