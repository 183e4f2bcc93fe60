package upstream

import (
	_ "embed"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// ManifestPath is the manifest's path in drover's repository, for messages.
const ManifestPath = "internal/lab/crds/upstream/SOURCES.tsv"

//go:embed SOURCES.tsv
var manifest string

// Source is one upstream CRD file: where it comes from and its sum.
type Source struct {
	// File is the file's name in a directory of upstream CRDs.
	File string
	// Project names the upstream project, such as VolSync.
	Project string
	// Repository is github.com/OWNER/NAME.
	Repository string
	// Commit is the full commit the file is taken at.
	Commit string
	// Path is the file's path in the repository.
	Path string
	// SHA256 is the file's sum, in lower-case hex.
	SHA256 string
}

// URL is where base (such as DefaultBaseURL) serves the file at its commit:
// base/OWNER/NAME/COMMIT/PATH, as raw.githubusercontent.com does.
func (s Source) URL(base string) string {
	return strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(s.Repository, githubPrefix) + "/" + s.Commit + "/" + s.Path
}

const githubPrefix = "github.com/"

var (
	hexCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)
	hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)
	repoName  = regexp.MustCompile(`^github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
)

// validate refuses a source whose file name could leave its directory or whose repository,
// commit, path or sum is not of the form the downloader needs.
func (s Source) validate() error {
	switch {
	case s.File == "" || path.Base(s.File) != s.File || strings.HasPrefix(s.File, ".") || !strings.HasSuffix(s.File, ".yaml"):
		return fmt.Errorf("file %q is not a plain *.yaml name", s.File)
	case s.Project == "":
		return fmt.Errorf("%s names no project", s.File)
	case !repoName.MatchString(s.Repository):
		return fmt.Errorf("%s: repository %q is not github.com/OWNER/NAME", s.File, s.Repository)
	case !hexCommit.MatchString(s.Commit):
		return fmt.Errorf("%s: commit %q is not 40 lower-case hex digits", s.File, s.Commit)
	case s.Path == "" || path.IsAbs(s.Path) || path.Clean(s.Path) != s.Path || strings.HasPrefix(s.Path, ".."):
		return fmt.Errorf("%s: path %q is not a clean path in the repository", s.File, s.Path)
	case !hexSHA256.MatchString(s.SHA256):
		return fmt.Errorf("%s: sha256 %q is not 64 lower-case hex digits", s.File, s.SHA256)
	}
	return nil
}

// Sources returns the sources the manifest (SOURCES.tsv) records.
func Sources() ([]Source, error) {
	sources, err := ParseSources(manifest)
	if err != nil {
		return nil, fmt.Errorf("failed to read the manifest %s: %w", ManifestPath, err)
	}
	return sources, nil
}

// ParseSources parses a manifest: lines of six tab-separated fields (file, project, repository,
// commit, path, sha256); empty lines and lines starting with # are comments.
func ParseSources(text string) ([]Source, error) {
	var out []Source
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			return nil, fmt.Errorf("line %d has %d tab-separated fields, want 6 (file, project, repository, commit, path, sha256)", i+1, len(f))
		}
		s := Source{File: f[0], Project: f[1], Repository: f[2], Commit: f[3], Path: f[4], SHA256: f[5]}
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if seen[s.File] {
			return nil, fmt.Errorf("line %d: %s is listed twice", i+1, s.File)
		}
		seen[s.File] = true
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("no sources")
	}
	return out, nil
}
