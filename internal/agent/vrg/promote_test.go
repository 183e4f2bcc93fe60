package vrg

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// storeGroup writes the metadata of PVs and PVCs, as the primary would, into a store: where its
// marker names the data (under the group's prefix when it holds none).
func storeGroup(g Gomega, store objectstore.Store, pvs []*corev1.PersistentVolume, pvcs []*corev1.PersistentVolumeClaim) {
	prefix := fixtureData(g, store)
	objects := map[string][]byte{}
	for _, pv := range pvs {
		body, err := json.Marshal(CleanPV(pv))
		g.Expect(err).NotTo(HaveOccurred())
		objects[PVKey(prefix, pv.Name)] = body
	}
	for _, pvc := range pvcs {
		body, err := json.Marshal(CleanPVC(pvc))
		g.Expect(err).NotTo(HaveOccurred())
		objects[PVCKey(prefix, pvc.Namespace, pvc.Name)] = body
	}
	g.Expect(SyncObjects(context.Background(), store, prefix, objects, nil)).To(Succeed())
}

// peerGroup is the metadata east's primary stored for PVCs data-db-0..n-1 on PVs pv-0..n-1.
func peerGroup(n int) ([]*corev1.PersistentVolume, []*corev1.PersistentVolumeClaim) {
	var pvs []*corev1.PersistentVolume
	var pvcs []*corev1.PersistentVolumeClaim
	for i := range n {
		name, pv := "data-db-"+string(rune('0'+i)), "pv-"+string(rune('0'+i))
		pvs = append(pvs, boundPV(pv, "app", name))
		pvcs = append(pvcs, boundPVC("app", name, pv))
	}
	return pvs, pvcs
}

// promote makes the fixture's group primary with action.
func (f *fixture) promote(g Gomega, action v1alpha1.DRAction) {
	f.vrg.Spec.Action = action
	g.Expect(f.client.Update(context.Background(), f.vrg)).To(Succeed())
}

// bindAll marks every PVC of namespace app Bound, as the PV controller would.
func (f *fixture) bindAll(g Gomega) {
	ctx := context.Background()
	list := &corev1.PersistentVolumeClaimList{}
	g.Expect(f.client.List(ctx, list, client.InNamespace("app"))).To(Succeed())
	for i := range list.Items {
		pvc := &list.Items[i]
		pvc.Status.Phase = corev1.ClaimBound
		g.Expect(f.client.Status().Update(ctx, pvc)).To(Succeed())
	}
}

// pass runs one reconcile of a group that already has its finalizer.
func (f *fixture) pass() (ctrl.Result, error) {
	return f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.vrg)})
}

func groupCondition(g Gomega, vrg *v1alpha1.VolumeReplicationGroup, t string) metav1.Condition {
	c := apimeta.FindStatusCondition(vrg.Status.Conditions, t)
	g.Expect(c).NotTo(BeNil(), "condition %s", t)
	return *c
}

func TestAFailoverRestoresPVsThenPVCsFromTheFirstReadableStore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	pvs, pvcs := peerGroup(2)
	storeGroup(g, f.stores["s3-west"], pvs, pvcs)
	f.stores["s3-east"].SetError(objectstore.ErrUnreachable)
	f.promote(g, v1alpha1.ActionFailover)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred(), "the lost store is skipped; nothing is written before the restore completes")
	for i, want := range pvs {
		pv := &corev1.PersistentVolume{}
		g.Expect(f.client.Get(ctx, client.ObjectKey{Name: want.Name}, pv)).To(Succeed())
		g.Expect(pv.Spec.CSI.VolumeHandle).To(Equal(want.Spec.CSI.VolumeHandle))
		g.Expect(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name).To(Equal("app/" + pvcs[i].Name))
		g.Expect(pv.Spec.ClaimRef.UID).To(BeEmpty(), "pre-bound by name only")
		g.Expect(pv.Spec.ClaimRef.ResourceVersion).To(BeEmpty())
		g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(pvcs[i]), pvc)).To(Succeed())
		g.Expect(pvc.Spec.VolumeName).To(Equal(want.Name))
		g.Expect(pvc.Labels).To(HaveKeyWithValue("app", "db"))
	}
	c := groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonProgressing))
	g.Expect(c.Message).To(And(ContainSubstring("restored from S3 profile s3-west"), ContainSubstring("waiting for PVCs app/data-db-0, app/data-db-1 to bind")))
	g.Expect(groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected).Reason).To(Equal(v1alpha1.ReasonProgressing),
		"no metadata is written before the restore completes")

	f.bindAll(g)
	res, err := f.pass()
	g.Expect(err).NotTo(HaveOccurred(), "east's store does not answer: a condition, retried on a fixed delay")
	g.Expect(res.RequeueAfter).To(Equal(requeueStoreDown))
	got := f.group(g)
	c = groupCondition(g, got, v1alpha1.ConditionClusterDataReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	g.Expect(c.Message).To(And(ContainSubstring("from S3 profile s3-west"), ContainSubstring("skipped: S3 profile s3-east")))
	g.Expect(c.Message).To(ContainSubstring("(0 objects created, 4 adopted)"),
		"reentrant: a later pass (or a restarted agent) adopts what an earlier one created")
	g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(f.backend.Protected()).To(ContainElements("app/data-db-0", "app/data-db-1"), "then the protect path promotes them")
	g.Expect(groupCondition(g, got, v1alpha1.ConditionDataReady).Status).To(Equal(metav1.ConditionTrue))

	// A completed restore is not repeated: a PVC the application deletes now stays deleted.
	before := len(f.backend.Protected())
	g.Expect(f.client.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-1"}})).To(Succeed())
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred(), "east's store is still down")
	g.Expect(len(f.backend.Protected())).To(BeNumerically(">", before))
	pvc := &corev1.PersistentVolumeClaim{}
	err = f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-1"}, pvc)
	g.Expect(err).To(MatchError(ContainSubstring("not found")), "the restore did not run again")
}

