package deployer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// LoadDir reads the manifests of every .yaml, .yml and .json file directly in dir, in file-name
// order, each file holding one or more documents separated by "---". Empty documents are
// skipped; a document without apiVersion, kind or metadata.name is an error naming its file.
// Subdirectories are not read.
func LoadDir(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read manifest directory %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, e := range entries {
		if e.IsDir() || !isManifestFile(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fileObjs, err := loadFile(path)
		if err != nil {
			return nil, err
		}
		objs = append(objs, fileObjs...)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("manifest directory %s holds no manifests (.yaml, .yml or .json files)", dir)
	}
	return objs, nil
}

func isManifestFile(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// loadFile decodes every non-empty document of one file.
func loadFile(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to open manifest file %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var objs []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("failed to decode document %d of %s: %w", doc, path, err)
		}
		if len(raw) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: raw}
		if err := validateManifest(u); err != nil {
			return nil, fmt.Errorf("document %d of %s: %w", doc, path, err)
		}
		objs = append(objs, u)
	}
}

// validateManifest checks what applying and deleting a manifest needs.
func validateManifest(u *unstructured.Unstructured) error {
	switch {
	case u.GetAPIVersion() == "":
		return errors.New("the manifest has no apiVersion")
	case u.GetKind() == "":
		return errors.New("the manifest has no kind")
	case u.GetName() == "":
		return fmt.Errorf("the %s manifest has no metadata.name", u.GetKind())
	}
	return nil
}
