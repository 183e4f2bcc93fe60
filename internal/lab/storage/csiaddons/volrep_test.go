package csiaddons_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/csiaddons"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// volRepClient returns an administrator client of a lab cluster that knows the replication API.
func volRepClient(g Gomega, cluster string) client.Client {
	return storagetest.Client(g, testLab, cluster)
}

func replicationClass(name string, interval time.Duration) *replicationv1alpha1.VolumeReplicationClass {
	return &replicationv1alpha1.VolumeReplicationClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: replicationv1alpha1.VolumeReplicationClassSpec{
			Provisioner: lab.BlockDriver,
			Parameters:  map[string]string{csiaddons.SchedulingIntervalParameter: interval.String()},
		},
	}
}

func blockPVC(namespace, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(lab.BlockStorageClass),
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
}

// restoredVolume is a PV pre-bound to a PVC that points at an existing image, as a restore
// from metadata creates it on the peer.
func restoredVolume(namespace, pvcName, handle string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	pvc := blockPVC(namespace, pvcName)
	pvc.Spec.VolumeName = handle
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: handle},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              lab.BlockStorageClass,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: pvcName},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: lab.BlockDriver, VolumeHandle: handle,
			}},
		},
	}
	return pv, pvc
}

func volumeReplication(namespace, name, class string, state replicationv1alpha1.ReplicationState) *replicationv1alpha1.VolumeReplication {
	return &replicationv1alpha1.VolumeReplication{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: replicationv1alpha1.VolumeReplicationSpec{
			VolumeReplicationClass: class,
			ReplicationState:       state,
			DataSource:             corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: name},
		},
	}
}

// volumeDir is where a lab cluster keeps the data of the image with handle.
func volumeDir(cluster, handle string) string {
	return storage.VolumePath(filepath.Join(testLab.Dir(), cluster, "storage"), handle)
}

func imageState(g Gomega, cluster, handle string) storage.ImageState {
	im, err := storage.NewImages(filepath.Join(testLab.Dir(), cluster, "storage"), "")
	g.Expect(err).NotTo(HaveOccurred())
	st, err := im.State(handle)
	g.Expect(err).NotTo(HaveOccurred())
	return st
}

// newVolume creates a namespace prefix-<random> with a VolumeReplicationClass of interval on
// east and west, and a lab-block PVC "data" on east; it returns the namespace, the class's name
// and the volume's handle once the PVC is Bound.
func newVolume(g Gomega, ctx context.Context, east, west client.Client, prefix string, interval time.Duration) (ns, class, handle string) {
	ns = prefix + "-" + rand.String(5)
	c := replicationClass("lab-block-"+ns, interval)
	for _, cl := range []client.Client{east, west} {
		createNamespace(g, ctx, cl, ns)
		g.Expect(cl.Create(ctx, c.DeepCopy())).To(Succeed())
	}
	g.Expect(east.Create(ctx, blockPVC(ns, "data"))).To(Succeed())
	return ns, c.Name, boundHandle(g, ctx, east, ns, "data")
}

// mirrored makes east's PVC "data" primary and waits for the storage's first mirror of its
// image (csi-addons reports it in the VolumeReplication's lastSyncTime only at its next refresh,
// which for a class of an hour is half an hour later).
func mirrored(g Gomega, ctx context.Context, east client.Client, ns, class, handle string) {
	g.Expect(east.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(imageState(g, lab.East, handle).LastSyncTime).NotTo(BeNil())
	}).WithTimeout(30*time.Second).Should(Succeed(), "the first mirror")
}

// boundHandle waits for the PVC to be Bound and returns its volume handle.
func boundHandle(g Gomega, ctx context.Context, cl client.Client, namespace, name string) string {
	var handle string
	g.Eventually(func(g Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		pv := &corev1.PersistentVolume{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
		handle = pv.Spec.CSI.VolumeHandle
	}).Should(Succeed(), "PVC %s/%s bound", namespace, name)
	return handle
}

func createNamespace(g Gomega, ctx context.Context, cl client.Client, name string) {
	g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

func writeFile(g Gomega, dir, name, content string) {
	g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600)).To(Succeed())
}

func readFiles(g Gomega, dir string) map[string]string {
	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	files := map[string]string{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
			g.Expect(err).NotTo(HaveOccurred())
			files[e.Name()] = string(raw)
		}
	}
	return files
}

