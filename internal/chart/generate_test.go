package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-io/drover/internal/modroot"
)

// kustomize builds the pinned kustomize (a no-op when bin/ holds it) and returns its path.
func kustomize(t *testing.T, root string) string {
	t.Helper()
	if out, err := exec.CommandContext(t.Context(), filepath.Join(root, "hack", "build-tools.sh"), "kustomize").CombinedOutput(); err != nil {
		t.Fatalf("hack/build-tools.sh kustomize: %v\n%s", err, out)
	}
	return filepath.Join(root, "bin", "kustomize")
}

// TestTheCommittedChartsAreWhatConfigGenerates keeps the charts and the release manifests one
// source: the generated templates and CRDs of charts/ must be what `make charts` writes from
// config/ now.
func TestTheCommittedChartsAreWhatConfigGenerates(t *testing.T) {
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(t.Context(), Options{Root: root, Kustomize: kustomize(t, root)})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := Stale(root, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Fatalf("charts/ differs from what config/ generates in %d files; run make charts and commit them:\n%s",
			len(stale), strings.Join(stale, "\n"))
	}
	t.Logf("%d generated files of charts/ are current", len(files))
}

// TestAChartWhoseDefaultsDifferFromTheReleaseManifestsIsRefused: values.yaml's replicas and
// resources stand for the Deployment's, which config/ may change.
func TestAChartWhoseDefaultsDifferFromTheReleaseManifestsIsRefused(t *testing.T) {
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "charts"), os.DirFS(filepath.Join(root, "charts"))); err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(dir, "charts", "drover-hub", "values.yaml")
	raw, err := os.ReadFile(values)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(raw), "\nreplicas: 1\n", "\nreplicas: 2\n", 1)
	changed = strings.Replace(changed, "memory: 512Mi", "memory: 1Gi", 1)
	if changed == string(raw) {
		t.Fatal("values.yaml of drover-hub holds no `replicas: 1` to change")
	}
	if err := os.WriteFile(values, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &unstructured.Unstructured{Object: map[string]any{"kind": "Deployment", "metadata": map[string]any{"name": "drover-hub"},
		"spec": map[string]any{"replicas": float64(1), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"image": "drover:dev", "resources": map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
				"limits": map[string]any{"cpu": "1", "memory": "512Mi"}}},
		}}}}}}
	err = checkDefaults(dir, Specs()[0], []*unstructured.Unstructured{d})
	if err == nil || !strings.Contains(err.Error(), "replicas: 1") || !strings.Contains(err.Error(), "memory: 512Mi") {
		t.Fatalf("checkDefaults = %v, want an error naming replicas: 1 and the manifests' resources", err)
	}
	t.Log(err)
}

func TestTheHooksSpliceTemplateTextAtTheSentinelsIndentation(t *testing.T) {
	h := &hooks{}
	replicas := h.add(scalar("{{ .Values.replicas }}"))
	args := h.add(argItems)
	labels := h.add(newMap("labels", ".Values.commonLabels"))
	// As sigs.k8s.io/yaml writes a map holding the three sentinels: a value, a list item, a key.
	yamlText := "spec:\n  " + labels + ": \"\"\n  args:\n  - run\n  - " + args + "\n  replicas: " + replicas + "\n"
	got, err := h.splice(yamlText)
	if err != nil {
		t.Fatal(err)
	}
	want := `spec:
  {{- with .Values.commonLabels }}
  labels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  args:
  - run
  {{- with .Values.adminNamespaces }}
  - --admin-namespaces={{ join "," . }}
  {{- end }}
  {{- with .Values.systemNamespaces }}
  - --system-namespaces={{ join "," . }}
  {{- end }}
  {{- range .Values.extraArgs }}
  - {{ . | quote }}
  {{- end }}
  replicas: {{ .Values.replicas }}
`
	if got != want {
		t.Errorf("spliced:\n%s\nwant:\n%s", got, want)
	}
}

func TestAHookThatCannotKeepItsLineIsRefused(t *testing.T) {
	for name, text := range map[string]string{
		"the first field of a list item": "containers:\n- image: HELMHOOK0X\n",
		"a sentinel inside other text":   "image: drover-HELMHOOK0X\n",
		"a sentinel the YAML lost":       "image: drover\n",
	} {
		h := &hooks{}
		h.add(scalar("x"))
		if _, err := h.splice(text); err == nil {
			t.Errorf("%s: splice succeeded, want an error", name)
		}
	}
}

func TestPrometheusTemplatesPrintThemselvesThroughHelm(t *testing.T) {
	got := escapeActions(`summary: "{{ $labels.namespace }} lags"`)
	if want := `summary: "{{ "{{" }} $labels.namespace }} lags"`; got != want {
		t.Errorf("escapeActions = %s, want %s", got, want)
	}
}
