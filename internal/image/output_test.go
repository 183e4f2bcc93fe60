package image_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/drover-io/drover/internal/image"
)

func TestTheSameInputsGiveTheSameIndexDigest(t *testing.T) {
	first := mustDigest(t, mustBuild(t, testOptions()))
	second := mustDigest(t, mustBuild(t, testOptions()))
	if first != second {
		t.Fatalf("two builds of the same binaries gave index digests %s and %s", first, second)
	}

	// The digest does cover the timestamps and labels: equal digests above mean they are fixed.
	// (Only the small fake binary here, to keep the test fast.)
	opts := testOptions()
	opts.Binaries = opts.Binaries[1:]
	first = mustDigest(t, mustBuild(t, opts))
	later := opts
	later.Created = opts.Created.Add(time.Second)
	if d := mustDigest(t, mustBuild(t, later)); d == first {
		t.Errorf("a build created a second later has the same digest %s", d)
	}
	other := opts
	other.Revision = "fedcba"
	if d := mustDigest(t, mustBuild(t, other)); d == first {
		t.Errorf("a build of another revision has the same digest %s", d)
	}
}

func TestTheIndexHasOneImagePerPlatform(t *testing.T) {
	idx := mustSharedIndex(t)
	sizes, err := image.Sizes(idx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || !sizes[0].Platform.Equals(hostPlatform) || !sizes[1].Platform.Equals(otherPlatform) {
		t.Fatalf("index platforms = %+v, want %s then %s", sizes, hostPlatform.String(), otherPlatform.String())
	}
	for _, s := range sizes {
		t.Logf("%s: %d bytes compressed, %d uncompressed", s.Platform.String(), s.Compressed, s.Uncompressed)
		if s.Compressed <= 0 || s.Uncompressed <= 0 {
			t.Errorf("%s has sizes %+v, want both positive", s.Platform.String(), s)
		}
	}
}

func TestBuildRefusesBadInputWithAMessageThatSaysWhatToDo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "linux_arm64", "drover")
	cases := []struct {
		name     string
		binaries []image.Binary
		want     string
	}{
		{"no binaries", nil, "give at least one platform's drover binary"},
		{"a platform given twice", []image.Binary{
			{Platform: hostPlatform, Path: hostBinary}, {Platform: hostPlatform, Path: hostBinary},
		}, "given twice"},
		{"a binary that was not built", []image.Binary{{Platform: otherPlatform, Path: missing}}, missing + " for " + otherPlatform.String() + " (build it first"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := image.Build(image.Options{Binaries: tc.binaries})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build returned %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestTheOCILayoutReadsBackAsTheSameIndex(t *testing.T) {
	idx := mustSharedIndex(t)
	dir := filepath.Join(t.TempDir(), "oci")
	// Writing twice replaces the layout instead of adding a second entry to index.json.
	for range 2 {
		if err := image.WriteLayout(dir, idx, "drover:test"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := image.ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := mustDigest(t, idx); mustDigest(t, got) != want {
		t.Errorf("layout index digest = %s, want %s", mustDigest(t, got), want)
	}
}

func TestPushedIndexPullsBackWithTheSameDigest(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	idx := mustSharedIndex(t)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/drover-io/drover:test"

	pushed, err := image.Push(context.Background(), idx, ref, false)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(pushed)
	if err != nil {
		t.Fatalf("failed to pull %s: %v", pushed, err)
	}
	if got, want := mustDigest(t, pulled), mustDigest(t, idx); got != want {
		t.Fatalf("pulled index digest = %s, want %s", got, want)
	}
	// A node pulls by platform: it gets the host image and its layer, byte for byte.
	img, err := remote.Image(pushed, remote.WithPlatform(hostPlatform))
	if err != nil {
		t.Fatal(err)
	}
	want := mustPlatformImage(t, idx, hostPlatform)
	if mustDigest(t, img) != mustDigest(t, want) {
		t.Errorf("pulled %s image digest = %s, want %s", hostPlatform.String(), mustDigest(t, img), mustDigest(t, want))
	}
	assertSameLayers(t, img, want)
}

func TestTheTarballLoadsAsTheHostImage(t *testing.T) {
	idx := mustSharedIndex(t)
	path := filepath.Join(t.TempDir(), "drover-image.tar")
	if err := image.WriteTarball(path, idx, hostPlatform, "drover:test"); err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return openFile(path) })
	if err != nil {
		t.Fatalf("LoadManifest: %v", err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != "drover:test" {
		t.Fatalf("tarball manifest = %+v, want one image tagged drover:test", m)
	}
	tag, err := name.NewTag("drover:test")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("ImageFromPath: %v", err)
	}
	want := mustPlatformImage(t, idx, hostPlatform)
	gotCfg, err := loaded.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, err := want.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if gotCfg != wantCfg {
		t.Errorf("loaded config = %s, want %s (the image ID docker shows)", gotCfg, wantCfg)
	}
	assertSameLayers(t, loaded, want)

	if err := image.WriteTarball(path, idx, v1.Platform{OS: "linux", Architecture: "s390x"}, "drover:test"); err == nil {
		t.Error("WriteTarball for a platform the index lacks returned no error")
	}
}

func assertSameLayers(t *testing.T, got, want v1.Image) {
	t.Helper()
	digests := func(img v1.Image) []string {
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range layers {
			out = append(out, mustDigest(t, l).String())
		}
		return out
	}
	if g, w := strings.Join(digests(got), ","), strings.Join(digests(want), ","); g != w {
		t.Errorf("layers = %s, want %s", g, w)
	}
}