func getVR(g Gomega, ctx context.Context, cl client.Client, namespace, name string) *replicationv1alpha1.VolumeReplication {
	vr := &replicationv1alpha1.VolumeReplication{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vr)).To(Succeed())
	return vr
}

// upstreamReasons are the reasons the csi-addons controller sets, by condition type
// (internal/controller/replication.storage/status.go at d4d7fea4).
var upstreamReasons = map[string][]string{
	replicationv1alpha1.ConditionCompleted:   {"Promoted", "Demoted", "FailedToPromote", "FailedToDemote", "FailedToResync"},
	replicationv1alpha1.ConditionDegraded:    {"Healthy", "VolumeDegraded", "Error"},
	replicationv1alpha1.ConditionResyncing:   {"NotResyncing", "ResyncTriggered", "FailedToResync"},
	replicationv1alpha1.ConditionValidated:   {"PrerequisiteMet", "PrerequisiteNotMet"},
	replicationv1alpha1.ConditionReplicating: {"Replicating", "NotReplicating"},
}

// conditionReason returns a condition's status and reason, once every condition of vr is shown
// to be of a type csi-addons sets, with one of its reasons for that type.
func conditionReason(g Gomega, vr *replicationv1alpha1.VolumeReplication, condType string) string {
	for _, c := range vr.Status.Conditions {
		g.Expect(upstreamReasons[c.Type]).To(ContainElement(c.Reason),
			"VolumeReplication %s/%s: condition %s has reason %q, which csi-addons never sets", vr.Namespace, vr.Name, c.Type, c.Reason)
	}
	c := apimeta.FindStatusCondition(vr.Status.Conditions, condType)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

func conditionMessage(vr *replicationv1alpha1.VolumeReplication, condType string) string {
	if c := apimeta.FindStatusCondition(vr.Status.Conditions, condType); c != nil {
		return c.Message
	}
	return ""
}

func setReplicationState(g Gomega, ctx context.Context, cl client.Client, namespace, name string, state replicationv1alpha1.ReplicationState, autoResync bool) {
	vr := getVR(g, ctx, cl, namespace, name)
	patch := client.MergeFrom(vr.DeepCopy())
	vr.Spec.ReplicationState, vr.Spec.AutoResync = state, autoResync
	g.Expect(cl.Patch(ctx, vr, patch)).To(Succeed())
}

func TestPrimaryMirrorsItsImageToThePeerEveryInterval(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	const interval = 2 * time.Second
	ns, class, handle := newVolume(g, ctx, east, west, "volrep", interval)
	writeFile(g, volumeDir(lab.East, handle), "first", "written before protection")

	g.Expect(east.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + csiaddons.ReasonPromoted))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + csiaddons.ReasonHealthy))
		g.Expect(vr.Status.LastSyncTime).NotTo(BeNil())
		g.Expect(*vr.Status.LastSyncBytes).To(BeNumerically(">", 0))
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(HaveKeyWithValue("first", "written before protection"))
	}).Should(Succeed(), "the first mirror is taken at once")
	g.Expect(imageState(g, lab.West, handle).Writable()).To(BeFalse(), "the peer's image is a read-only secondary")

	// The delay from a write to its presence on the peer is at most one interval plus the copy.
	written := time.Now()
	writeFile(g, volumeDir(lab.East, handle), "second", "written while protected")
	g.Eventually(func(g Gomega) {
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(HaveKey("second"))
	}).WithTimeout(interval + 10*time.Second).Should(Succeed())
	delay := time.Since(written)
	t.Logf("write-to-peer delay at a %s interval: %s", interval, delay.Round(time.Millisecond))
	g.Expect(delay).To(BeNumerically("<", interval+5*time.Second))

	// Deleting the VolumeReplication disables mirroring: the image is an ordinary volume again.
	g.Expect(east.Delete(ctx, getVR(g, ctx, east, ns, "data"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, &replicationv1alpha1.VolumeReplication{})
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		g.Expect(err).To(HaveOccurred())
	}).Should(Succeed())
	g.Expect(imageState(g, lab.East, handle).Role).To(Equal(storage.RoleNone))
}

