package release

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/semver"
	"sigs.k8s.io/yaml"
)

// ChartIndexName is the chart repository's index in the release: `helm repo add drover <the
// release's download URL>` reads it.
const ChartIndexName = "index.yaml"

// ChartOptions say how to package drover's charts for a release.
type ChartOptions struct {
	// Dirs are the charts' directories (charts/drover-hub, charts/drover-agent).
	Dirs []string
	// Version is the release's version (git describe): the charts' appVersion, and their
	// version as SemVer (ChartVersion).
	Version string
	// Image is the image the release manifests name (IMG): the charts' default image.
	Image string
	// URLBase is where the archives will be downloadable from, for the index's urls.
	URLBase string
	// Created is the time of every archive entry and of the index.
	Created time.Time
	// Out is the directory the archives and the index are written to.
	Out string
}

// ChartVersion is the SemVer 2 version of the charts of a release version: v0.1.0 is 0.1.0,
// v0.1.0-3-gabc1234-dirty is 0.1.0-3-gabc1234-dirty, and a version that is no SemVer (a
// commit, abc1234-dirty, from a tree without tags) is 0.0.0-gabc1234-dirty.
func ChartVersion(version string) string {
	v := "v" + strings.TrimPrefix(version, "v")
	if semver.IsValid(v) && semver.Build(v) == "" {
		return strings.TrimPrefix(v, "v")
	}
	clean := regexp.MustCompile(`[^0-9A-Za-z-]+`).ReplaceAllString(version, "-")
	return "0.0.0-g" + strings.Trim(clean, "-")
}

// ImageRef is an image reference split as the charts' values hold it.
type ImageRef struct{ Repository, Tag, Digest string }

// ParseImage splits registry.example.com:5000/drover:v1@sha256:... into its repository, tag
// and digest; a missing tag is empty.
func ParseImage(ref string) (ImageRef, error) {
	var r ImageRef
	name, digest, hasDigest := strings.Cut(ref, "@")
	if hasDigest {
		if !regexp.MustCompile(`^sha256:[a-f0-9]{64}$`).MatchString(digest) {
			return r, fmt.Errorf("image %s: the digest %s is not sha256:<64 hex digits>", ref, digest)
		}
		r.Digest = digest
	}
	r.Repository = name
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		r.Repository, r.Tag = name[:i], name[i+1:]
	}
	if r.Repository == "" {
		return r, fmt.Errorf("image %q names no repository", ref)
	}
	return r, nil
}

// PackageCharts writes each chart of opts.Dirs as <name>-<version>.tgz into opts.Out, with
// its version, appVersion and default image set for the release, and the chart repository's
// index.yaml naming them; it returns the names of the files written. The archives hold the
// charts' files under <name>/, as `helm package` writes them, every entry at opts.Created, so
// the same commit gives the same archives.
func PackageCharts(opts ChartOptions) ([]string, error) {
	img, err := ParseImage(opts.Image)
	if err != nil {
		return nil, err
	}
	entries := map[string][]map[string]any{}
	var names []string
	for _, dir := range opts.Dirs {
		meta, name, err := packageChart(opts, img, dir)
		if err != nil {
			return nil, fmt.Errorf("failed to package the chart %s: %w", dir, err)
		}
		digest, err := fileSHA256(filepath.Join(opts.Out, name))
		if err != nil {
			return nil, err
		}
		meta["created"] = opts.Created.UTC().Format(time.RFC3339)
		meta["digest"] = digest
		meta["urls"] = []string{opts.URLBase + name}
		entries[meta["name"].(string)] = []map[string]any{meta}
		names = append(names, name)
	}
	index, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries, "generated": opts.Created.UTC().Format(time.RFC3339)})
	if err != nil {
		return nil, err
	}
	//nolint:gosec // published with the archives
	if err := os.WriteFile(filepath.Join(opts.Out, ChartIndexName), index, 0o644); err != nil {
		return nil, fmt.Errorf("failed to write the charts' %s: %w", ChartIndexName, err)
	}
	return append(names, ChartIndexName), nil
}

// packageChart writes one chart's archive and returns its Chart.yaml as the index holds it and
// the archive's name.
func packageChart(opts ChartOptions, img ImageRef, dir string) (map[string]any, string, error) {
	tmp, err := os.MkdirTemp("", "drover-chart-")
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
		return nil, "", err
	}
	version := ChartVersion(opts.Version)
	meta, err := setChartVersion(filepath.Join(tmp, "Chart.yaml"), version, opts.Version)
	if err != nil {
		return nil, "", err
	}
	if img.Tag == opts.Version {
		img.Tag = "" // the appVersion names it
	}
	if err := setImage(filepath.Join(tmp, "values.yaml"), img); err != nil {
		return nil, "", err
	}
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, "", fmt.Errorf("%s names no chart", filepath.Join(dir, "Chart.yaml"))
	}
	var files []entry
	err = fs.WalkDir(os.DirFS(tmp), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, entry{name: name + "/" + p, path: filepath.Join(tmp, filepath.FromSlash(p)), mode: 0o644})
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	archive := fmt.Sprintf("%s-%s.tgz", name, version)
	if err := writeTarGz(filepath.Join(opts.Out, archive), files, opts.Created); err != nil {
		return nil, "", fmt.Errorf("failed to write %s: %w", archive, err)
	}
	return meta, archive, nil
}

// setChartVersion sets the version and appVersion lines of a Chart.yaml and returns its fields.
func setChartVersion(file, version, appVersion string) (map[string]any, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	text := string(raw)
	for key, value := range map[string]string{"version": version, "appVersion": appVersion} {
		line := regexp.MustCompile(`(?m)^` + key + `:.*$`)
		if !line.MatchString(text) {
			return nil, fmt.Errorf("%s has no line %q", file, key+":")
		}
		text = line.ReplaceAllString(text, key+": "+quote(value))
	}
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		return nil, err
	}
	meta := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &meta); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", file, err)
	}
	return meta, nil
}

// setImage sets the repository, tag and digest lines of the image block of a values.yaml.
func setImage(file string, img ImageRef) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	lines := strings.Split(string(raw), "\n")
	in := false
	set := map[string]string{"repository": img.Repository, "tag": img.Tag, "digest": img.Digest}
	done := map[string]bool{}
	for i, l := range lines {
		switch {
		case l == "image:":
			in = true
		case in && l != "" && !strings.HasPrefix(l, " "):
			in = false
		case in:
			key, _, ok := strings.Cut(strings.TrimSpace(l), ":")
			if v, known := set[key]; ok && known && strings.HasPrefix(l, "  "+key+":") {
				lines[i] = "  " + key + ": " + quote(v)
				done[key] = true
			}
		}
	}
	if len(done) != len(set) {
		return fmt.Errorf("%s has no image block of repository, tag and digest lines", file)
	}
	return os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600)
}

// quote writes s as a YAML double-quoted string.
func quote(s string) string { return strconv.Quote(s) }
