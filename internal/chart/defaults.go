package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Values are the chart's default values that stand for something the release manifests set,
// as values.yaml writes them.
type Values struct {
	Image struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
		Digest     string `json:"digest"`
	} `json:"image"`
	Replicas  *int64         `json:"replicas"`
	Resources map[string]any `json:"resources"`
}

// Metadata is what the generator reads of a chart's Chart.yaml.
type Metadata struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

// ReadChart reads the Chart.yaml and values.yaml of the chart in dir.
func ReadChart(dir string) (Metadata, Values, error) {
	var m Metadata
	var v Values
	for file, into := range map[string]any{"Chart.yaml": &m, "values.yaml": &v} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return m, v, fmt.Errorf("failed to read the chart's %s: %w", file, err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			return m, v, fmt.Errorf("failed to parse %s: %w", filepath.Join(dir, file), err)
		}
	}
	return m, v, nil
}

// checkDefaults checks that the chart's default values are the release manifests' (objs, the
// chart's first tree): its Deployment's replicas and resources, its image's name, and the
// image's tag as the chart's appVersion.
func checkDefaults(root string, s Spec, objs []*unstructured.Unstructured) error {
	dir := filepath.Join(root, "charts", s.Name)
	meta, values, err := ReadChart(dir)
	if err != nil {
		return err
	}
	if meta.Name != s.Name {
		return fmt.Errorf("%s names the chart %q, want %q", filepath.Join(dir, "Chart.yaml"), meta.Name, s.Name)
	}
	var d *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == s.Deployment {
			d = o
		}
	}
	if d == nil {
		return fmt.Errorf("config/%s has no Deployment %s", s.Trees[0].Path, s.Deployment)
	}
	raw, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas")
	replicas, ok := number(raw)
	if !ok {
		return fmt.Errorf("the Deployment %s has no number of replicas", s.Deployment)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		return fmt.Errorf("the Deployment %s has %d containers, want 1", s.Deployment, len(containers))
	}
	c, _ := containers[0].(map[string]any)
	resources, _ := c["resources"].(map[string]any)
	ref, _ := c["image"].(string)
	repo, tag, _ := strings.Cut(ref, ":")
	values.Image.Tag = strings.TrimSpace(values.Image.Tag)
	var problems []string
	if values.Replicas == nil || *values.Replicas != replicas {
		problems = append(problems, fmt.Sprintf("replicas: %d", replicas))
	}
	if !reflect.DeepEqual(normalise(values.Resources), normalise(resources)) {
		want, _ := yaml.Marshal(resources)
		problems = append(problems, "resources:\n"+string(want))
	}
	if values.Image.Repository != repo || values.Image.Tag != "" || values.Image.Digest != "" {
		problems = append(problems, fmt.Sprintf("image: {repository: %s, tag: \"\", digest: \"\"}", repo))
	}
	if meta.AppVersion != tag {
		problems = append(problems, fmt.Sprintf("appVersion: %s (in Chart.yaml: the tag the kustomizations give the image)", tag))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the chart's defaults differ from the release manifest config/%s; set in %s:\n%s",
			s.Trees[0].Path, filepath.Join(dir, "values.yaml"), strings.Join(problems, "\n"))
	}
	return nil
}

// number reads a decoded YAML number.
func number(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), float64(int64(n)) == n
	default:
		return 0, false
	}
}

// normalise makes two decoded YAML values comparable: numbers as their text.
func normalise(v any) any {
	raw, _ := yaml.Marshal(v)
	var out any
	_ = yaml.Unmarshal(raw, &out)
	return out
}
