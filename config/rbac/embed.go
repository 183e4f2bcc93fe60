// Package rbac embeds the hand-written RBAC of config/rbac that drover's tools apply themselves:
// the role the hub's credential needs on a managed cluster. The lab applies it on east and west
// so that the hub it runs reaches them as the user drover-hub, exactly as an installation would.
package rbac

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"sigs.k8s.io/yaml"
)

// HubOnManagedClusterDir is the kustomization of what the hub may do on a managed cluster.
const HubOnManagedClusterDir = "hub-on-managed-cluster"

// HubOnManagedCluster holds hub-on-managed-cluster/: kustomization.yaml and the resources it
// lists.
//
//go:embed hub-on-managed-cluster/*.yaml
var HubOnManagedCluster embed.FS

// kustomization is the part of a kustomization.yaml that Manifests follows.
type kustomization struct {
	Resources []string `json:"resources"`
}

// Manifests returns the YAML documents of the resources that the kustomization in dir of fsys
// lists, in its order. The kustomizations here only list resources (no patches or generators),
// so the result is what `kubectl apply -k` applies.
func Manifests(fsys fs.FS, dir string) ([][]byte, error) {
	raw, err := fs.ReadFile(fsys, path.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, fmt.Errorf("failed to read the kustomization of %s: %w", dir, err)
	}
	var k kustomization
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return nil, fmt.Errorf("failed to decode the kustomization of %s: %w", dir, err)
	}
	if len(k.Resources) == 0 {
		return nil, fmt.Errorf("the kustomization of %s lists no resources", dir)
	}
	out := make([][]byte, 0, len(k.Resources))
	for _, r := range k.Resources {
		doc, err := fs.ReadFile(fsys, path.Join(dir, r))
		if err != nil {
			return nil, fmt.Errorf("failed to read %s of the kustomization %s: %w", r, dir, err)
		}
		out = append(out, doc)
	}
	return out, nil
}
