package argocd

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-io/drover/internal/lab/process"
)

func TestTheDemoAppIsTheDeployersDemoApp(t *testing.T) {
	g := NewWithT(t)
	entries, err := os.ReadDir("../deployer/testdata/app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).NotTo(BeEmpty())
	for _, e := range entries {
		want, err := os.ReadFile(filepath.Join("../deployer/testdata/app", e.Name()))
		g.Expect(err).NotTo(HaveOccurred())
		got, err := appManifests.ReadFile("app/" + e.Name())
		g.Expect(err).NotTo(HaveOccurred(), "app/%s is missing: copy internal/lab/deployer/testdata/app/*.yaml here", e.Name())
		g.Expect(string(got)).To(Equal(string(want)), "app/%s differs from the deployer's copy", e.Name())
	}
	embedded, err := appManifests.ReadDir("app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(embedded).To(HaveLen(len(entries)))
}

func TestTheRepositoryHoldsTheDemoAppOnMain(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	ctx := context.Background()
	g.Expect(ensureRepo(ctx, dir)).To(Succeed())
	g.Expect(ensureRepo(ctx, dir)).To(Succeed(), "a second call keeps the repository")
	g.Expect(RepoURL(dir)).To(HavePrefix("file://" + dir))

	bare, _ := repoDirs(dir)
	out, err := exec.CommandContext(ctx, "git", "--git-dir", bare, "ls-tree", "-r", "--name-only", "main").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Fields(string(out))).To(ConsistOf(AppPath+"/service.yaml", AppPath+"/statefulset.yaml"))
	out, err = exec.CommandContext(ctx, "git", "--git-dir", bare, "rev-list", "--count", "main").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(out))).To(Equal("1"))
}

func TestAClusterSecretIsWhatArgoCDReads(t *testing.T) {
	g := NewWithT(t)
	s, err := clusterSecret("east", ClusterAccess{Server: "https://127.0.0.1:1234", CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Name).To(Equal("east"))
	g.Expect(s.Namespace).To(Equal(Namespace))
	g.Expect(s.Labels).To(HaveKeyWithValue("argocd.argoproj.io/secret-type", "cluster"))
	g.Expect(string(s.Data["name"])).To(Equal("east"), "the generator matches a decision's clusterName against name")
	g.Expect(string(s.Data["server"])).To(Equal("https://127.0.0.1:1234"))
	cfg := map[string]any{}
	g.Expect(json.Unmarshal(s.Data["config"], &cfg)).To(Succeed())
	// Argo CD's ClusterConfig: []byte fields, so base64 in JSON.
	g.Expect(cfg).To(HaveKeyWithValue("tlsClientConfig", map[string]any{
		"insecure": false, "caData": "Y2E=", "certData": "Y2VydA==", "keyData": "a2V5",
	}))
	g.Expect(cfg).NotTo(HaveKey("bearerToken"))
}

func TestTheGeneratorConfigMapReadsOCMPlacementDecisions(t *testing.T) {
	g := NewWithT(t)
	objs, err := baseObjects()
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]any{}
	for _, o := range objs {
		byName[o.GetName()] = o
	}
	g.Expect(byName).To(HaveKey(DecisionConfigMap))
	cm := byName[DecisionConfigMap].(*corev1.ConfigMap)
	g.Expect(cm.Namespace).To(Equal(Namespace))
	g.Expect(cm.Data).To(Equal(map[string]string{
		"apiVersion": "cluster.open-cluster-management.io/v1beta1", "kind": "placementdecisions",
		"statusListKey": "decisions", "matchKey": "clusterName",
	}))
	g.Expect(byName["argocd-cm"].(*corev1.ConfigMap).Data).To(HaveKeyWithValue("cluster.inClusterEnabled", "false"))
	g.Expect(byName["argocd-secret"].(*corev1.Secret).Data["server.secretkey"]).To(HaveLen(64))
	g.Expect(byName).To(HaveKey(Project))
	g.Expect(byName).To(HaveKey(Namespace))
}

