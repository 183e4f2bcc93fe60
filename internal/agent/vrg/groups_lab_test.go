package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// TestAConsistencyGroupIsRefusedWithoutAGroupClassThenReplicatedAsOne: a group of a data and a
// log PVC on a storage with no VolumeGroupReplicationClass is refused, with what to create, and
// neither PVC is replicated on its own; once the class exists, both are replicated by one
// VolumeGroupReplication and report the group's point; a PVC relabelled out of the group leaves
// it and is replicated on its own; unprotecting removes the group.
func TestAConsistencyGroupIsRefusedWithoutAGroupClassThenReplicatedAsOne(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	createOrKeep(ctx, g, east, replicationClass("lab-block-5s", "5s"))
	ns := "group-wal"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	for _, name := range []string{"data", "log"} {
		g.Expect(east.Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "pg", "role": name}}, Spec: vrglab.PVCSpec(),
		})).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	group := vrglab.PrimaryVRG(ns, "pg", "pg", "5s", profiles)
	group.Spec.ConsistencyGroups = []v1alpha1.VRGConsistencyGroup{{Name: "wal", Selector: metav1.LabelSelector{
		MatchLabels:      map[string]string{"app": "pg"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: metav1.LabelSelectorOpIn, Values: []string{"data", "log"}}},
	}}}
	g.Expect(east.Create(ctx, group)).To(Succeed())

	got := &v1alpha1.VolumeReplicationGroup{}
	g.Eventually(func(g Gomega) {
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(2))
		ready := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonConsistencyGroupUnsupported))
		g.Expect(ready.Message).To(And(ContainSubstring("no VolumeGroupReplicationClass has provisioner"),
			ContainSubstring("consistency group wal"), ContainSubstring("create a VolumeGroupReplicationClass with spec.provisioner "+lab.BlockDriver)))
	}).Should(Succeed(), "the group is refused, saying what to create")
	t.Logf("DataReady without a group class: %s", vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady).Message)
	vrs := &replicationv1alpha1.VolumeReplicationList{}
	g.Expect(east.List(ctx, vrs, client.InNamespace(ns))).To(Succeed())
	g.Expect(vrs.Items).To(BeEmpty(), "no member is replicated on its own")

	fixed := time.Now()
	class := &replicationv1alpha1.VolumeGroupReplicationClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-block-group-" + ns},
		Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: lab.BlockDriver}}
	g.Expect(east.Create(ctx, class)).To(Succeed())
	defer func() { g.Expect(client.IgnoreNotFound(east.Delete(ctx, class))).To(Succeed()) }()
	g.Eventually(func(g Gomega) {
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
		g.Expect(got.Status.ConsistencyGroups).To(HaveLen(1))
		cg := got.Status.ConsistencyGroups[0]
		g.Expect(cg.Members).To(Equal([]string{"data", "log"}))
		g.Expect(cg.LastSyncTime).NotTo(BeNil())
		g.Expect(got.Status.LastGroupSyncTime.Equal(cg.LastSyncTime)).To(BeTrue(), "the group's point is the application's")
		for _, p := range got.Status.ProtectedPVCs {
			g.Expect(p.ConsistencyGroup).To(Equal("wal"))
			g.Expect(p.LastSyncTime.Equal(cg.LastSyncTime)).To(BeTrue(), "PVC %s reports the group's point", p.Name)
		}
	}).Should(Succeed(), "with the class, both PVCs replicate as one group")
	t.Logf("VolumeGroupReplicationClass created → group replicated, first point in %s", time.Since(fixed).Round(time.Millisecond))
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pg-wal"}, vgr)).To(Succeed())
	g.Expect(vgr.Status.PersistentVolumeClaimsRefList).To(ConsistOf(corev1.LocalObjectReference{Name: "data"}, corev1.LocalObjectReference{Name: "log"}))
	g.Expect(east.List(ctx, vrs, client.InNamespace(ns))).To(Succeed())
	for _, vr := range vrs.Items {
		g.Expect(vr.Spec.DataSource.Kind).To(Equal("VolumeGroupReplication"), "VolumeReplication %s is the group's only", vr.Name)
	}

	leaveGroup(ctx, g, east, group)

	g.Expect(east.Delete(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, client.ObjectKeyFromObject(vgr), &replicationv1alpha1.VolumeGroupReplication{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the group's VolumeGroupReplication is gone: %v", err)
		for _, name := range []string{"data", "log"} {
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)).To(Succeed())
			g.Expect(pvc.Labels).NotTo(HaveKey(v1alpha1.LabelConsistencyGroup))
			g.Expect(pvc.Annotations).NotTo(HaveKey(v1alpha1.AnnotationConsistencyGroupHandle))
			g.Expect(pvc.Finalizers).NotTo(ContainElement(vrg.PVCFinalizer))
			g.Expect(pvc.Finalizers).NotTo(ContainElement("replication.storage.openshift.io/vgr-protection"), "the storage released it")
		}
	}).Should(Succeed(), "unprotecting removes the group and leaves the PVCs unmarked")
}

// leaveGroup relabels the group's log PVC so that the group no longer selects it: it leaves the
// storage's group and is then replicated on its own, and the group goes on with data alone.
func leaveGroup(ctx context.Context, g Gomega, east client.Client, group *v1alpha1.VolumeReplicationGroup) {
	log := &corev1.PersistentVolumeClaim{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: group.Namespace, Name: "log"}, log)).To(Succeed())
	before := log.DeepCopy()
	log.Labels["role"] = "cache"
	g.Expect(east.Patch(ctx, log, client.MergeFrom(before))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(got.Status.ConsistencyGroups[0].Members).To(Equal([]string{"data"}))
		g.Expect(vrglab.PVCCondition(got, "log", v1alpha1.ConditionDataReady).Status).To(Equal(metav1.ConditionTrue))
		vr := &replicationv1alpha1.VolumeReplication{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: group.Namespace, Name: "log"}, vr)).To(Succeed())
		g.Expect(vr.Spec.DataSource.Kind).To(Equal("PersistentVolumeClaim"))
		vgr := &replicationv1alpha1.VolumeGroupReplication{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: group.Namespace, Name: "pg-wal"}, vgr)).To(Succeed())
		g.Expect(vgr.Status.PersistentVolumeClaimsRefList).To(ConsistOf(corev1.LocalObjectReference{Name: "data"}))
	}).WithTimeout(90*time.Second).Should(Succeed(), "the log PVC leaves the group and replicates on its own")
}
