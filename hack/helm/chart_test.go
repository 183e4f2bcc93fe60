package charttest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// render is one way of rendering a chart that must be a release manifest: the chart, its values
// and the kustomize tree of config/ it stands for.
type render struct {
	chart, tree string
	values      map[string]any
}

var releaseRenders = []render{
	{"drover-hub", "hub", nil},
	{"drover-agent", "agent", nil},
	{"drover-agent", "agent/cert-manager", map[string]any{"fence": map[string]any{"certificate": map[string]any{"source": "cert-manager"}}}},
}

// TestTheChartsWithTheirDefaultsRenderTheReleaseManifests renders each chart as `helm template
// --include-crds` does and compares it, object by object, with the release manifest `make
// release-manifests` writes for the chart's appVersion (IMG=drover:<appVersion>): the same
// objects, each the same. The agent's chart with fence.certificate.source=cert-manager is
// config/agent/cert-manager.
func TestTheChartsWithTheirDefaultsRenderTheReleaseManifests(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range releaseRenders {
		t.Run(r.chart+" as config/"+r.tree, func(t *testing.T) {
			c, err := Load(ChartDir(root, r.chart))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(t.Context(), c, r.values)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ReleaseManifest(t.Context(), root, r.tree, "drover:"+c.AppVersion())
			if err != nil {
				t.Fatal(err)
			}
			compareObjects(t, got, want)
			t.Logf("%s renders the %d objects of config/%s", r.chart, len(want), r.tree)
		})
	}
}

// compareObjects fails the test for each object of want that got lacks or has otherwise, and
// for each object of got that want lacks.
func compareObjects(t *testing.T, got, want []*unstructured.Unstructured) {
	t.Helper()
	g, w := ByKey(got), ByKey(want)
	for k, o := range w {
		if g[k] == nil {
			t.Errorf("the chart lacks %s", k)
			continue
		}
		if d := cmp.Diff(o.Object, g[k].Object); d != "" {
			t.Errorf("%s differs (-release manifest +chart):\n%s", k, d)
		}
	}
	for k := range g {
		if w[k] == nil {
			t.Errorf("the chart renders %s, which the release manifest lacks", k)
		}
	}
	if len(got) != len(g) {
		t.Errorf("the chart renders %d objects, %d of them distinct", len(got), len(g))
	}
}

// allValues changes every value of the charts from its default.
func allValues(agent bool) map[string]any {
	v := map[string]any{}
	must(yaml.Unmarshal([]byte(`
image: {repository: registry.example.com/drover, tag: v9.9.9, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", pullPolicy: Always}
imagePullSecrets: [{name: pull}]
replicas: 3
strategy: {type: Recreate}
resources: {requests: {cpu: 100m, memory: 128Mi}, limits: null}
nodeSelector: {node-role.kubernetes.io/control-plane: ""}
tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]}]}}}
priorityClassName: system-cluster-critical
adminNamespaces: [platform-dr, dr-ops]
systemNamespaces: [vault]
extraArgs: [--zap-log-level=debug]
commonLabels: {team: platform}
commonAnnotations: {owner: platform@example.com}
podLabels: {tier: control}
podAnnotations: {scrape: "no"}
namespace: {create: false}
metrics:
  service: {enabled: true}
  readerRole: {create: false}
  serviceMonitor: {enabled: true, labels: {release: kube-prometheus}, interval: 30s}
  prometheusRule: {enabled: true, namespace: monitoring, labels: {release: kube-prometheus}}
`), &v))
	if agent {
		v["podDisruptionBudget"] = map[string]any{"enabled": false}
		v["fence"] = map[string]any{"certificate": map[string]any{"source": "cert-manager"}}
		v["restoreFloor"] = map[string]any{
			"quota":          map[string]any{"pods": "50", "requests.cpu": "16"},
			"defaultRequest": map[string]any{"cpu": "10m", "memory": "32Mi"},
		}
	}
	return v
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// TestTheChartsLintStrictly runs `helm lint --strict` on each chart, with its defaults and with
// every value changed.
func TestTheChartsLintStrictly(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"drover-hub", "drover-agent"} {
		for _, vals := range []map[string]any{nil, allValues(name == "drover-agent")} {
			l := action.NewLint()
			l.Strict = true
			l.Namespace = Namespace
			kv, err := common.ParseKubeVersion(KubeVersion)
			if err != nil {
				t.Fatal(err)
			}
			l.KubeVersion = kv
			res := l.Run([]string{ChartDir(root, name)}, vals)
			for _, m := range res.Messages {
				t.Logf("%s: %s", name, m)
			}
			if len(res.Errors) > 0 || res.TotalChartsLinted != 1 {
				t.Errorf("helm lint --strict %s (values changed: %t): %d charts linted, errors %v", name, vals != nil, res.TotalChartsLinted, res.Errors)
			}
		}
	}
}