func TestTheApplicationSetMakesAnApplicationPerDecidedCluster(t *testing.T) {
	g := NewWithT(t)
	u := ApplicationSet(AppSetOptions{Name: "db", Placement: "db-placement", AppNamespace: "demo", RepoURL: "file:///repo.git", Path: AppPath})
	g.Expect(u.GroupVersionKind()).To(Equal(ApplicationSetGVK))
	g.Expect(u.GetNamespace()).To(Equal(Namespace))
	gens, _, _ := unstructured.NestedSlice(u.Object, "spec", "generators")
	g.Expect(gens).To(HaveLen(1))
	cdr := gens[0].(map[string]any)["clusterDecisionResource"].(map[string]any)
	g.Expect(cdr["configMapRef"]).To(Equal(DecisionConfigMap))
	g.Expect(cdr["labelSelector"]).To(Equal(map[string]any{"matchLabels": map[string]any{PlacementLabel: "db-placement"}}))

	name, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "name")
	g.Expect(strings.ReplaceAll(name, "{{name}}", "east")).To(Equal(ApplicationName("db", "east")))
	finalizers, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "template", "metadata", "finalizers")
	g.Expect(finalizers).To(ConsistOf("resources-finalizer.argocd.argoproj.io"))
	dest, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "spec", "destination")
	g.Expect(dest).To(Equal(map[string]string{"name": "{{name}}", "namespace": "demo"}))
	src, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "spec", "source")
	g.Expect(src).To(Equal(map[string]string{"repoURL": "file:///repo.git", "targetRevision": "HEAD", "path": AppPath}))
	auto, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec", "syncPolicy", "automated")
	g.Expect(auto).To(HaveKeyWithValue("prune", true))
	opts, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "template", "spec", "syncPolicy", "syncOptions")
	g.Expect(opts).To(ContainElement("CreateNamespace=true"))
}

func TestPortsAreReservedForTheInstanceAndReleased(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	i := &Instance{dir: dir}
	g.Expect(i.preparePorts(Ports{Redis: 20001}, false)).To(Succeed())
	g.Expect(i.ports.Redis).To(Equal(20001), "a given port is kept")
	seen := map[int]bool{}
	for _, p := range i.ports.all() {
		g.Expect(*p).NotTo(BeZero())
		g.Expect(seen).NotTo(HaveKey(*p), "ports are distinct")
		seen[*p] = true
	}
	owned := func() int {
		n := 0
		entries, _ := os.ReadDir(process.PortReservations())
		for _, e := range entries {
			if raw, err := os.ReadFile(filepath.Join(process.PortReservations(), e.Name())); err == nil && string(raw) == dir {
				n++
			}
		}
		return n
	}
	g.Expect(owned()).To(Equal(6), "every picked port is reserved under the instance's directory")
	opened, err := Open(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opened.Ports()).To(Equal(i.ports), "Open reads the recorded ports")

	again := &Instance{dir: dir}
	g.Expect(again.preparePorts(Ports{}, true)).To(Succeed())
	g.Expect(again.ports).To(Equal(i.ports), "while a component runs, the recorded ports are kept")

	process.ReleasePorts(dir)
	g.Expect(owned()).To(BeZero())
	_, err = Open(t.TempDir())
	g.Expect(err).To(MatchError(ContainSubstring("no Argo CD was started")))
}

func TestStatusPrintsEveryComponentAndTheLogOfAStoppedOne(t *testing.T) {
	g := NewWithT(t)
	var out strings.Builder
	g.Expect(PrintStatus(&out, Status{Dir: "/lab/argocd", RepoURL: "file:///lab/argocd/git/apps.git", Components: []ComponentStatus{
		{Name: ComponentRedis, PID: 10, Running: true, RSSKiB: 11 * 1024},
		{Name: ComponentRepoServer},
	}})).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`redis-server\s+running\s+10\s+11 MiB`))
	g.Expect(out.String()).To(ContainSubstring("argocd-repo-server  not running (log: /lab/argocd/logs/argocd-repo-server.log)"))
	g.Expect(out.String()).To(ContainSubstring("Argo CD reads file:///lab/argocd/git/apps.git"))
}
