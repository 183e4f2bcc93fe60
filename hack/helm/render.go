package charttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/drover-io/drover/internal/modroot"
)

// Namespace is the namespace drover's charts install into, whatever the release's namespace:
// drover-system, as the release manifests (drover's identities and policies name it).
const Namespace = "drover-system"

// KubeVersion is the Kubernetes version a chart is rendered for without a cluster: the lab's
// (bin/kube-apiserver). Helm's SDK otherwise assumes 1.20, which the charts' kubeVersion refuses.
const KubeVersion = "v1.37.2"

// Root returns drover's repository.
func Root() (string, error) { return modroot.Find() }

// ChartDir is the directory of one of drover's charts, drover-hub or drover-agent.
func ChartDir(root, name string) string { return filepath.Join(root, "charts", name) }

// Load loads a chart from its directory or a packaged .tgz with Helm's loader.
func Load(path string) (*chart.Chart, error) {
	c, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("failed to load the chart %s: %w", path, err)
	}
	return c, nil
}

// quietConfiguration is an action configuration whose log goes nowhere.
func quietConfiguration() *action.Configuration {
	return action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
}

// Render renders c with vals as `helm template --include-crds -n drover-system` does, without a
// cluster, and returns its objects: the CRDs, then the templates' objects.
func Render(ctx context.Context, c *chart.Chart, vals map[string]any) ([]*unstructured.Unstructured, error) {
	inst := action.NewInstall(quietConfiguration())
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName = c.Name()
	inst.Namespace = Namespace
	inst.Replace = true
	inst.IncludeCRDs = true
	kv, err := common.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	inst.KubeVersion = kv
	rel, err := inst.RunWithContext(ctx, c, vals)
	if err != nil {
		return nil, fmt.Errorf("failed to render the chart %s: %w", c.Name(), err)
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("rendering the chart %s returned a %T", c.Name(), rel)
	}
	return Decode([]byte(r.Manifest))
}

// Decode reads the objects of a multi-document YAML stream in order.
func Decode(raw []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("failed to decode the objects: %w", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// ReleaseManifest builds the release manifest of a kustomize tree of config/ (hub, agent,
// agent/cert-manager) naming image img, as `make release-manifests IMG=img` does: on a copy
// of config/, `kustomize edit set image drover=img`, then `kustomize build`.
func ReleaseManifest(ctx context.Context, root, tree, img string) ([]*unstructured.Unstructured, error) {
	kustomize := filepath.Join(root, "bin", "kustomize")
	tmp, err := os.MkdirTemp("", "drover-release-manifest-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := os.CopyFS(filepath.Join(tmp, "config"), os.DirFS(filepath.Join(root, "config"))); err != nil {
		return nil, fmt.Errorf("failed to copy config/: %w", err)
	}
	dir := filepath.Join(tmp, "config", filepath.FromSlash(tree))
	edit := exec.CommandContext(ctx, kustomize, "edit", "set", "image", "drover="+img)
	edit.Dir = dir
	if out, err := edit.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kustomize edit set image in config/%s: %w\n%s", tree, err, out)
	}
	var stderr bytes.Buffer
	build := exec.CommandContext(ctx, kustomize, "build", dir)
	build.Stderr = &stderr
	out, err := build.Output()
	if err != nil {
		return nil, fmt.Errorf("kustomize build config/%s (hack/build-tools.sh kustomize builds bin/kustomize): %w\n%s", tree, err, stderr.String())
	}
	return Decode(out)
}

// Key identifies an object: group, kind, namespace and name.
func Key(o *unstructured.Unstructured) string {
	return strings.Trim(o.GroupVersionKind().Group+"/"+o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName(), "/")
}

// ByKey indexes objects by Key.
func ByKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[Key(o)] = o
	}
	return m
}