// TestEveryValueChangesWhatItSays renders each chart with every value changed and checks where
// each lands.
func TestEveryValueChangesWhatItSays(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"drover-hub", "drover-agent"} {
		t.Run(name, func(t *testing.T) {
			c, err := Load(ChartDir(root, name))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Render(t.Context(), c, allValues(name == "drover-agent"))
			if err != nil {
				t.Fatal(err)
			}
			byKey := ByKey(objs)
			checkDeployment(t, byKey["apps/Deployment/drover-system/"+name])
			checkMetadata(t, objs)
			checkToggles(t, name, byKey)
		})
	}
}

func checkDeployment(t *testing.T, d *unstructured.Unstructured) {
	t.Helper()
	if d == nil {
		t.Fatal("no Deployment rendered")
	}
	want := map[string]any{}
	must(yaml.Unmarshal([]byte(`
replicas: 3
strategy: {type: Recreate}
template:
  metadata:
    annotations: {scrape: "no"}
  spec:
    imagePullSecrets: [{name: pull}]
    nodeSelector: {node-role.kubernetes.io/control-plane: ""}
    tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]}]}}}
    priorityClassName: system-cluster-critical
`), &want))
	spec, _, _ := unstructured.NestedMap(d.Object, "spec")
	for _, f := range []string{"replicas", "strategy"} {
		if d := cmp.Diff(want[f], spec[f]); d != "" {
			t.Errorf("spec.%s (-want +got):\n%s", f, d)
		}
	}
	wantPod, _, _ := unstructured.NestedMap(want, "template", "spec")
	pod, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	for f, v := range wantPod {
		if d := cmp.Diff(v, pod[f]); d != "" {
			t.Errorf("the pod's %s (-want +got):\n%s", f, d)
		}
	}
	podMeta, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "metadata")
	labels, _ := podMeta["labels"].(map[string]any)
	if labels["tier"] != "control" || labels["team"] != "platform" || labels["app.kubernetes.io/name"] != d.GetName() {
		t.Errorf("the pod's labels %v lack podLabels, commonLabels or its own", labels)
	}
	if d := cmp.Diff(map[string]any{"scrape": "no"}, podMeta["annotations"]); d != "" {
		t.Errorf("the pod's annotations (-want +got):\n%s", d)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	if got, want := c["image"], "registry.example.com/drover:v9.9.9@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"; got != want {
		t.Errorf("image %v, want %s (the tag and the digest, as kustomize writes them)", got, want)
	}
	if c["imagePullPolicy"] != "Always" {
		t.Errorf("imagePullPolicy %v, want Always", c["imagePullPolicy"])
	}
	if d := cmp.Diff(map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}, c["resources"]); d != "" {
		t.Errorf("resources (-want +got):\n%s", d)
	}
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	wantArgs := []string{"--admin-namespaces=platform-dr,dr-ops", "--system-namespaces=vault", "--zap-log-level=debug"}
	if d.GetName() == "drover-agent" {
		wantArgs = append([]string{"--restore-quota=pods=50,requests.cpu=16", "--restore-default-request=cpu=10m,memory=32Mi"}, wantArgs...)
	}
	if !slices.Equal(args[len(args)-len(wantArgs):], wantArgs) {
		t.Errorf("args %q, want them to end with %q", args, wantArgs)
	}
}

