package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/tenancy"
)

// adminNamespace is a namespace whose groups may protect other namespaces on this cluster: an
// administrator of the cluster labelled it (docs/security.md, "A group's namespaces").
func adminNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{tenancy.LabelAdminNamespace: "true"}}}
}

// Whoever may create VolumeReplicationGroups in one namespace of a managed cluster (the hub's
// credential, or anyone granted the kind there) must not make the agent act on another team's
// namespace or a system one: it would capture that namespace's Secrets to the stores, label its
// PVCs as its own, and on a failover delete its workloads. A group protects namespaces other
// than its own only from an admin namespace of this cluster; a system namespace never.
func TestAGroupProtectsOnlyItsOwnNamespaceUnlessItIsInAnAdminNamespace(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	profiles, _ := vrglab.S3Profiles(g)
	createOrKeep(ctx, g, east, replicationClass("lab-block-3s", "3s"))
	victim, attacker := "tenancy-victim", "tenancy-attacker"
	for _, ns := range []string{victim, attacker} {
		g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: victim, Name: "data", Labels: map[string]string{"app": "db"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(lab.BlockStorageClass), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	g.Expect(east.Create(ctx, pvc)).To(Succeed())

	other := vrglab.PrimaryVRG(attacker, "steal", "db", "3s", profiles)
	other.Spec.ProtectedNamespaces = []string{victim}
	other.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	system := vrglab.PrimaryVRG(attacker, "system", "db", "3s", profiles)
	system.Spec.ProtectedNamespaces = []string{"kube-system"}
	for _, group := range []*v1alpha1.VolumeReplicationGroup{other, system} {
		g.Expect(east.Create(ctx, group)).To(Succeed())
	}
	for group, want := range map[*v1alpha1.VolumeReplicationGroup][]string{
		other:  {v1alpha1.ReasonNamespaceNotAllowed, "namespace tenancy-victim", "label namespace tenancy-attacker " + tenancy.LabelAdminNamespace + "=true"},
		system: {v1alpha1.ReasonInvalidSpec, "namespace kube-system is a system namespace"},
	} {
		g.Eventually(func(g Gomega) {
			got := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
			c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "%s: %s", c.Reason, c.Message)
			g.Expect(c.Reason).To(Equal(want[0]), c.Message)
			for _, s := range want[1:] {
				g.Expect(c.Message).To(ContainSubstring(s))
			}
			t.Logf("group %s: DataReady %s: %s", group.Name, c.Reason, c.Message)
		}).Should(Succeed(), "group %s is refused", group.Name)
	}
	// The refused group took nothing: the victim's PVC is nobody's.
	got := &corev1.PersistentVolumeClaim{}
	g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pvc), got)).To(Succeed())
	g.Expect(got.Labels).NotTo(HaveKey(vrg.LabelProtectedBy))
	g.Expect(got.Finalizers).NotTo(ContainElement(vrg.PVCFinalizer))

	// Once an administrator of the cluster labels the group's namespace an admin namespace, the
	// same group protects the other namespace.
	g.Eventually(func(g Gomega) {
		ns := &corev1.Namespace{}
		g.Expect(east.Get(ctx, client.ObjectKey{Name: attacker}, ns)).To(Succeed())
		ns.Labels[tenancy.LabelAdminNamespace] = "true"
		g.Expect(east.Update(ctx, ns)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pvc), got)).To(Succeed())
		g.Expect(got.Labels).To(HaveKeyWithValue(vrg.LabelProtectedBy, other.Name))
	}).Should(Succeed(), "the admin namespace's group protects the other namespace's PVC")
	g.Expect(east.Delete(ctx, other)).To(Succeed())
	g.Expect(east.Delete(ctx, system)).To(Succeed())
}
