package config

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Tree holds the kustomize trees of the release manifests as this binary was built with them:
// crd, rbac, hub and agent (with its cert-manager overlay), and the alert rules (prometheus).
// The lab builds the manifests it installs from it, so a drover binary installs its own
// manifests wherever it runs.
//
//go:embed crd rbac hub agent prometheus
var Tree embed.FS

// Kustomizations are the trees of Tree that `make release-manifests` builds.
const (
	HubKustomization   = "hub"
	AgentKustomization = "agent"
)

// WriteTree writes Tree under dir (created when missing), replacing the files it holds, for a
// kustomize that reads a directory.
func WriteTree(dir string) error {
	err := fs.WalkDir(Tree, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o750)
		}
		raw, err := Tree.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, raw, 0o600)
	})
	if err != nil {
		return fmt.Errorf("failed to write drover's release manifests under %s: %w", dir, err)
	}
	return nil
}
