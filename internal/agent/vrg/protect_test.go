package vrg_test

import (
	"context"
	"encoding/json"
	"strings"
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
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication/volrep"
)

// replicationClass builds a VolumeReplicationClass of the lab's block driver.
func replicationClass(name, interval string) *replicationv1alpha1.VolumeReplicationClass {
	return &replicationv1alpha1.VolumeReplicationClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: replicationv1alpha1.VolumeReplicationClassSpec{
			Provisioner: lab.BlockDriver,
			Parameters:  map[string]string{volrep.SchedulingIntervalParameter: interval},
		},
	}
}

func createOrKeep(ctx context.Context, g Gomega, cl client.Client, obj client.Object) {
	if err := cl.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

func TestPrimaryProtectsAStatefulSetsPVCsAndUnprotectsThemOnDelete(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)

	createOrKeep(ctx, g, east, replicationClass("lab-block-5s", "5s"))
	createOrKeep(ctx, g, west, replicationClass("lab-block-5s", "5s"))
	ns := "protect-sts"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(east.Create(ctx, vrglab.StatefulSet(ns, "db", 3))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	group := vrglab.PrimaryVRG(ns, "db", "db", "5s", profiles)
	created := time.Now()
	g.Expect(east.Create(ctx, group)).To(Succeed())

	// When DataReady and DataProtected turn True for the 3 PVCs, seen by polling every 100 ms.
	// (Before the StatefulSet controller creates the PVCs, the group selects none and is
	// trivially ready; that does not count.)
	var dataReady, dataProtected time.Duration
	observe := func() {
		got := &v1alpha1.VolumeReplicationGroup{}
		if east.Get(ctx, client.ObjectKeyFromObject(group), got) != nil || len(got.Status.ProtectedPVCs) != 3 {
			return
		}
		if dataReady == 0 && vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady).Status == metav1.ConditionTrue {
			dataReady = time.Since(created)
		}
		if dataProtected == 0 && vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected).Status == metav1.ConditionTrue {
			dataProtected = time.Since(created)
		}
	}
	var pvNames []string
	g.Eventually(func(g Gomega) {
		observe()
		pvcs := &corev1.PersistentVolumeClaimList{}
		g.Expect(east.List(ctx, pvcs, client.InNamespace(ns))).To(Succeed())
		g.Expect(pvcs.Items).To(HaveLen(3))
		pvNames = nil
		for _, pvc := range pvcs.Items {
			g.Expect(pvc.Finalizers).To(ContainElement(vrg.PVCFinalizer), "PVC %s", pvc.Name)
			g.Expect(pvc.Labels).To(HaveKeyWithValue(vrg.LabelProtectedBy, "db"), "PVC %s", pvc.Name)
			g.Expect(pvc.Spec.VolumeName).NotTo(BeEmpty())
			pv := &corev1.PersistentVolume{}
			g.Expect(east.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
			g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain), "PV %s", pv.Name)
			g.Expect(pv.Annotations).To(HaveKeyWithValue(vrg.AnnotationOriginalReclaimPolicy, string(corev1.PersistentVolumeReclaimDelete)))
			pvNames = append(pvNames, pv.Name)

			vr := &replicationv1alpha1.VolumeReplication{}
			g.Expect(east.Get(ctx, client.ObjectKeyFromObject(&pvc), vr)).To(Succeed())
			g.Expect(vr.Spec.VolumeReplicationClass).To(Equal("lab-block-5s"))
			g.Expect(vr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Primary))
			g.Expect(vr.Spec.DataSource.Kind).To(Equal("PersistentVolumeClaim"))
			g.Expect(vr.Spec.DataSource.Name).To(Equal(pvc.Name))
			g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
		}
	}).Should(Succeed(), "the StatefulSet's 3 PVCs are marked protected, retained and replicated as primary")

	g.Eventually(func(g Gomega) {
		observe()
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		}
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(3))
		oldest := got.Status.ProtectedPVCs[0].LastSyncTime
		for _, p := range got.Status.ProtectedPVCs {
			g.Expect(p.Backend).To(Equal(v1alpha1.BackendVolRep))
			g.Expect(p.ReplicationID).To(Equal("lab-block-5s"))
			g.Expect(p.StorageClassName).To(Equal(lab.BlockStorageClass))
			g.Expect(p.LastSyncTime).NotTo(BeNil())
			g.Expect(vrglab.ConditionOf(p.Conditions, v1alpha1.ConditionDataProtected).Status).To(Equal(metav1.ConditionTrue))
			if p.LastSyncTime.Before(oldest) {
				oldest = p.LastSyncTime
			}
		}
		g.Expect(got.Status.LastGroupSyncTime).NotTo(BeNil())
		g.Expect(got.Status.LastGroupSyncTime.Equal(oldest)).To(BeTrue(), "lastGroupSyncTime is the oldest PVC sync")
	}).Should(Succeed(), "the group is DataReady, DataProtected after the first sync, and ClusterDataProtected")
	t.Logf("VRG created (with the StatefulSet) → DataReady in %s, → DataProtected (first sync of 3 PVCs, interval 5s) in %s", dataReady.Round(time.Millisecond), dataProtected.Round(time.Millisecond))

	for _, store := range stores {
		prefix := dataPrefix(ctx, g, store, group)
		g.Expect(prefix).To(Equal(ns+"/db/claims/1-east/"), "the marker names the data under east's claim")
		keys, err := store.List(ctx, prefix)
		g.Expect(err).NotTo(HaveOccurred())
		var pvKeys, pvcKeys []string
		for _, k := range keys {
			switch {
			case strings.HasPrefix(k, prefix+"pvs/"):
				pvKeys = append(pvKeys, k)
			case strings.HasPrefix(k, prefix+"pvcs/"+ns+"/"):
				pvcKeys = append(pvcKeys, k)
			}
		}
		g.Expect(pvKeys).To(HaveLen(3), "store %s holds 3 PVs: %v", store.Name(), keys)
		g.Expect(pvcKeys).To(HaveLen(3), "store %s holds 3 PVCs: %v", store.Name(), keys)
		for _, name := range pvNames {
			body, err := store.Get(ctx, prefix+"pvs/"+name+".json")
			g.Expect(err).NotTo(HaveOccurred())
			pv := &corev1.PersistentVolume{}
			g.Expect(json.Unmarshal(body, pv)).To(Succeed())
			g.Expect(pv.Name).To(Equal(name))
			g.Expect(pv.UID).To(BeEmpty())
			g.Expect(pv.ResourceVersion).To(BeEmpty())
			g.Expect(pv.ManagedFields).To(BeEmpty())
			g.Expect(pv.Spec.ClaimRef).NotTo(BeNil())
			g.Expect(pv.Spec.ClaimRef.UID).To(BeEmpty())
			g.Expect(pv.Spec.ClaimRef.Namespace).To(Equal(ns))
			g.Expect(pv.Spec.CSI.Driver).To(Equal(lab.BlockDriver))
			g.Expect(pv.Annotations).NotTo(HaveKey("pv.kubernetes.io/bound-by-controller"))
			g.Expect(pv.Status.Phase).To(BeEmpty())
		}
		for i := range 3 {
			name := "data-db-" + string(rune('0'+i))
			body, err := store.Get(ctx, prefix+"pvcs/"+ns+"/"+name+".json")
			g.Expect(err).NotTo(HaveOccurred())
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(json.Unmarshal(body, pvc)).To(Succeed())
			g.Expect(pvc.Name).To(Equal(name))
			g.Expect(pvc.UID).To(BeEmpty())
			g.Expect(pvc.ResourceVersion).To(BeEmpty())
			g.Expect(pvc.CreationTimestamp.IsZero()).To(BeTrue())
			g.Expect(pvc.Spec.VolumeName).To(BeElementOf(pvNames))
			g.Expect(pvc.Annotations).NotTo(HaveKey("pv.kubernetes.io/bind-completed"))
			g.Expect(pvc.Finalizers).To(BeEmpty())
			g.Expect(pvc.Status.Phase).To(BeEmpty())
		}
	}

	// The owner scales down and deletes a PVC: drover releases it (replication removed, policy
	// restored, finalizer removed), so the deletion completes, and its metadata leaves the stores.
	vrglab.ScaleTo(ctx, g, east, client.ObjectKey{Namespace: ns, Name: "db"}, 2)
	released := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-db-2"}}
	g.Expect(east.Delete(ctx, released)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, client.ObjectKeyFromObject(released), &corev1.PersistentVolumeClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PVC data-db-2 is deleted: %v", err)
		err = east.Get(ctx, client.ObjectKeyFromObject(released), &replicationv1alpha1.VolumeReplication{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "its VolumeReplication is deleted: %v", err)
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(2))
		g.Expect(vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected).Status).To(Equal(metav1.ConditionTrue))
		for _, store := range stores {
			prefix := dataPrefix(ctx, g, store, group)
			keys, err := store.List(ctx, prefix+"pvcs/")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keys).To(HaveLen(2), "store %s", store.Name())
			keys, err = store.List(ctx, prefix+"pvs/")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keys).To(HaveLen(2), "store %s", store.Name())
		}
	}).Should(Succeed(), "a PVC its owner deletes is released and leaves the group")

	// Unprotect: the group's deletion removes the replication, restores the reclaim policies,
	// removes the marks and the metadata; the PVCs and PVs stay.
	g.Expect(east.Delete(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, client.ObjectKeyFromObject(group), &v1alpha1.VolumeReplicationGroup{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the group is gone: %v", err)
	}).Should(Succeed())
	pvcs := &corev1.PersistentVolumeClaimList{}
	g.Expect(east.List(ctx, pvcs, client.InNamespace(ns))).To(Succeed())
	g.Expect(pvcs.Items).To(HaveLen(2), "the PVCs stay with their owner")
	for _, pvc := range pvcs.Items {
		g.Expect(pvc.Finalizers).NotTo(ContainElement(vrg.PVCFinalizer))
		g.Expect(pvc.Labels).NotTo(HaveKey(vrg.LabelProtectedBy))
		pv := &corev1.PersistentVolume{}
		g.Expect(east.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
		g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete))
		g.Expect(pv.Annotations).NotTo(HaveKey(vrg.AnnotationOriginalReclaimPolicy))
		err := east.Get(ctx, client.ObjectKeyFromObject(&pvc), &replicationv1alpha1.VolumeReplication{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "VolumeReplication %s is deleted: %v", pvc.Name, err)
	}
	for _, store := range stores {
		keys, err := store.List(ctx, vrg.StorePrefix(group))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(keys).To(BeEmpty(), "store %s holds nothing of the group", store.Name())
	}
}

