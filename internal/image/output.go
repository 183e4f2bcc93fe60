package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// refNameAnnotation names the index in an OCI layout's index.json, as skopeo and podman read it
// (`oci:dist/image:drover:v0.1.0`).
const refNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout replaces dir with an OCI image layout whose index.json points at idx, annotated
// with refName (e.g. the tag) when it is not empty.
func WriteLayout(dir string, idx v1.ImageIndex, refName string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to remove old OCI layout %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("failed to create OCI layout %s: %w", dir, err)
	}
	var opts []layout.Option
	if refName != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{refNameAnnotation: refName}))
	}
	if err := p.AppendIndex(idx, opts...); err != nil {
		return fmt.Errorf("failed to write image index to OCI layout %s: %w", dir, err)
	}
	return nil
}

// ReadLayout returns the image index WriteLayout wrote to dir.
func ReadLayout(dir string) (v1.ImageIndex, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read OCI layout %s (run make image first): %w", dir, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("failed to read index.json of OCI layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("OCI layout %s holds %d entries, want the one image index make image writes", dir, len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("failed to read image index %s from OCI layout %s: %w", m.Manifests[0].Digest, dir, err)
	}
	return idx, nil
}

// PlatformImage returns the image of idx built for platform.
func PlatformImage(idx v1.ImageIndex, platform v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("failed to read image index: %w", err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.Equals(platform) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("failed to read image %s for %s: %w", d.Digest, platform.String(), err)
			}
			return img, nil
		}
	}
	return nil, fmt.Errorf("the image index has no image for %s: build the binary for that platform too", platform.String())
}

// WriteTarball writes platform's image of idx to path as a docker-archive tarball tagged tag,
// the format `docker load` and `podman load` read. A docker archive holds one image per tag,
// so it carries one platform; the OCI layout carries them all.
func WriteTarball(path string, idx v1.ImageIndex, platform v1.Platform, tag string) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("failed to parse image tag %q (want e.g. drover:v0.1.0): %w", tag, err)
	}
	img, err := PlatformImage(idx, platform)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(path, t, img); err != nil {
		return fmt.Errorf("failed to write image tarball %s: %w", path, err)
	}
	return nil
}

// Push uploads idx and its images to ref, with credentials from the docker config
// (~/.docker/config.json, DOCKER_CONFIG) as `docker login` or `crane auth login` leave them.
// Plain HTTP is used for localhost and 127.0.0.1 registries, or for any registry when insecure.
func Push(ctx context.Context, idx v1.ImageIndex, ref string, insecure bool) (name.Reference, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("failed to parse image reference %q (want registry/repository:tag): %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return nil, fmt.Errorf("failed to push image to %s (check the registry is reachable and you are logged in): %w", r, err)
	}
	return r, nil
}

// Size is what one platform's image weighs.
type Size struct {
	Platform v1.Platform
	Digest   v1.Hash
	// Compressed is what a registry stores and a node pulls: manifest, config and gzipped layers.
	Compressed int64
	// Uncompressed is the unpacked layers' size on a node's disk.
	Uncompressed int64
}

// Sizes returns the size of each platform's image of idx, in index order.
func Sizes(idx v1.ImageIndex) ([]Size, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("failed to read image index: %w", err)
	}
	var sizes []Size
	for _, d := range m.Manifests {
		if d.Platform == nil {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("failed to read image %s: %w", d.Digest, err)
		}
		s, err := imageSize(img)
		if err != nil {
			return nil, fmt.Errorf("failed to measure image %s for %s: %w", d.Digest, d.Platform.String(), err)
		}
		s.Platform, s.Digest = *d.Platform, d.Digest
		sizes = append(sizes, s)
	}
	return sizes, nil
}

func imageSize(img v1.Image) (Size, error) {
	var s Size
	m, err := img.Manifest()
	if err != nil {
		return s, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return s, err
	}
	s.Compressed = int64(len(raw)) + m.Config.Size
	layers, err := img.Layers()
	if err != nil {
		return s, err
	}
	for _, l := range layers {
		size, err := l.Size()
		if err != nil {
			return s, err
		}
		s.Compressed += size
		n, err := uncompressedSize(l)
		if err != nil {
			return s, err
		}
		s.Uncompressed += n
	}
	return s, nil
}

func uncompressedSize(l v1.Layer) (int64, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, rc)
	return n, errors.Join(err, rc.Close())
}
