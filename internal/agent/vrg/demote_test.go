package vrg

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// podUsing builds a pod of namespace app whose volume names the PVC.
func podUsing(name, pvc string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "app"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc},
			}}},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// attachment builds a VolumeAttachment of a PV to node-1.
func attachment(name, pv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "block.lab.drover.io", NodeName: "node-1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)},
		},
	}
}

// protectedPVC is a PVC of the group left protected by its time as primary, and its PV.
func protectedPVC() (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion = ""
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.ResourceVersion = ""
	return pv, pvc
}

// demote makes the fixture's group secondary with action.
func (f *fixture) demote(g Gomega, action v1alpha1.DRAction) {
	f.vrg.Spec.ReplicationState, f.vrg.Spec.Action = v1alpha1.ReplicationStateSecondary, action
	g.Expect(f.client.Update(context.Background(), f.vrg)).To(Succeed())
}

func TestASecondaryThatProtectsNothingHereIsSecondaryAndLeavesTheStoresAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	pvs, pvcs := peerGroup(1)
	storeGroup(g, f.stores["s3-east"], pvs, pvcs)
	f.demote(g, "")

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	got := f.group(g)
	g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	c := groupCondition(g, got, v1alpha1.ConditionDataReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSecondary))
	for _, ct := range []string{v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataReady, v1alpha1.ConditionClusterDataProtected} {
		c := groupCondition(g, got, ct)
		g.Expect(c.Status).To(Equal(metav1.ConditionUnknown), ct)
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSecondary), ct)
	}
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	keys, err := f.stores["s3-east"].List(ctx, "app/db/")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(HaveLen(2), "the primary's metadata, under the same keys, is untouched")
}

func TestAFailoverDemotionWaitsForEveryConsumerThenDemotesWithResyncKeepingThePVC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv, pvc := protectedPVC()
	running := podUsing("db-0", "data-db-0", corev1.PodRunning)
	finished := podUsing("job-0", "data-db-0", corev1.PodSucceeded)
	va := attachment("csi-0", "pv-0")
	f := newFixture(t, pv, pvc, running, finished, va)
	f.demote(g, v1alpha1.ActionFailover)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	got := f.group(g)
	c := pvcCondition(g, got, "data-db-0", v1alpha1.ConditionDataReady)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPVCInUse))
	g.Expect(c.Message).To(And(
		ContainSubstring("PVC app/data-db-0 is in use by pod app/db-0, VolumeAttachment csi-0 (node node-1)"),
		ContainSubstring("the workload must be stopped"),
		Not(ContainSubstring("job-0"))), "a terminated pod uses nothing")
	dr := groupCondition(g, got, v1alpha1.ConditionDataReady)
	g.Expect(dr.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(dr.Message).To(Equal(c.Message))
	g.Expect(got.Status.State).To(Equal(v1alpha1.StateUnknown))
	g.Expect(f.backend.Demoted()).To(BeEmpty())

	g.Expect(f.client.Delete(ctx, running)).To(Succeed())
	_, err = f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pvcCondition(g, f.group(g), "data-db-0", v1alpha1.ConditionDataReady).Message).To(
		ContainSubstring("in use by VolumeAttachment csi-0"), "the attachment alone still blocks")
	g.Expect(f.backend.Demoted()).To(BeEmpty())

	g.Expect(f.client.Delete(ctx, va)).To(Succeed())
	_, err = f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.backend.Demoted()).To(And(Not(BeEmpty()), HaveEach("app/data-db-0+resync")), "demoted with resync")
	got = f.group(g)
	g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	g.Expect(pvcCondition(g, got, "data-db-0", v1alpha1.ConditionDataReady).Reason).To(Equal(v1alpha1.ReasonSecondary))
	kept := &corev1.PersistentVolumeClaim{}
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(pvc), kept)).To(Succeed())
	g.Expect(kept.DeletionTimestamp).To(BeNil(), "nobody deleted the PVC")
	g.Expect(kept.Finalizers).To(ContainElement(PVCFinalizer), "it stays protected by the secondary group")
}

func TestARelocationDemotionWithoutTheFenceRefusesToDemote(t *testing.T) {
	g := NewWithT(t)
	pv, pvc := protectedPVC()
	f := newFixture(t, pv, pvc)
	f.demote(g, v1alpha1.ActionRelocate)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	got := f.group(g)
	c := groupCondition(g, got, v1alpha1.ConditionDataReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonFenceNotAvailable))
	g.Expect(c.Message).To(ContainSubstring("admission webhook that fences new consumers"))
	g.Expect(got.Status.State).To(Equal(v1alpha1.StateUnknown))
	g.Expect(f.backend.Demoted()).To(BeEmpty(), "no demotion without the fence")
}

func TestASecondaryWithoutActionDoesNotDemoteAPVCItFinds(t *testing.T) {
	g := NewWithT(t)
	pv, pvc := protectedPVC()
	f := newFixture(t, pv, pvc)
	f.demote(g, "")

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	c := groupCondition(g, f.group(g), v1alpha1.ConditionDataReady)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonInvalidSpec))
	g.Expect(c.Message).To(ContainSubstring("set action Failover"))
	g.Expect(f.backend.Demoted()).To(BeEmpty())
}
