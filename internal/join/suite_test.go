package join_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/objectstore"
)

// testLab is the package's lab: a hub and the managed clusters east and west, each with
// kube-controller-manager (which publishes the cluster's CA) and drover's CRDs,
// without drover's processes and without the lab's own DRClusters.
var testLab *labtest.Lab

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // the tests' clients have nothing to say
	labtest.Main(m, func(l *labtest.Lab) { testLab = l })
}

// labCluster is how join reaches a lab cluster: its administrator kubeconfig.
func labCluster(t *testing.T, name string) join.Cluster {
	t.Helper()
	c, err := testLab.Cluster(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	return join.Cluster{Config: cfg, Source: "the lab's administrator kubeconfig of " + name}
}

func adminClient(t *testing.T, name string) client.Client {
	t.Helper()
	cl, err := testLab.Client(name, v1alpha1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// profileName is the tests' S3 profile of a cluster; not the lab's own s3-<cluster>, whose
// Secrets the lab keeps on every cluster.
func profileName(cluster string) string { return "store-" + cluster }

// operatorKubeconfigs are the lab's administrator kubeconfigs of the managed clusters, by
// name: what an operator gives `--peer-kubeconfig` and `--cluster-kubeconfig`.
func operatorKubeconfigs(t *testing.T, names ...string) map[string]join.Cluster {
	out := map[string]join.Cluster{}
	for _, n := range names {
		out[n] = labCluster(t, n)
	}
	return out
}

// joinOptions joins the lab cluster managed as name, reporting into out, with the operator's
// kubeconfigs of the lab's other managed clusters for those joined before.
func joinOptions(t *testing.T, name, managed string, out *bytes.Buffer) join.Options {
	peers := operatorKubeconfigs(t, lab.East, lab.West)
	delete(peers, managed)
	return join.Options{
		Name: name, Hub: labCluster(t, lab.Hub), Managed: labCluster(t, managed), Peers: peers,
		S3: objectstore.Profile{
			Name: profileName(name), Endpoint: "http://127.0.0.1:9000", Insecure: true, Bucket: "drover-" + name, Region: "lab-1",
			AccessKeyID: "AKID-" + name, SecretAccessKey: "not-a-real-secret-" + name,
		},
		Out: out,
	}
}

// mustJoin joins and registers an unjoin with the test's cleanup.
func mustJoin(t *testing.T, o join.Options) string {
	t.Helper()
	if err := join.Join(t.Context(), o); err != nil {
		t.Fatalf("join %s failed: %v\n%s", o.Name, err, o.Out)
	}
	t.Cleanup(func() { unjoinAll(t, o.Name, o.Managed) })
	return o.Out.(*bytes.Buffer).String()
}

func unjoinAll(t *testing.T, name string, managed join.Cluster) {
	var out bytes.Buffer
	err := join.Unjoin(context.Background(), join.UnjoinOptions{
		Name: name, Hub: labCluster(t, lab.Hub), Managed: managed, Force: true, Out: &out,
	})
	if err != nil {
		t.Errorf("cleanup: unjoin %s failed: %v\n%s", name, err, out.String())
	}
}

var labelledKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Group: rbacv1.GroupName, Version: "v1", Kind: "ClusterRole"},
	{Group: rbacv1.GroupName, Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: rbacv1.GroupName, Version: "v1", Kind: "Role"},
	{Group: rbacv1.GroupName, Version: "v1", Kind: "RoleBinding"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"},
	v1alpha1.GroupVersion.WithKind("DRCluster"),
}

// labelled returns "Kind namespace/name" => resourceVersion of every object join labelled for
// name on the cluster.
func labelled(t *testing.T, cluster, name string) map[string]string {
	t.Helper()
	cl := adminClient(t, cluster)
	out := map[string]string{}
	for _, gvk := range labelledKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := cl.List(t.Context(), list, client.MatchingLabels{join.LabelCluster: name}); err != nil {
			t.Fatalf("failed to list %ss on %s: %v", gvk.Kind, cluster, err)
		}
		for _, o := range list.Items {
			out[gvk.Kind+" "+o.GetNamespace()+"/"+o.GetName()] = version(&o)
		}
	}
	return out
}

// version says which version of obj a test saw. An object with a generation (a
// ValidatingAdmissionPolicy) has a status its controller writes at any time, which moves its
// resourceVersion although nobody changed it: its generation, labels and annotations say more.
func version(obj *unstructured.Unstructured) string {
	if obj.GetGeneration() == 0 {
		return obj.GetResourceVersion()
	}
	return fmt.Sprintf("generation %d, labels %v, annotations %v", obj.GetGeneration(), obj.GetLabels(), obj.GetAnnotations())
}

func mustContain(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}

func getSecret(t *testing.T, cluster, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := adminClient(t, cluster).Get(t.Context(), client.ObjectKey{Namespace: join.DefaultNamespace, Name: name}, s); err != nil {
		t.Fatalf("failed to get Secret %s on %s: %v", name, cluster, err)
	}
	return s
}

// hubToken returns the token of the hub's kubeconfig Secret for cluster, and its claims.
func hubToken(t *testing.T, cluster string) (string, gateway.TokenClaims) {
	t.Helper()
	kc, err := clientcmd.Load(getSecret(t, lab.Hub, join.KubeconfigSecretName(cluster)).Data[v1alpha1.KubeconfigSecretKey])
	if err != nil {
		t.Fatalf("the hub's kubeconfig Secret for %s holds no kubeconfig: %v", cluster, err)
	}
	auth := kc.AuthInfos[join.ServiceAccountName]
	if auth == nil || auth.Token == "" {
		t.Fatalf("the hub's kubeconfig for %s holds no token of user %s", cluster, join.ServiceAccountName)
	}
	claims, ok := gateway.ParseToken(auth.Token)
	if !ok {
		t.Fatalf("the hub's token for %s is not an expiring ServiceAccount token (no exp claim)", cluster)
	}
	return auth.Token, claims
}

// tokenClient returns a client of a lab cluster that authenticates with token alone.
func tokenClient(t *testing.T, cluster, token string) client.Client {
	t.Helper()
	c, err := testLab.Cluster(cluster)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg = rest.AnonymousClientConfig(cfg)
	cfg.BearerToken = token
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	cl, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: testMapper()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// testMapper maps the kinds tokenClient reaches, so that building the client makes no request
// with a token that may be refused.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(v1alpha1.GroupVersion.WithKind("VolumeReplicationGroupList"), meta.RESTScopeNamespace)
	m.Add(v1alpha1.GroupVersion.WithKind("VolumeReplicationGroup"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("ServiceAccount"), meta.RESTScopeNamespace)
	return m
}
