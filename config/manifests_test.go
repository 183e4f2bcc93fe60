package config_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/drover-io/drover/internal/lab/labtest"
)

// The package's one API server, started in TestMain, and what the tests need around it.
var (
	root        string // the repository
	kubeconfig  string // an administrator's kubeconfig for kubectl
	adminConfig *rest.Config
	cl          client.Client
	drover      string // the drover binary, built from this tree
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts etcd and kube-apiserver from bin/ (envtest), builds drover and kustomize, runs the
// tests and stops the server. Missing binaries fail the package: `make tools` builds them.
func run(m *testing.M) int {
	var err error
	if root, err = labtest.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	bin := filepath.Join(root, "bin")
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %s is missing from %s: run `make tools`\n", name, bin)
			return 1
		}
	}
	if out, err := exec.Command(filepath.Join(root, "hack/build-tools.sh"), "kustomize").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: failed to build kustomize: %v\n%s", err, out)
		return 1
	}
	tmp, err := os.MkdirTemp("", "drover-manifests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if drover, err = labtest.BuildDrover(context.Background(), root, tmp); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	// The CRDs of the APIs the agent and the hub watch besides drover's, as the lab installs them.
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin, ErrorIfCRDPathMissing: true,
		CRDDirectoryPaths: []string{filepath.Join(root, "internal/lab/crds/external")},
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: failed to start the API server:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	if err == nil {
		adminConfig = admin.Config()
		cl, err = client.New(adminConfig, client.Options{Scheme: clientgoscheme.Scheme})
	}
	var raw []byte
	if err == nil {
		raw, err = admin.KubeConfig()
	}
	if err == nil {
		kubeconfig = filepath.Join(tmp, "kubeconfig")
		err = os.WriteFile(kubeconfig, raw, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: failed to make an administrator's client:", err)
		return 1
	}
	return m.Run()
}

// build runs the pinned kustomize on a tree of config/, as make release-manifests does.
func build(g Gomega, dir string) []byte {
	out, err := exec.Command(filepath.Join(root, "bin", "kustomize"), "build", filepath.Join(root, "config", dir)).Output()
	g.Expect(err).NotTo(HaveOccurred(), "kustomize build config/%s: %s", dir, stderr(err))
	return out
}

func stderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

// objects decodes a multi-document YAML stream.
func objects(g Gomega, manifests []byte) []*unstructured.Unstructured {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		g.Expect(err).NotTo(HaveOccurred())
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// kubectlApply installs manifests as the release notes say: kubectl apply --server-side -f.
func kubectlApply(t *testing.T, g Gomega, manifests []byte) {
	file := filepath.Join(t.TempDir(), "manifests.yaml")
	g.Expect(os.WriteFile(file, manifests, 0o600)).To(Succeed())
	cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), "--kubeconfig", kubeconfig, "apply", "--server-side", "-f", file)
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "kubectl apply --server-side: %s", out)
}

// resourceVersions reads every object of objs back from the API server.
func resourceVersions(ctx context.Context, g Gomega, objs []*unstructured.Unstructured) map[string]string {
	rvs := map[string]string{}
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(o), got)).To(Succeed(), "%s %s", o.GetKind(), o.GetName())
		rvs[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = got.GetResourceVersion()
	}
	return rvs
}

// deployments returns the Deployments of objs, typed.
func deployments(g Gomega, objs []*unstructured.Unstructured) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d)).To(Succeed())
		out = append(out, d)
	}
	return out
}

// podOf is the pod a Deployment's template makes, in the Deployment's namespace.
func podOf(d *appsv1.Deployment) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, GenerateName: d.Name + "-", Labels: d.Spec.Template.Labels},
		Spec:       *d.Spec.Template.Spec.DeepCopy(),
	}
}

// tree is one release manifest: the kustomize tree, what it must hold.
type tree struct {
	dir        string
	deployment string
	kinds      []string
}

