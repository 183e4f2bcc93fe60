package vrg_test

import (
	"context"
	"encoding/json"
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
)

// storedPV is the PV a primary would have stored for a PVC of the lab's block class.
func storedPV(name, namespace, claim string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              lab.BlockStorageClass,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: namespace, Name: claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: lab.BlockDriver, VolumeHandle: name,
			}},
		},
	}
}

// storedPVC is the PVC a primary would have stored, bound to pv.
func storedPVC(namespace, name, pv string, labels map[string]string) *corev1.PersistentVolumeClaim {
	spec := vrglab.PVCSpec()
	spec.VolumeName = pv
	spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}, Spec: spec}
}

func TestAPromotionReportsAndLeavesUntouchedAPVCBoundToAnotherVolume(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	west := vrglab.ClusterClient(t, lab.West)

	ns := "promote-collision"
	g.Expect(west.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	// A PVC of the name the restore wants, provisioned here: bound to another volume.
	colliding := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-db-0", Labels: map[string]string{"app": "db"}},
		Spec:       vrglab.PVCSpec(),
	}
	g.Expect(west.Create(ctx, colliding)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(colliding), colliding)).To(Succeed())
		g.Expect(colliding.Status.Phase).To(Equal(corev1.ClaimBound))
	}).Should(Succeed())

	// What the peer's primary stored: data-db-0 on PV restored-0 and, outside the selector so
	// that only the restore touches it, data-db-1 on PV restored-1.
	profiles, stores := vrglab.S3Profiles(g)
	objects := map[string][]byte{}
	prefix := ns + "/db/"
	for _, o := range []struct {
		pv, pvc string
		labels  map[string]string
	}{{"restored-0-" + ns, "data-db-0", map[string]string{"app": "db"}}, {"restored-1-" + ns, "data-db-1", nil}} {
		pv, err := json.Marshal(vrg.CleanPV(storedPV(o.pv, ns, o.pvc)))
		g.Expect(err).NotTo(HaveOccurred())
		pvc, err := json.Marshal(vrg.CleanPVC(storedPVC(ns, o.pvc, o.pv, o.labels)))
		g.Expect(err).NotTo(HaveOccurred())
		objects[vrg.PVKey(prefix, o.pv)], objects[vrg.PVCKey(prefix, ns, o.pvc)] = pv, pvc
	}
	for _, store := range stores {
		g.Expect(vrg.SyncObjects(ctx, store, prefix, objects, nil)).To(Succeed())
	}

	group := vrglab.PrimaryVRG(ns, "db", "db", "5s", profiles)
	group.Spec.Action = v1alpha1.ActionFailover
	g.Expect(west.Create(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPVCConflict))
		g.Expect(c.Message).To(ContainSubstring("PVC " + ns + "/data-db-0 exists on this cluster and is bound to PV \"" + colliding.Spec.VolumeName +
			"\", not to the replicated PV \"restored-0-" + ns + "\""))
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(1))
		g.Expect(vrglab.ConditionOf(got.Status.ProtectedPVCs[0].Conditions, v1alpha1.ConditionDataReady).Reason).To(Equal(v1alpha1.ReasonPVCConflict))

		restored := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-1"}, restored)).To(Succeed())
		g.Expect(restored.Spec.VolumeName).To(Equal("restored-1-" + ns))
		g.Expect(restored.Status.Phase).To(Equal(corev1.ClaimBound), "the other PVC is restored and binds")
	}).Should(Succeed(), "the collision is reported and the other PVC proceeds")

	got := &corev1.PersistentVolumeClaim{}
	g.Expect(west.Get(ctx, client.ObjectKeyFromObject(colliding), got)).To(Succeed())
	// (Its resourceVersion may move: the PV controller keeps writing a PVC it bound; drover
	// never writes it, which managedFields tell.)
	g.Expect(got.Spec).To(Equal(colliding.Spec), "the colliding PVC is not overwritten")
	for _, m := range got.ManagedFields {
		g.Expect(m.Manager).NotTo(Equal("drover-agent"), "drover never writes the colliding PVC")
	}
	g.Expect(got.Labels).NotTo(HaveKey(vrg.LabelProtectedBy))
	g.Expect(got.Finalizers).NotTo(ContainElement(vrg.PVCFinalizer))
	err := west.Get(ctx, client.ObjectKey{Name: "restored-0-" + ns}, &corev1.PersistentVolume{})
	g.Expect(err).NotTo(HaveOccurred(), "its PV is restored, waiting for the claim to be freed")
	for _, store := range stores {
		body, err := store.Get(ctx, vrg.PVCKey(prefix, ns, "data-db-0"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(body).To(MatchJSON(objects[vrg.PVCKey(prefix, ns, "data-db-0")]), "store %s keeps the peer's metadata", store.Name())
	}
	notes := vrglab.ExpectEvents(ctx, g, west, group, v1alpha1.EventPVCConflict)
	g.Expect(notes[v1alpha1.EventPVCConflict]).To(ContainElement(ContainSubstring("PVCConflict: PVC " + ns + "/data-db-0 exists on this cluster")))
}
