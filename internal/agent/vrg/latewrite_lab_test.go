package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/s3fault"
	"github.com/drover-io/drover/internal/objectstore"
)

// restoreView is what a restore of the group reads from a store now: the marker names the
// prefix, and ReadMetadata reads it, as the promotion does. The PVCs by name.
func restoreView(ctx context.Context, g Gomega, store objectstore.Store, group *v1alpha1.VolumeReplicationGroup) map[string]*corev1.PersistentVolumeClaim {
	_, pvcs, err := vrg.ReadMetadata(ctx, store, dataPrefix(ctx, g, store, group))
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]*corev1.PersistentVolumeClaim{}
	for _, pvc := range pvcs {
		out[pvc.Name] = pvc
	}
	return out
}

// labelPVC sets a label on a PVC.
func labelPVC(ctx context.Context, g Gomega, cl client.Client, ns, name, key, value string) {
	g.Eventually(func(g Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)).To(Succeed())
		pvc.Labels[key] = value
		g.Expect(cl.Update(ctx, pvc)).To(Succeed())
	}).Should(Succeed())
}

// The last store hole of docs/reliability.md: a stale primary whose pass read the marker just
// before the new primary claimed the store writes its metadata once more. East's writes to the
// store go through the lab's fault proxy, which acknowledges them and applies them late: east
// relabels its PVC and its pass writes the metadata, held in flight; west is promoted (east,
// cut off, still holds itself primary), claims the store, relabels the restored PVC and adds
// one; then east's late write lands. What a restore reads is still west's metadata, east finds
// the newer claim and stops, and a failover back to east restores west's metadata, the PVC
// only west had included.
func TestAStalePrimarysLateWriteIsNotWhatAFailoverBackRestores(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	ns := "late-write"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	profiles, stores := vrglab.S3Profiles(g)
	profile, store := profiles[1], stores[1]
	proxy, err := s3fault.Start(profile.Endpoint)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = proxy.Close() }()
	throughProxy := profile
	throughProxy.Endpoint = proxy.URL()

	g.Expect(east.Create(ctx, vrglab.StatefulSet(ns, "db", 1))).To(Succeed())
	eastGroup := vrglab.PrimaryVRG(ns, "db", "db", "3s", []v1alpha1.S3Profile{throughProxy})
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := vrglab.PrimaryVRG(ns, "db", "db", "3s", []v1alpha1.S3Profile{profile})
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(restoreView(ctx, g, store, eastGroup)).To(HaveKey("data-db-0"))
	}).Should(Succeed(), "east protects data-db-0")

	// East's next pass reads the marker, finds itself primary and writes; its writes are held.
	g.Expect(proxy.Set(s3fault.DelayWrites, 0)).To(Succeed())
	labelPVC(ctx, g, east, ns, "data-db-0", "written-by", "east-late")
	g.Eventually(proxy.Delayed).Should(BeNumerically(">", 0), "east's metadata write is in flight")

	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}).Should(Succeed(), "west is promoted while east still holds itself primary")
	labelPVC(ctx, g, west, ns, "data-db-0", "written-by", "west")
	extra := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra",
		Labels: map[string]string{"app": "db"}}, Spec: vrglab.PVCSpec()}
	g.Expect(west.Create(ctx, extra)).To(Succeed())
	g.Eventually(func(g Gomega) {
		view := restoreView(ctx, g, store, westGroup)
		g.Expect(view).To(HaveKey("extra"))
		g.Expect(view["data-db-0"].Labels).To(HaveKeyWithValue("written-by", "west"))
	}).Should(Succeed(), "west's metadata is in the store")

	// East's late write lands.
	g.Expect(proxy.Set(s3fault.None, 0)).To(Succeed())
	g.Expect(proxy.Delayed()).To(BeZero())
	g.Consistently(func(g Gomega) {
		view := restoreView(ctx, g, store, westGroup)
		g.Expect(view).To(HaveKey("extra"))
		g.Expect(view["data-db-0"].Labels).To(HaveKeyWithValue("written-by", "west"), "not east's late write")
	}).WithTimeout(5*time.Second).Should(Succeed(), "what a restore reads is west's metadata")
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(c.Reason).To(BeElementOf(v1alpha1.ReasonStalePrimary, v1alpha1.ReasonSplitBrain), c.Message)
	}).Should(Succeed(), "east finds west's claim and stops writing")

	failBackToEast(ctx, g, east, west, eastGroup, westGroup, ns)
}

// failBackToEast demotes east's stale group (its StatefulSet deleted, its PVC kept), then fails
// over to east: west demoted, east promoted. East's restore creates the PVC only west had, from
// west's metadata.
func failBackToEast(ctx context.Context, g Gomega, east, west client.Client, eastGroup, westGroup *v1alpha1.VolumeReplicationGroup, ns string) {
	g.Expect(client.IgnoreNotFound(east.Delete(ctx, vrglab.StatefulSet(ns, "db", 1)))).To(Succeed())
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	}).WithTimeout(2*time.Minute).Should(Succeed(), "east's group is demoted")
	westPV := &corev1.PersistentVolume{}
	g.Eventually(func(g Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "extra"}, pvc)).To(Succeed())
		g.Expect(west.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, westPV)).To(Succeed())
	}).Should(Succeed())

	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "extra"}, pvc)).To(Succeed())
		g.Expect(pvc.Labels).To(HaveKeyWithValue("app", "db"))
		pv := &corev1.PersistentVolume{}
		g.Expect(east.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
		g.Expect(pv.Spec.CSI.VolumeHandle).To(Equal(westPV.Spec.CSI.VolumeHandle))
	}).WithTimeout(2*time.Minute).Should(Succeed(), "east restores west's metadata, the PVC only west had included")
}
