package release

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// The krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2 Plugin), the fields
// krew's index documents (https://krew.sigs.k8s.io/docs/developer-guide/plugin-manifest/).
// The binary is installed as kubectl-drover, the name under which drover's help says
// `kubectl drover`.
type krewPlugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   krewMetadata   `json:"metadata"`
	Spec       krewPluginSpec `json:"spec"`
}

type krewMetadata struct {
	Name string `json:"name"`
}

type krewPluginSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector krewSelector `json:"selector"`
	URI      string       `json:"uri"`
	SHA256   string       `json:"sha256"`
	Files    []krewFile   `json:"files"`
	Bin      string       `json:"bin"`
}

type krewSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

const krewManifestName = "drover.yaml"

func writeKrewManifest(opts Options, archives []archive) error {
	p := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   krewMetadata{Name: "drover"},
		Spec: krewPluginSpec{
			Version:          opts.Version,
			Homepage:         "https://github.com/drover-io/drover",
			ShortDescription: "Fail over and relocate stateful applications between clusters",
			Description: "drover protects stateful applications across two clusters: it replicates their " +
				"volumes and objects, and fails them over or relocates them on request. The plugin is " +
				"drover's CLI: status, plan, failover, relocate, cluster join.",
		},
	}
	for _, a := range archives {
		bin := "kubectl-drover"
		if a.platform.OS == "windows" {
			bin += ".exe"
		}
		p.Spec.Platforms = append(p.Spec.Platforms, krewPlatform{
			Selector: krewSelector{MatchLabels: map[string]string{"os": a.platform.OS, "arch": a.platform.Arch}},
			URI:      opts.URLBase + a.name,
			SHA256:   a.sha256,
			Files:    []krewFile{{From: a.binary, To: bin}, {From: "LICENSE", To: "."}},
			Bin:      bin,
		})
	}
	b, err := yaml.Marshal(p)
	if err != nil {
		return fmt.Errorf("failed to encode the krew manifest: %w", err)
	}
	return os.WriteFile(filepath.Join(opts.Out, krewManifestName), b, 0o644) //nolint:gosec // published with the archives
}
