package vrg_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
)

// ceph-csi releases a secondary's VolumeReplication only while the volume replays a live
// primary; csi-addons otherwise keeps it and the PVC's pvc-protection finalizer, saying nothing.
// In two namespaces west holds a secondary copy of east's volume (a PVC there, demoted by its
// secondary group), and east is lost. In the first, west's group is deleted: its storage keeps
// the VolumeReplication, and the group says so (DataReady ReplicationNotReleased) and what
// releases it; once east is back and primary, west replays it and the group goes. In the
// second, the group is asked to release its volumes as primary before it is deleted (what the
// hub asks of the group holding the last copy): west's agent promotes the VolumeReplication,
// which the storage then releases, and west keeps the data as an ordinary writable volume.
func TestAGroupWhoseStorageKeepsItsSecondaryVolumesSaysSoOrReleasesThemAsPrimary(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	kept, asPrimary := "release-kept", "release-as-primary"
	keptGroup, keptHandle := secondaryCopy(ctx, t, g, kept)
	asPrimaryGroup, asPrimaryHandle := secondaryCopy(ctx, t, g, asPrimary)

	vrglab.StopAgent(lab.East)
	g.Expect(vrglab.Lab().Stop(lab.East)).To(Succeed())
	eastBack := false
	defer func() {
		if !eastBack {
			g.Expect(vrglab.Lab().Start(ctx, lab.East)).To(Succeed())
			g.Expect(vrglab.StartAgent(lab.East)).To(Succeed())
		}
	}()

	// East's store is lost with east: the hub drops its profile from a group it deletes.
	for _, group := range []*v1alpha1.VolumeReplicationGroup{keptGroup, asPrimaryGroup} {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.S3Profiles = slices.DeleteFunc(got.Spec.S3Profiles, func(p v1alpha1.S3Profile) bool { return p.Name == "s3-east" })
		g.Expect(west.Patch(ctx, got, patch)).To(Succeed())
	}
	g.Expect(west.Delete(ctx, keptGroup)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(keptGroup), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonReplicationNotReleased), c.Message)
		g.Expect(c.Message).To(ContainSubstring("VolumeReplication " + kept + "/data"))
		g.Expect(c.Message).To(ContainSubstring("only while it replays its peer's primary"))
	}).Should(Succeed(), "with east lost, west's storage keeps the VolumeReplication, and the group says so")
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: kept, Name: "data"}, pvc)).To(Succeed())
	g.Expect(pvc.Finalizers).To(ContainElement(storage.PVCProtectionFinalizer))

	group := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(west.Get(ctx, client.ObjectKeyFromObject(asPrimaryGroup), group)).To(Succeed())
	patch := client.MergeFrom(group.DeepCopy())
	group.Annotations = map[string]string{v1alpha1.AnnotationUnprotectAsPrimary: "true"}
	g.Expect(west.Patch(ctx, group, patch)).To(Succeed())
	g.Expect(west.Delete(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := west.Get(ctx, client.ObjectKeyFromObject(asPrimaryGroup), &v1alpha1.VolumeReplicationGroup{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred())
	}).Should(Succeed(), "asked to release as primary, west's group goes although east is lost")
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: asPrimary, Name: "data"}, pvc)).To(Succeed())
	g.Expect(pvc.Finalizers).NotTo(ContainElement(storage.PVCProtectionFinalizer))
	g.Expect(imageRole(g, lab.West, asPrimaryHandle)).To(Equal(storage.RoleNone), "west's copy is an ordinary volume")
	data, err := os.ReadFile(filepath.Join(storage.VolumePath(filepath.Join(vrglab.Lab().Dir(), lab.West, "storage"), asPrimaryHandle), "kept"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("written on east"), "and keeps the data")

	g.Expect(vrglab.Lab().Start(ctx, lab.East)).To(Succeed())
	g.Expect(vrglab.StartAgent(lab.East)).To(Succeed())
	eastBack = true
	g.Eventually(func(g Gomega) {
		err := west.Get(ctx, client.ObjectKeyFromObject(keptGroup), &v1alpha1.VolumeReplicationGroup{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred())
	}).Should(Succeed(), "east primary again, west's copy replays it and its group goes")
	g.Expect(imageRole(g, lab.West, keptHandle)).To(Equal(storage.RoleSecondary), "a released secondary stays a mirrored copy until east's mirroring is disabled")
	for _, ns := range []string{kept, asPrimary} {
		g.Expect(east.Delete(ctx, &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
	}
}

// secondaryCopy makes in namespace ns, with the lab's 3 s class, a PVC data on east protected by
// east's primary group db, with a file "kept" written there, and on west a PVC of the same name
// bound to east's replicated image, demoted by west's secondary group db (action Failover). It
// returns west's group and the image's handle once west's copy holds the file.
func secondaryCopy(ctx context.Context, t *testing.T, g Gomega, ns string) (*v1alpha1.VolumeReplicationGroup, string) {
	t.Helper()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", Labels: map[string]string{"app": "db"}}, Spec: vrglab.PVCSpec()}
	g.Expect(east.Create(ctx, pvc)).To(Succeed())
	g.Expect(east.Create(ctx, vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles))).To(Succeed())
	var handle string
	g.Eventually(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pvc), got)).To(Succeed())
		g.Expect(got.Spec.VolumeName).NotTo(BeEmpty())
		handle = got.Spec.VolumeName
		vr := &replicationv1alpha1.VolumeReplication{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pvc), vr)).To(Succeed())
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
	}).Should(Succeed(), "east protects PVC %s/data", ns)
	eastDir := storage.VolumePath(filepath.Join(vrglab.Lab().Dir(), lab.East, "storage"), handle)
	g.Expect(os.WriteFile(filepath.Join(eastDir, "kept"), []byte("written on east"), 0o600)).To(Succeed())

	g.Expect(west.Create(ctx, replicaPV(ns, "data", handle))).To(Succeed())
	westPVC := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", Labels: map[string]string{"app": "db"}}, Spec: vrglab.PVCSpec()}
	westPVC.Spec.VolumeName = handle
	g.Expect(west.Create(ctx, westPVC)).To(Succeed())
	group := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	group.Spec.ReplicationState, group.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover
	g.Expect(west.Create(ctx, group)).To(Succeed())
	westDir := storage.VolumePath(filepath.Join(vrglab.Lab().Dir(), lab.West, "storage"), handle)
	g.Eventually(func(g Gomega) {
		vr := &replicationv1alpha1.VolumeReplication{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, vr)).To(Succeed())
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
		b, err := os.ReadFile(filepath.Join(westDir, "kept"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(b)).To(Equal("written on east"))
	}).Should(Succeed(), "west's PVC in %s is a secondary copy of east's, holding its data", ns)
	return group, handle
}

// imageRole is the role of an image in a lab cluster's storage.
func imageRole(g Gomega, cluster, handle string) storage.ImageRole {
	im, err := storage.NewImages(filepath.Join(vrglab.Lab().Dir(), cluster, "storage"), "")
	g.Expect(err).NotTo(HaveOccurred())
	st, err := im.State(handle)
	g.Expect(err).NotTo(HaveOccurred())
	return st.Role
}

// replicaPV is a PV pre-bound to namespace/name on the lab's block driver, whose volume handle
// is an existing image.
func replicaPV(namespace, name, handle string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: handle},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              lab.BlockStorageClass,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: lab.BlockDriver, VolumeHandle: handle,
			}},
		},
	}
}
