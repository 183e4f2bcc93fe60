package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// DefaultBaseURL serves a GitHub repository's file at a commit: /OWNER/NAME/COMMIT/PATH.
const DefaultBaseURL = "https://raw.githubusercontent.com"

// maxFileSize bounds a download: the largest upstream CRD (VolSync's ReplicationSource) is
// under half a MiB.
const maxFileSize = 16 << 20

// FetchOptions say where to download from.
type FetchOptions struct {
	// BaseURL serves the files (Source.URL); empty is DefaultBaseURL.
	BaseURL string
	// Client downloads; nil is a client with a two-minute timeout per file.
	Client *http.Client
	// Log gets a line per file; nil discards them.
	Log io.Writer
}

func (o FetchOptions) withDefaults() FetchOptions {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Fetch downloads into dir, creating it, each source's file that dir lacks or holds with
// another sum, at its pinned commit. A file lands in dir only complete and with its sum: it is
// written to a temporary file beside it and renamed. A downloaded file with another sum is a
// *MismatchError naming it; Fetch goes on with the other files and returns every error, but stops
// at the first that did not get an answer from the server (no network: the others would fail
// the same way).
func Fetch(ctx context.Context, opts FetchOptions, dir string, sources []Source) error {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("failed to create the upstream CRDs' cache %s: %w", dir, err)
	}
	var errs []error
	for _, s := range sources {
		sum, err := fileSHA256(filepath.Join(dir, s.File))
		if err == nil && sum == s.SHA256 {
			continue
		}
		err = fetchOne(ctx, opts, dir, s)
		if err == nil {
			fmt.Fprintf(opts.Log, "downloaded %s (%s at %.12s)\n", s.File, s.Repository, s.Commit)
			continue
		}
		errs = append(errs, err)
		if _, unanswered := errors.AsType[*url.Error](err); unanswered {
			break
		}
	}
	return errors.Join(errs...)
}

// fetchOne downloads s into dir through a temporary file, removed unless s's sum is right.
func fetchOne(ctx context.Context, opts FetchOptions, dir string, s Source) (err error) {
	addr := s.URL(opts.BaseURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, addr, nil)
	if err != nil {
		return fmt.Errorf("failed to download %s: %w", s.File, err)
	}
	resp, err := opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("failed to download %s: %w", s.File, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed to download %s from %s: %s", s.File, addr, resp.Status)
	}
	tmp, err := os.CreateTemp(dir, "."+s.File+".*.part")
	if err != nil {
		return fmt.Errorf("failed to create a temporary file for %s: %w", s.File, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, maxFileSize+1))
	switch {
	case err != nil:
		return fmt.Errorf("failed to download %s from %s: %w", s.File, addr, err)
	case n > maxFileSize:
		return fmt.Errorf("failed to download %s from %s: larger than %d bytes", s.File, addr, maxFileSize)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != s.SHA256 {
		return &MismatchError{File: s.File, Where: addr, Got: sum, Want: s.SHA256}
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("failed to write %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), filepath.Join(dir, s.File)); err != nil {
		return fmt.Errorf("failed to move %s into place: %w", s.File, err)
	}
	return nil
}
