package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/pem"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Paths and identities inside the image.
const (
	// BinaryPath is where the drover binary lives; it is the image's entrypoint.
	BinaryPath = "/usr/local/bin/drover"
	// CACertificatesPath is the CA bundle Go's crypto/x509 reads first on Linux.
	CACertificatesPath = "/etc/ssl/certs/ca-certificates.crt"
	// NonRootID is the uid and gid drover runs as ("nonroot", as in distroless images).
	NonRootID = 65532
)

const (
	passwdFile = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	groupFile = "root:x:0:\n" + "nonroot:x:65532:\n"
)

// entry is one file or directory of the layer, in the order it is written.
type entry struct {
	name string // relative, no leading slash; directories end with a slash
	mode int64
	uid  int
	data []byte // nil for a directory
}

// layerEntries lists the layer's contents: parents before children, in a fixed order.
func layerEntries(binary []byte, caBundle []byte) []entry {
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(groupFile)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwdFile)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: CACertificatesPath[1:], mode: 0o644, data: caBundle},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: NonRootID},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: BinaryPath[1:], mode: 0o755, data: binary},
	}
}

// newLayer returns the image's only layer, gzipped once in memory so that every later write
// (layout, tarball, registry) sends the same bytes.
func newLayer(binary []byte, caBundle []byte, modTime time.Time, level int) (v1.Layer, error) {
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, level)
	if err != nil {
		return nil, fmt.Errorf("failed to create gzip writer of level %d: %w", level, err)
	}
	if err := writeTar(zw, layerEntries(binary, caBundle), modTime); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("failed to compress layer: %w", err)
	}
	compressed := gz.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("failed to create layer: %w", err)
	}
	return layer, nil
}

// writeTar writes entries with fixed owners, modes and modification times.
func writeTar(w io.Writer, entries []entry, modTime time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.uid,
			ModTime: modTime,
			Format:  tar.FormatPAX,
		}
		if e.data == nil {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("failed to write tar header %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("failed to write tar entry %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("failed to close tar: %w", err)
	}
	return nil
}

// CABundle returns the PEM bundle written to CACertificatesPath: the Mozilla NSS roots that
// golang.org/x/crypto/x509roots/fallback ships. It comes from a pinned Go module, not from the
// building machine, so every machine builds the same file and a go.mod bump is the only way it
// changes. Roots with a constraint that PEM cannot express (distrust after a date) are left out,
// since a PEM reader would trust them without the constraint.
func CABundle() []byte {
	var out bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		// Writing to a bytes.Buffer cannot fail.
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return out.Bytes()
}
