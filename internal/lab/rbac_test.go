package lab_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// kubectl runs the lab's kubectl with the administrator kubeconfig of a cluster.
func kubectl(g Gomega, cluster string, args ...string) string {
	root, err := labtest.RepoRoot()
	g.Expect(err).NotTo(HaveOccurred())
	c, err := testLab.Cluster(cluster)
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(filepath.Join(root, "bin", "kubectl"), append([]string{"--kubeconfig", c.KubeconfigPath()}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}

// userClient returns a client of a lab cluster that authenticates as user, with no groups.
func userClient(g Gomega, cluster, user string) client.Client {
	c, err := testLab.Cluster(cluster)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := c.Kubeconfig(user, nil)
	g.Expect(err).NotTo(HaveOccurred())
	return kubeconfigClient(g, raw)
}

// joinedHubClient returns a client of a managed cluster with the hub's credential there: the
// kubeconfig that joining the cluster stored in its Secret on the hub.
func joinedHubClient(g Gomega, cluster string) client.Client {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(cluster)}
	g.Expect(hubClient(g).Get(context.Background(), key, secret)).To(Succeed())
	return kubeconfigClient(g, secret.Data[v1alpha1.KubeconfigSecretKey])
}

func kubeconfigClient(g Gomega, raw []byte) client.Client {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Timeout = 5 * time.Second
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

func TestRBACKustomizationsBuild(t *testing.T) {
	for dir, want := range map[string][]string{
		"config/rbac/agent":                  {"kind: ClusterRole\n", "kind: ClusterRoleBinding\n", "kind: ServiceAccount\n", "name: drover-agent\n"},
		"config/rbac/hub":                    {"kind: ClusterRole\n", "kind: ClusterRoleBinding\n", "kind: ServiceAccount\n", "name: drover-hub\n"},
		"config/rbac/hub-on-managed-cluster": {"kind: ClusterRole\n", "kind: ClusterRoleBinding\n", "name: drover-hub-on-managed-cluster\n"},
	} {
		t.Run(dir, func(t *testing.T) {
			g := NewWithT(t)
			out := kubectl(g, lab.East, "kustomize", dir)
			for _, w := range want {
				g.Expect(out).To(ContainSubstring(w))
			}
		})
	}
}

func TestHubCredentialOnAManagedClusterManagesVRGsAndNothingElse(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	admin := clusterClient(g, lab.East)
	hub := joinedHubClient(g, lab.East)

	// A user the binding does not name can do nothing: the role is what grants the access.
	stranger := userClient(g, lab.East, "stranger")
	err := stranger.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a user without the binding: %v", err)

	// Allowed: create and get the VRG's namespace.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac-hub"}}
	g.Expect(hub.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), ns) })
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})).To(Succeed())

	// Allowed: create, get, patch, update the VRG; get its status.
	profile := s3Profile(g, lab.East)
	vrg := &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "app"},
		Spec: v1alpha1.VolumeReplicationGroupSpec{
			ReplicationState: v1alpha1.ReplicationStatePrimary,
			PVCSelector:      metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			// East's real profile: the lab's agent on east protects the group and, when it is
			// deleted, removes its metadata there before it lets it go.
			S3Profiles: []v1alpha1.S3Profile{{
				Name: profile.Name, Endpoint: profile.Endpoint, Insecure: profile.Insecure, Bucket: profile.Bucket, Region: profile.Region,
				SecretRef: v1alpha1.SecretRef{Namespace: lab.S3SecretNamespace, Name: profile.Name},
			}},
			SchedulingInterval:   "1m",
			StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: lab.BlockDriver, Backend: v1alpha1.BackendVolRep}},
		},
	}
	g.Expect(hub.Create(ctx, vrg)).To(Succeed())
	// The lab's agent on east reconciles the VRG meanwhile, so a write may meet a conflict (not a
	// refusal) and is retried on a fresh copy.
	g.Eventually(func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(vrg), vrg); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(vrg.DeepCopy(), client.MergeFromWithOptimisticLock{})
		vrg.Labels = map[string]string{"patched": "true"}
		return hub.Patch(ctx, vrg, patch)
	}).Should(Succeed())
	g.Eventually(func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(vrg), vrg); err != nil {
			return err
		}
		vrg.Labels["updated"] = "true"
		return hub.Update(ctx, vrg)
	}).Should(Succeed())
	g.Expect(hub.SubResource("status").Get(ctx, vrg, &v1alpha1.VolumeReplicationGroup{})).To(Succeed())

	// No Secret of the application's namespace: the VolSync keys travel through the stores.
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "data-db-0-volsync-key", Labels: map[string]string{"drover.io/vrg-name": "db"}},
		StringData: map[string]string{"psk.txt": "volsync:0123456789abcdef"},
	}
	g.Expect(admin.Create(ctx, secret.DeepCopy())).To(Succeed(), "a Secret that exists, so a refusal cannot be a NotFound")

	// Forbidden: everything the agent owns, and what would destroy data.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "data-db-0"}}
	g.Expect(admin.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: pvc.ObjectMeta,
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	})).To(Succeed(), "a PVC that exists, so a refusal cannot be a NotFound")
	forbidden := map[string]error{
		"list pods in the namespace": hub.List(ctx, &corev1.PodList{}, client.InNamespace(ns.Name)),
		"list pods of the cluster":   hub.List(ctx, &corev1.PodList{}),
		"get a PVC":                  hub.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{}),
		"delete the namespace":       hub.Delete(ctx, ns.DeepCopy()),
		"list Secrets":               hub.List(ctx, &corev1.SecretList{}, client.InNamespace(ns.Name)),
		"get a Secret":               hub.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}),
		"create a Secret":            hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "planted", Labels: secret.Labels}}),
		"patch a Secret":             hub.Patch(ctx, secret.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"copied-by":"drover-hub"}}}`))),
		"delete a Secret":            hub.Delete(ctx, secret.DeepCopy()),
		"patch the VRG's status":     hub.Status().Patch(ctx, vrg.DeepCopy(), client.MergeFrom(vrg)),
		"list PersistentVolumes":     hub.List(ctx, &corev1.PersistentVolumeList{}),
	}
	for what, err := range forbidden {
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s must be forbidden, got %v", what, err)
	}
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})).To(Succeed(), "the namespace is still there")

	// Allowed: delete the VRG (unprotect).
	g.Expect(hub.Delete(ctx, vrg)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(vrg), &v1alpha1.VolumeReplicationGroup{}))
	}).Should(BeTrue(), "the VRG is gone")
}

// The hub's credential on a managed cluster may create, read and delete the DrillSandboxes of
// drills, never change one or write its status (the agent's), and never make one in a system
// namespace (the admission policy).
func TestHubCredentialOnAManagedClusterCreatesAndDeletesDrillSandboxesOnly(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	ctx := context.Background()
	admin := clusterClient(g, lab.East)
	hub := joinedHubClient(g, lab.East)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac-drill"}}
	g.Expect(admin.Create(ctx, ns)).To(Succeed())
	t.Cleanup(func() { _ = admin.Delete(context.Background(), ns) })

	box := &v1alpha1.DrillSandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "drill-0a1b2c3d"},
		Spec:       v1alpha1.DrillSandboxSpec{VRGName: "db", DrillID: "0a1b2c3d"},
	}
	g.Expect(hub.Create(ctx, box)).To(Succeed(), "create")
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(box), &v1alpha1.DrillSandbox{})).To(Succeed(), "get")
	g.Expect(hub.List(ctx, &v1alpha1.DrillSandboxList{}, client.InNamespace(ns.Name))).To(Succeed(), "list")

	changed := box.DeepCopy()
	changed.Spec.DrillID = "ffffffff"
	inSystem := box.DeepCopy()
	inSystem.Namespace, inSystem.ResourceVersion = "kube-system", ""
	forbidden := map[string]error{
		"patch a sandbox":           hub.Patch(ctx, changed, client.MergeFrom(box)),
		"update a sandbox":          hub.Update(ctx, changed),
		"patch a sandbox's status":  hub.Status().Patch(ctx, box.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"status":{"result":"Passed"}}`))),
		"create one in kube-system": hub.Create(ctx, inSystem),
	}
	for what, err := range forbidden {
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%s must be refused, got %v", what, err)
	}
	g.Expect(hub.Delete(ctx, box)).To(Succeed(), "delete")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(box), &v1alpha1.DrillSandbox{}))
	}).Should(BeTrue(), "the sandbox is gone")
}
