package crds

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// UpstreamEnv names the environment variable that makes the lab serve the upstream CRDs in the
// directory it names, read at run time, in place of its own (lab.Options.UpstreamCRDs). Where
// the upstream CRDs are found for tests is package upstream's (upstream.Dir).
const UpstreamEnv = "DROVER_LAB_UPSTREAM_CRDS"

// File is a CRD manifest: its name in the file system it was read from, and the CRD.
type File struct {
	FS   fs.FS
	Name string
	CRD  *apiextensionsv1.CustomResourceDefinition
}

// GroupKind is the group and kind the CRD defines.
func (f File) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: f.CRD.Spec.Group, Kind: f.CRD.Spec.Names.Kind}
}

// Decode decodes one CRD manifest, strictly: an unknown field is an error.
func Decode(raw []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return nil, err
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Spec.Group == "" || crd.Spec.Names.Kind == "" {
		return nil, errors.New("not a CustomResourceDefinition with a group and a kind")
	}
	return crd, nil
}

// Load decodes the manifests of fsys that match pattern (fs.Glob), sorted by name.
func Load(fsys fs.FS, pattern string) ([]File, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("failed to list CRDs %s: %w", pattern, err)
	}
	sort.Strings(names)
	files := make([]File, 0, len(names))
	for _, n := range names {
		raw, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("failed to read CRD %s: %w", n, err)
		}
		crd, err := Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("failed to decode CRD %s: %w", n, err)
		}
		files = append(files, File{FS: fsys, Name: n, CRD: crd})
	}
	return files, nil
}

// LoadLab decodes the lab's own external CRDs.
func LoadLab() ([]File, error) { return Load(External, "external/*.yaml") }

// LoadUpstream decodes the upstream CRDs in dir.
func LoadUpstream(dir string) ([]File, error) {
	files, err := Load(os.DirFS(dir), "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("upstream CRDs in %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no upstream CRDs (*.yaml) in %s", dir)
	}
	return files, nil
}

// Replace returns the CRDs to serve in the lab's place: each lab CRD replaced by the upstream CRD
// of the same group and kind, then the upstream kinds the lab has no CRD of. Several upstream CRDs
// of one group and kind are an error.
func Replace(lab, upstream []File) ([]File, error) {
	byKind := map[schema.GroupKind]File{}
	for _, u := range upstream {
		if prev, ok := byKind[u.GroupKind()]; ok {
			return nil, fmt.Errorf("upstream CRDs %s and %s both define %s", prev.Name, u.Name, u.GroupKind())
		}
		byKind[u.GroupKind()] = u
	}
	out := make([]File, 0, len(upstream)+len(lab))
	for _, l := range lab {
		if u, ok := byKind[l.GroupKind()]; ok {
			out = append(out, u)
			delete(byKind, l.GroupKind())
		} else {
			out = append(out, l)
		}
	}
	for _, u := range upstream {
		if _, ok := byKind[u.GroupKind()]; ok {
			out = append(out, u)
		}
	}
	return out, nil
}
