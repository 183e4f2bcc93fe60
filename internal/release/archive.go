package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"time"
)

// entry is one file of an archive: its name inside, its path on disk and its mode.
type entry struct {
	name, path string
	mode       int64
}

func writeTarGz(path string, files []entry, created time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	gz.ModTime = created
	tw := tar.NewWriter(gz)
	for _, e := range files {
		b, err := os.ReadFile(e.path)
		if err != nil {
			return fmt.Errorf("failed to read %s: %w", e.path, err)
		}
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(b)), ModTime: created,
			Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

func writeZip(path string, files []entry, created time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, e := range files {
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: created}
		hdr.SetMode(os.FileMode(e.mode)) //nolint:gosec // a permission mode such as 0o755
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		src, err := os.Open(e.path)
		if err != nil {
			return fmt.Errorf("failed to read %s: %w", e.path, err)
		}
		_, err = io.Copy(w, src)
		_ = src.Close() // opened read-only
		if err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