// checkMetadata checks that every object carries commonLabels and commonAnnotations.
func checkMetadata(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			continue // crds/ is installed as it is
		}
		if o.GetLabels()["team"] != "platform" || o.GetAnnotations()["owner"] != "platform@example.com" {
			t.Errorf("%s lacks commonLabels or commonAnnotations: labels %v, annotations %v", Key(o), o.GetLabels(), o.GetAnnotations())
		}
	}
}

// checkToggles checks the objects the values turn on and off.
func checkToggles(t *testing.T, name string, byKey map[string]*unstructured.Unstructured) {
	t.Helper()
	short := strings.TrimPrefix(name, "drover-")
	for _, gone := range []string{"Namespace/drover-system", "rbac.authorization.k8s.io/ClusterRole/drover-metrics-reader",
		"policy/PodDisruptionBudget/drover-system/drover-agent", "Secret/drover-system/drover-fence-cert"} {
		if byKey[gone] != nil {
			t.Errorf("%s is rendered, though the values turn it off", gone)
		}
	}
	sm := byKey["monitoring.coreos.com/ServiceMonitor/drover-system/"+name]
	if sm == nil {
		t.Fatalf("no ServiceMonitor rendered")
	}
	if sm.GetLabels()["release"] != "kube-prometheus" {
		t.Errorf("the ServiceMonitor's labels %v lack metrics.serviceMonitor.labels", sm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["interval"] != "30s" || endpoints[0].(map[string]any)["scheme"] != "https" {
		t.Errorf("the ServiceMonitor's endpoints %v, want one https endpoint every 30s", endpoints)
	}
	if byKey["Service/drover-system/drover-"+short+"-metrics"] == nil {
		t.Error("the metrics Service the ServiceMonitor scrapes is not rendered")
	}
	rule := byKey["monitoring.coreos.com/PrometheusRule/monitoring/drover"]
	if rule == nil {
		t.Fatalf("no PrometheusRule rendered in metrics.prometheusRule.namespace")
	}
	raw, _ := yaml.Marshal(rule.Object)
	if !strings.Contains(string(raw), "{{ $labels.namespace }}/{{ $labels.name }}") {
		t.Errorf("the PrometheusRule lost Prometheus's own templates in its annotations:\n%s", raw)
	}
	if name == "drover-agent" {
		for _, k := range []string{"cert-manager.io/Certificate/drover-system/drover-fence", "cert-manager.io/Issuer/drover-system/drover-fence-selfsigned"} {
			if byKey[k] == nil {
				t.Errorf("fence.certificate.source=cert-manager renders no %s", k)
			}
		}
	}
}

// TestTheSchemaRefusesWhatTheChartsDoNotKnow: a typo fails at install, as Helm validates the
// values against values.schema.json.
func TestTheSchemaRefusesWhatTheChartsDoNotKnow(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		chart, values, want string
	}{
		{"drover-hub", "replica: 2", "replica"},
		{"drover-hub", "image: {repository: drover, tga: v1}", "tga"},
		{"drover-hub", "extraArgs: [zap-log-level=debug]", "extraArgs"},
		{"drover-hub", "metrics: {serviceMonitor: {enable: true}}", "enable"},
		{"drover-agent", "fence: {certificate: {source: vault}}", "source"},
		{"drover-agent", "replicas: 0", "replicas"},
		{"drover-agent", "restoreFloor: {quota: {pods: 1000000}}", "pods"},
	} {
		c, err := Load(ChartDir(root, tc.chart))
		if err != nil {
			t.Fatal(err)
		}
		vals := map[string]any{}
		must(yaml.Unmarshal([]byte(tc.values), &vals))
		_, err = Render(context.Background(), c, vals)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with %s: got %v, want an error naming %s", tc.chart, tc.values, err, tc.want)
		} else {
			t.Logf("%s with %s: %s", tc.chart, tc.values, strings.Join(strings.Fields(err.Error()), " "))
		}
	}
}