func TestAPromotionReadsTheStoredMetadataOncePerGeneration(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	pvs, pvcs := peerGroup(2)
	storeGroup(g, f.stores["s3-west"], pvs, pvcs)
	f.stores["s3-east"].SetError(objectstore.ErrUnreachable)
	west := &countingStore{Store: f.stores["s3-west"]}
	f.r.NewStore = func(p objectstore.Profile) (objectstore.Store, error) {
		if p.Name == "s3-west" {
			return west, nil
		}
		return f.stores[p.Name], nil
	}
	metadata := func() int { return west.metadataReads() }
	f.promote(g, v1alpha1.ActionFailover)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	read := metadata()
	g.Expect(read).To(Equal(2+len(pvs)+len(pvcs)), "two lists and a get per object")
	for range 3 {
		_, err = f.pass()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(metadata()).To(Equal(read), "the passes waiting for the PVCs to bind do not read the store again")
	c := groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataReady)
	g.Expect(c.Message).To(And(ContainSubstring("restored from S3 profile s3-west"), ContainSubstring("skipped: S3 profile s3-east")),
		"the profile read and the one skipped are still told")

	f.bindAll(g)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataReady).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(f.r.written.restoreRead(f.group(g))).To(BeNil(), "a completed restore keeps nothing")

	f.vrg = f.group(g)
	f.promote(g, v1alpha1.ActionRelocate)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(metadata()).To(Equal(2*read), "a new generation reads the store anew")
}