// The failover story at the storage level: the primary is lost, the peer is force-promoted
// with the data of the last mirror, the old primary returns as a split brain, is demoted with
// autoResync and converges to the new primary's data; a demotion sends a final mirror so the
// next promotion loses nothing and needs no force.
func TestForcePromotionKeepsTheLastMirrorAndResyncRepairsTheOldPrimary(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(30 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volRepClient(g, lab.East), volRepClient(g, lab.West)
	// An hour: after the first mirror nothing is sent again unless a demotion sends it.
	ns, class, handle := newVolume(g, ctx, east, west, "failover", time.Hour)
	writeFile(g, volumeDir(lab.East, handle), "synced", "before the last mirror")
	mirrored(g, ctx, east, ns, class, handle)
	writeFile(g, volumeDir(lab.East, handle), "unsynced", "after the last mirror")

	g.Expect(testLab.Stop(lab.East)).To(Succeed())
	pv, pvc := restoredVolume(ns, "data", handle)
	g.Expect(west.Create(ctx, pv)).To(Succeed())
	g.Expect(west.Create(ctx, pvc)).To(Succeed())
	boundHandle(g, ctx, west, ns, "data")
	g.Expect(west.Create(ctx, volumeReplication(ns, "data", class, replicationv1alpha1.Primary))).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, west, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + csiaddons.ReasonPromoted))
		g.Expect(conditionMessage(vr, replicationv1alpha1.ConditionCompleted)).To(ContainSubstring("retried with force"))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + csiaddons.ReasonHealthy))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionReplicating)).To(Equal("Unknown/" + csiaddons.ReasonReplicating))
	}).Should(Succeed(), "west is force-promoted while east is down")
	g.Expect(readFiles(g, volumeDir(lab.West, handle))).To(Equal(map[string]string{"synced": "before the last mirror"}),
		"west holds everything up to the last mirror and nothing after")
	writeFile(g, volumeDir(lab.West, handle), "west", "written on the new primary")

	g.Expect(testLab.Start(ctx, lab.East)).To(Succeed())
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(vr.Status.ObservedGeneration).To(Equal(vr.Generation))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/"+csiaddons.ReasonHealthy), "csi-addons never reports a primary Degraded but for a failed promotion")
	}).Should(Succeed(), "the returning old primary reports itself a healthy primary")
	g.Consistently(func(g Gomega) {
		g.Expect(readFiles(g, volumeDir(lab.West, handle))).NotTo(HaveKey("unsynced"))
	}).WithTimeout(2*time.Second).Should(Succeed(), "and mirrors nothing over west")

	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Secondary, true)
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionResyncing)).To(Equal("True/"+csiaddons.ReasonResyncTriggered), "a secondary of a live primary replays it and is never reported ready")
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("True/" + csiaddons.ReasonVolumeDegraded))
		g.Expect(readFiles(g, volumeDir(lab.East, handle))).To(Equal(readFiles(g, volumeDir(lab.West, handle))))
	}).WithTimeout(time.Minute).Should(Succeed(), "the demoted old primary discards its divergence and takes west's data")
	g.Expect(readFiles(g, volumeDir(lab.East, handle))).To(HaveKey("west"))

	// Relocation back: west demotes (a final mirror), then east is promoted without force.
	writeFile(g, volumeDir(lab.West, handle), "final", "written just before the demotion")
	setReplicationState(g, ctx, west, ns, "data", replicationv1alpha1.Secondary, false)
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, west, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionDegraded)).To(Equal("False/" + csiaddons.ReasonHealthy))
	}).Should(Succeed(), "west is demoted and its final mirror sent")
	setReplicationState(g, ctx, east, ns, "data", replicationv1alpha1.Primary, false)
	g.Eventually(func(g Gomega) {
		vr := getVR(g, ctx, east, ns, "data")
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
		g.Expect(conditionReason(g, vr, replicationv1alpha1.ConditionCompleted)).To(Equal("True/" + csiaddons.ReasonPromoted))
		g.Expect(conditionMessage(vr, replicationv1alpha1.ConditionCompleted)).NotTo(ContainSubstring("force"))
	}).Should(Succeed(), "east is promoted without force once west is secondary and synced")
	g.Expect(readFiles(g, volumeDir(lab.East, handle))).To(HaveKeyWithValue("final", "written just before the demotion"),
		"the demotion's final mirror carried the last write")
	fmt.Fprintln(os.Stderr, "volrep failover story done")
}
