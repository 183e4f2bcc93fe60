// Package release builds drover's release for `make release`: the CLI for every platform
// stamped with the version and commit, one archive per platform (tar.gz, zip for Windows)
// holding the binary, LICENSE and README.md, the release manifests, the Helm charts packaged
// with a chart repository's index.yaml (charts.go), a checksums.txt of all of them (SHA-256, in
// sha256sum's format, so `sha256sum -c checksums.txt` verifies them) and a krew plugin manifest
// (drover.yaml) for `kubectl krew install --manifest=drover.yaml`.
//
// Every archive entry carries the commit's time, so the same commit gives the same archives.
package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Platform is one GOOS/GOARCH pair.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatforms reads "linux/amd64,darwin/arm64".
func ParsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, f := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || os == "" || arch == "" {
			return nil, fmt.Errorf("platform %q is not OS/ARCH, for example linux/amd64", f)
		}
		out = append(out, Platform{OS: os, Arch: arch})
	}
	return out, nil
}

// Options say what to build and where.
type Options struct {
	Version, Commit string
	Platforms       []Platform
	// Root is the module's root (the directory of go.mod, LICENSE and README.md).
	Root string
	// Out is the directory the release is written to; its previous content is replaced.
	Out string
	// Created is the time every archive entry carries.
	Created time.Time
	// Manifests are files copied into the release as they are (dist/drover-hub.yaml, ...).
	Manifests []string
	// Charts are the directories of the Helm charts packaged into the release (charts/...),
	// with a chart repository's index.yaml (PackageCharts); Image is the image they default to,
	// the one the release manifests name.
	Charts []string
	Image  string
	// URLBase is where the archives will be downloadable from, for the krew manifest's uri.
	URLBase string
	// Log receives one line per step.
	Log io.Writer
}

const versionPkg = "github.com/drover-io/drover/internal/version"

// Build writes the release into opts.Out and returns the names of the files written.
func Build(ctx context.Context, opts Options) ([]string, error) {
	if err := os.RemoveAll(opts.Out); err != nil {
		return nil, fmt.Errorf("failed to clear %s: %w", opts.Out, err)
	}
	//nolint:gosec // release artefacts are published: everyone reads them
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", opts.Out, err)
	}
	var archives []archive
	for _, p := range opts.Platforms {
		a, err := buildPlatform(ctx, opts, p)
		if err != nil {
			return nil, err
		}
		archives = append(archives, a)
	}
	names := make([]string, 0, len(archives)+len(opts.Manifests)+2)
	for _, a := range archives {
		names = append(names, a.name)
	}
	for _, m := range opts.Manifests {
		if err := copyFile(m, filepath.Join(opts.Out, filepath.Base(m))); err != nil {
			return nil, err
		}
		names = append(names, filepath.Base(m))
	}
	if len(opts.Charts) > 0 {
		charts, err := PackageCharts(ChartOptions{Dirs: opts.Charts, Version: opts.Version, Image: opts.Image,
			URLBase: opts.URLBase, Created: opts.Created, Out: opts.Out})
		if err != nil {
			return nil, err
		}
		for _, c := range charts {
			fmt.Fprintf(opts.Log, "wrote %s\n", c)
		}
		names = append(names, charts...)
	}
	if err := writeKrewManifest(opts, archives); err != nil {
		return nil, err
	}
	names = append(names, krewManifestName)
	if err := writeChecksums(opts.Out, names); err != nil {
		return nil, err
	}
	return append(names, checksumsName), nil
}

// archive is one platform's archive in the release.
type archive struct {
	platform Platform
	name     string
	sha256   string
	binary   string
}

func buildPlatform(ctx context.Context, opts Options, p Platform) (archive, error) {
	binary := "drover"
	if p.OS == "windows" {
		binary += ".exe"
	}
	tmp, err := os.MkdirTemp("", "drover-release-")
	if err != nil {
		return archive{}, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	bin := filepath.Join(tmp, binary)
	fmt.Fprintf(opts.Log, "building drover %s for %s\n", opts.Version, p)
	ldflags := fmt.Sprintf("-s -w -X %s.Version=%s -X %s.Commit=%s", versionPkg, opts.Version, versionPkg, opts.Commit)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, "./cmd/drover")
	cmd.Dir = opts.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return archive{}, fmt.Errorf("failed to build drover for %s: %w\n%s", p, err, out)
	}
	files := []entry{
		{name: binary, path: bin, mode: 0o755},
		{name: "LICENSE", path: filepath.Join(opts.Root, "LICENSE"), mode: 0o644},
		{name: "README.md", path: filepath.Join(opts.Root, "README.md"), mode: 0o644},
	}
	a := archive{platform: p, binary: binary, name: archiveName(opts.Version, p)}
	path := filepath.Join(opts.Out, a.name)
	if p.OS == "windows" {
		err = writeZip(path, files, opts.Created)
	} else {
		err = writeTarGz(path, files, opts.Created)
	}
	if err != nil {
		return archive{}, fmt.Errorf("failed to write %s: %w", a.name, err)
	}
	if a.sha256, err = fileSHA256(path); err != nil {
		return archive{}, err
	}
	fmt.Fprintf(opts.Log, "wrote %s\n", a.name)
	return a, nil
}

// archiveName is drover_<version>_<os>_<arch>.tar.gz (.zip on Windows).
func archiveName(version string, p Platform) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("drover_%s_%s_%s%s", version, p.OS, p.Arch, ext)
}

const checksumsName = "checksums.txt"

// writeChecksums writes "<sha256>  <name>" per file, sorted by name: sha256sum's format.
func writeChecksums(dir string, names []string) error {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	var b strings.Builder
	for _, n := range sorted {
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, n)
	}
	return os.WriteFile(filepath.Join(dir, checksumsName), []byte(b.String()), 0o644) //nolint:gosec // published with the archives
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("failed to open %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("failed to read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("failed to read %s (run make release-manifests first): %w", from, err)
	}
	return os.WriteFile(to, b, 0o644) //nolint:gosec // published with the archives
}