func TestLeftoversThatMatchAreAdoptedAndCollisionsAreReportedAndLeftUntouched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pvs, pvcs := peerGroup(3)
	// data-db-0: its PV is left from an earlier failover, still naming a deleted claim by uid.
	leftPV := boundPV("pv-0", "app", "data-db-0")
	leftPV.ResourceVersion = ""
	// data-db-1: a PVC of that name exists, bound to another volume.
	collidingPVC := boundPVC("app", "data-db-1", "someone-elses-pv")
	collidingPVC.ResourceVersion, collidingPVC.Labels = "", map[string]string{"app": "db"}
	collidingPVC.Finalizers = nil
	// data-db-2: a PV of that name exists with another volume handle.
	collidingPV := boundPV("pv-2", "app", "data-db-2")
	collidingPV.ResourceVersion, collidingPV.Spec.CSI.VolumeHandle = "", "another-image"
	f := newFixture(t, leftPV, collidingPVC, collidingPV)
	storeGroup(g, f.stores["s3-east"], pvs, pvcs)
	f.promote(g, v1alpha1.ActionFailover)
	pvcBefore, pvBefore := &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(collidingPVC), pvcBefore)).To(Succeed())
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(collidingPV), pvBefore)).To(Succeed())

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	f.bindAll(g)
	_, err = f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())

	adopted := &corev1.PersistentVolume{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "pv-0"}, adopted)).To(Succeed())
	g.Expect(adopted.Spec.ClaimRef.UID).To(BeEmpty(), "the uid of the deleted claim is cleared so the PV binds again")
	g.Expect(adopted.Spec.CSI.VolumeHandle).To(Equal("pv-0"))
	restored := &corev1.PersistentVolumeClaim{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-0"}, restored)).To(Succeed())
	g.Expect(restored.Spec.VolumeName).To(Equal("pv-0"))

	pvcAfter, pvAfter := &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolume{}
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(collidingPVC), pvcAfter)).To(Succeed())
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(collidingPV), pvAfter)).To(Succeed())
	g.Expect(pvcAfter.Spec).To(Equal(pvcBefore.Spec), "the colliding PVC is not overwritten")
	g.Expect(pvcAfter.Labels).NotTo(HaveKey(LabelProtectedBy), "nor protected")
	g.Expect(pvcAfter.Finalizers).To(BeEmpty())
	g.Expect(pvAfter.Spec).To(Equal(pvBefore.Spec), "the colliding PV is not overwritten")
	err = f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-2"}, &corev1.PersistentVolumeClaim{})
	g.Expect(err).To(MatchError(ContainSubstring("not found")), "no PVC is created over a conflicting PV")

	got := f.group(g)
	c := groupCondition(g, got, v1alpha1.ConditionClusterDataReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPVCConflict))
	g.Expect(c.Message).To(And(
		ContainSubstring(`PVC app/data-db-1 exists on this cluster and is bound to PV "someone-elses-pv", not to the replicated PV "pv-1"`),
		ContainSubstring("(and 1 more PVCs)")))
	dr := pvcCondition(g, got, "data-db-1", v1alpha1.ConditionDataReady)
	g.Expect(dr.Reason).To(Equal(v1alpha1.ReasonPVCConflict))
	g.Expect(pvcCondition(g, got, "data-db-0", v1alpha1.ConditionDataReady).Status).To(Equal(metav1.ConditionTrue), "the others proceed")
	g.Expect(f.backend.Protected()).NotTo(ContainElement("app/data-db-1"))
	keys, err := f.stores["s3-east"].List(ctx, "app/db/pv")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(HaveLen(6), "the stored metadata is kept for the restore to finish")
	body, err := f.stores["s3-east"].Get(ctx, PVCKey(fixtureData(g, f.stores["s3-east"]), "app", "data-db-1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(body)).To(ContainSubstring(`"volumeName":"pv-1"`), "the colliding PVC's metadata is not stored over it")
	g.Expect(got.Status.ObservedGeneration).To(BeZero())
}

func TestAFailoverWithNoReadableStoreIsStoreUnavailable(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.stores["s3-east"].SetError(objectstore.ErrUnreachable)
	f.stores["s3-west"].SetError(objectstore.ErrUnreachable)
	f.promote(g, v1alpha1.ActionRelocate)

	_, err := f.reconcile(g)
	g.Expect(err).To(HaveOccurred(), "retried with backoff")
	c := groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonStoreUnavailable))
	g.Expect(c.Message).To(And(ContainSubstring("S3 profile s3-east"), ContainSubstring("S3 profile s3-west")))
}

func TestPVMismatchNamesEveryDifferingField(t *testing.T) {
	block := corev1.PersistentVolumeBlock
	for _, tc := range []struct {
		name   string
		change func(*corev1.PersistentVolume)
		want   string
	}{
		{"a matching PV, whatever its claim uid", func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef.UID = "other" }, ""},
		{"another driver", func(pv *corev1.PersistentVolume) { pv.Spec.CSI.Driver = "x" }, `CSI driver "x", not "block.lab.drover.io"`},
		{"another handle", func(pv *corev1.PersistentVolume) { pv.Spec.CSI.VolumeHandle = "h" }, `volume handle "h", not "pv-0"`},
		{"another claim", func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef.Name = "c" }, `claimRef "app/c", not "app/data-db-0"`},
		{"other access modes", func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}, "access modes [ReadWriteMany], not [ReadWriteOnce]"},
		{"another volume mode", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = &block }, "volume mode Block, not Filesystem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			stored := CleanPV(boundPV("pv-0", "app", "data-db-0"))
			existing := boundPV("pv-0", "app", "data-db-0")
			tc.change(existing)
			got := pvMismatch(existing, stored)
			if tc.want == "" {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(And(HavePrefix("PV pv-0 exists on this cluster with "+tc.want), ContainSubstring("drover does not overwrite it")))
		})
	}
}