var releaseTrees = []tree{
	{dir: "hub", deployment: "drover-hub", kinds: []string{"Namespace", "CustomResourceDefinition", "ServiceAccount",
		"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}},
	{dir: "agent", deployment: "drover-agent", kinds: []string{"Namespace", "CustomResourceDefinition", "ServiceAccount",
		"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service", "Secret", "ValidatingWebhookConfiguration", "PodDisruptionBudget"}},
}

func TestReleaseManifestsInstallWithServerSideApplyAndASecondApplyChangesNothing(t *testing.T) {
	for _, tr := range releaseTrees {
		t.Run(tr.dir, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			manifests := build(g, tr.dir)
			objs := objects(g, manifests)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			g.Expect(kinds).To(ContainElements(tr.kinds))

			kubectlApply(t, g, manifests)
			first := resourceVersions(ctx, g, objs)
			kubectlApply(t, g, manifests)
			g.Expect(resourceVersions(ctx, g, objs)).To(Equal(first), "the second apply changed an object")

			ns := &corev1.Namespace{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Name: "drover-system"}, ns)).To(Succeed())
			g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
		})
	}
}

func TestReleasePodsPassPodSecurityRestricted(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	// The namespace as installed (the previous test may not have run alone).
	kubectlApply(t, g, build(g, "hub"))
	for _, tr := range releaseTrees {
		ds := deployments(g, objects(g, build(g, tr.dir)))
		g.Expect(ds).To(HaveLen(1))
		g.Expect(ds[0].Name).To(Equal(tr.deployment))
		g.Expect(cl.Create(ctx, podOf(ds[0]), client.DryRunAll)).To(Succeed(), "the pod of %s", tr.deployment)

		// The check can fail: the same pod, allowed to escalate privileges, is refused.
		privileged := podOf(ds[0])
		privileged.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		err := cl.Create(ctx, privileged, client.DryRunAll)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("violates PodSecurity"))
	}
}

// TestTheAgentRunsTwoReplicasThatADrainLeavesOneOf keeps the fence answering through a node
// drain: two replicas (each serves the fence) and a PodDisruptionBudget that keeps one.
func TestTheAgentRunsTwoReplicasThatADrainLeavesOneOf(t *testing.T) {
	for _, dir := range []string{"agent", "agent/cert-manager"} {
		t.Run(dir, func(t *testing.T) {
			g := NewWithT(t)
			objs := objects(g, build(g, dir))
			ds := deployments(g, objs)
			g.Expect(ds).To(HaveLen(1))
			g.Expect(ds[0].Spec.Replicas).To(Equal(ptr.To[int32](2)))
			var pdbs []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "PodDisruptionBudget" {
					pdbs = append(pdbs, o)
				}
			}
			g.Expect(pdbs).To(HaveLen(1))
			minAvailable, _, _ := unstructured.NestedFieldNoCopy(pdbs[0].Object, "spec", "minAvailable")
			g.Expect(minAvailable).To(BeNumerically("==", 1))
			selector, _, _ := unstructured.NestedStringMap(pdbs[0].Object, "spec", "selector", "matchLabels")
			g.Expect(selector).To(Equal(ds[0].Spec.Selector.MatchLabels))
		})
	}
}

// TestReleaseArgumentsAreDroversFlags runs drover with each Deployment's arguments and --help:
// an unknown or misspelt flag fails there, long before a pod crash-loops on it.
func TestReleaseArgumentsAreDroversFlags(t *testing.T) {
	for _, dir := range []string{"hub", "agent", "agent/cert-manager"} {
		g := NewWithT(t)
		for _, d := range deployments(g, objects(g, build(g, dir))) {
			c := d.Spec.Template.Spec.Containers[0]
			g.Expect(c.Command).To(BeEmpty(), "the image's entrypoint is drover")
			out, err := exec.Command(drover, append(append([]string{}, c.Args...), "--help")...).CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), "drover %s: %s", strings.Join(c.Args, " "), out)
		}
	}
}