func TestAPVCWithoutAMatchingReplicationClassIsReported(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)

	// Classes exist for 5s only (created here too, so the test stands alone); the group asks 7s.
	createOrKeep(ctx, g, east, replicationClass("lab-block-5s", "5s"))
	ns := "protect-noclass"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo", Labels: map[string]string{"app": "solo"}},
		Spec:       vrglab.PVCSpec(),
	}
	g.Expect(east.Create(ctx, pvc)).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	group := vrglab.PrimaryVRG(ns, "solo", "solo", "7s", profiles)
	g.Expect(east.Create(ctx, group)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(1))
		c := vrglab.ConditionOf(got.Status.ProtectedPVCs[0].Conditions, v1alpha1.ConditionDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonNoReplicationClass))
		g.Expect(c.Message).To(And(
			ContainSubstring("StorageClass "+lab.BlockStorageClass),
			ContainSubstring("provisioner "+lab.BlockDriver),
			ContainSubstring(`schedulingInterval "7s"`),
			ContainSubstring("create a VolumeReplicationClass"),
		))
		ready := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonNoReplicationClass))
		g.Expect(ready.Message).To(Equal(c.Message))
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateUnknown))
		g.Expect(got.Status.ObservedGeneration).To(BeZero(), "a pass with a PVC that cannot replicate is not a success")
	}).Should(Succeed())
	t.Logf("DataReady of the group without a class: %s", func() string {
		got := &v1alpha1.VolumeReplicationGroup{}
		_ = east.Get(ctx, client.ObjectKeyFromObject(group), got)
		return vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady).Message
	}())

	err := east.Get(ctx, client.ObjectKeyFromObject(pvc), &replicationv1alpha1.VolumeReplication{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no VolumeReplication without a class: %v", err)
	for _, store := range stores {
		keys, err := store.List(ctx, ns+"/solo/pv")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(keys).To(BeEmpty(), "a PVC that cannot replicate has no metadata in store %s", store.Name())
	}

	// Doing what the message says heals the group, without waiting for a periodic retry.
	fixed := time.Now()
	g.Expect(east.Create(ctx, replicationClass("lab-block-7s", "7s"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
		g.Expect(got.Status.ProtectedPVCs[0].ReplicationID).To(Equal("lab-block-7s"))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the class's creation wakes the group, well before the 30 s retry")
	t.Logf("VolumeReplicationClass created → group protected in %s", time.Since(fixed).Round(time.Millisecond))
	for _, store := range stores {
		keys, err := store.List(ctx, dataPrefix(ctx, g, store, group)+"pv")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(keys).To(HaveLen(2), "store %s holds the PV and the PVC", store.Name())
	}

	g.Expect(east.Delete(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pvc), got)).To(Succeed())
		g.Expect(got.Finalizers).NotTo(ContainElement(vrg.PVCFinalizer))
		err := east.Get(ctx, client.ObjectKeyFromObject(group), &v1alpha1.VolumeReplicationGroup{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}).Should(Succeed(), "the group is deleted and its PVC unprotected")
}

func TestAStoreThatRefusesTheCredentialsIsNamedAndTheOthersAreStillWritten(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)

	createOrKeep(ctx, g, east, replicationClass("lab-block-5s", "5s"))
	ns := "protect-badstore"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo", Labels: map[string]string{"app": "solo"}},
		Spec:       vrglab.PVCSpec(),
	}
	g.Expect(east.Create(ctx, pvc)).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	// A third profile: west's server, with a Secret whose secret key is wrong.
	wrong := profiles[1]
	wrong.Name, wrong.SecretRef.Name = "s3-wrong", "s3-wrong"
	good := &corev1.Secret{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: lab.S3SecretNamespace, Name: profiles[1].Name}, good)).To(Succeed())
	g.Expect(east.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: lab.S3SecretNamespace, Name: "s3-wrong"},
		Data: map[string][]byte{
			objectstore.SecretAccessKeyIDKey:     good.Data[objectstore.SecretAccessKeyIDKey],
			objectstore.SecretSecretAccessKeyKey: []byte("not-the-secret"),
			objectstore.SecretStoreKeysKey:       good.Data[objectstore.SecretStoreKeysKey],
			objectstore.SecretStoreKeyIDKey:      good.Data[objectstore.SecretStoreKeyIDKey],
		},
	})).To(Succeed())
	group := vrglab.PrimaryVRG(ns, "solo", "solo", "5s", append(profiles, wrong))
	g.Expect(east.Create(ctx, group)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected).Status).To(Equal(metav1.ConditionTrue))
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(objectstore.ReasonStoreUnauthorized))
		g.Expect(c.Message).To(ContainSubstring("S3 profile s3-wrong"))
		g.Expect(c.Message).To(ContainSubstring("the metadata is written to S3 profiles s3-east, s3-west"))
		g.Expect(got.Status.ObservedGeneration).To(BeZero())
	}).Should(Succeed())
	for _, store := range stores {
		keys, err := store.List(ctx, dataPrefix(ctx, g, store, group)+"pv")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(keys).To(HaveLen(2), "store %s holds the PV and the PVC", store.Name())
	}

	// The group cannot be unprotected while a store refuses: its metadata there must be removed.
	// Dropping the broken profile from the spec lets the deletion finish.
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		got.Spec.S3Profiles = profiles
		g.Expect(east.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}).Should(Succeed(), "without the broken profile the pass succeeds and observedGeneration moves")
	g.Expect(east.Delete(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, client.ObjectKeyFromObject(group), &v1alpha1.VolumeReplicationGroup{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}).Should(Succeed())
}
