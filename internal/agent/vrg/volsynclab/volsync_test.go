package volsynclab_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/agent/webhook"
	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// volSyncClient is a client of a lab cluster that also knows VolSync's and the snapshot API's
// types.
func volSyncClient(t testing.TB, cluster string) client.Client {
	t.Helper()
	cl, err := vrglab.Lab().Client(cluster, v1alpha1.AddToScheme, volsyncv1alpha1.AddToScheme, snapshotv1.AddToScheme, mcsv1alpha1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// fileStatefulSet is a writer StatefulSet whose claims use the lab's file class (VolSync). Its
// pods run as a non-root user, which the group's VolSync movers take
// (internal/agent/vrg/volsync_identity.go).
func fileStatefulSet(namespace, name string, replicas int32) *appsv1.StatefulSet {
	sts := vrglab.WriterStatefulSet(namespace, name, replicas, 100*time.Millisecond)
	sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName = ptr.To(lab.FileStorageClass)
	sts.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptr.To(appUID), RunAsGroup: ptr.To(appUID), FSGroup: ptr.To(appFSGroup),
	}
	return sts
}

// The user and fsGroup of the tests' VolSync applications.
const (
	appUID     int64 = 1000
	appFSGroup int64 = 2000
)

// volSyncVRG is vrglab.PrimaryVRG with the lab's file class replicated by VolSync, every minute (the
// finest VolSync schedule).
func volSyncVRG(namespace string, profiles []v1alpha1.S3Profile, state v1alpha1.ReplicationState) *v1alpha1.VolumeReplicationGroup {
	group := vrglab.PrimaryVRG(namespace, "db", "db", "1m", profiles)
	group.Spec.ReplicationState = state
	group.Spec.StorageClassBackends = []v1alpha1.StorageClassBackend{{StorageClassName: lab.FileStorageClass, Backend: v1alpha1.BackendVolSync}}
	return group
}

// volSyncPair is a primary group on east and a secondary on west protecting a writer
// StatefulSet of the lab's file class, replicated by VolSync every 10 s.
type volSyncPair struct {
	east, west           client.Client
	eastGroup, westGroup *v1alpha1.VolumeReplicationGroup
}

// startVolSyncPair creates namespace ns on both clusters, the StatefulSet db of replicas on
// east and the two groups, changed by mutate (when not nil) before they are created; they are
// deleted when the test ends.
func startVolSyncPair(t *testing.T, g Gomega, ns string, replicas int32, mutate func(*v1alpha1.VolumeReplicationGroup)) volSyncPair {
	ctx := context.Background()
	p := volSyncPair{east: volSyncClient(t, lab.East), west: volSyncClient(t, lab.West)}
	for _, cl := range []client.Client{p.east, p.west} {
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	g.Expect(p.east.Create(ctx, fileStatefulSet(ns, "db", replicas))).To(Succeed())
	p.eastGroup = volSyncVRG(ns, profiles, v1alpha1.ReplicationStatePrimary)
	p.westGroup = volSyncVRG(ns, profiles, v1alpha1.ReplicationStateSecondary)
	for _, group := range []*v1alpha1.VolumeReplicationGroup{p.eastGroup, p.westGroup} {
		group.Spec.SchedulingInterval = "10s"
		if mutate != nil {
			mutate(group)
		}
	}
	g.Expect(p.east.Create(ctx, p.eastGroup)).To(Succeed())
	g.Expect(p.west.Create(ctx, p.westGroup)).To(Succeed())
	t.Cleanup(func() {
		_ = p.east.Delete(ctx, p.eastGroup.DeepCopy())
		_ = p.west.Delete(ctx, p.westGroup.DeepCopy())
	})
	return p
}

// hubCopy does for VolSync what the hub does between a primary's and a secondary's groups (the
// contract in internal/replication/volsync's package documentation): the primary's VolSync
// protectedPVCs become the secondary's receivePVCs; once the secondary reports want
// destinations, they become the primary's destinations. The key Secrets are not copied: the
// primary's agent makes each from the group's stores, where the secondary's agent wrote it.
func hubCopy(ctx context.Context, g Gomega, primary client.Client, pGroup *v1alpha1.VolumeReplicationGroup,
	secondary client.Client, sGroup *v1alpha1.VolumeReplicationGroup, want int) {
	hubReceive(ctx, g, primary, pGroup, secondary, sGroup, want)
	hubSend(ctx, g, primary, pGroup, secondary, sGroup, want)
}

// hubReceive is the first half of hubCopy: the primary's VolSync protectedPVCs become the
// secondary's receivePVCs.
func hubReceive(ctx context.Context, g Gomega, primary client.Client, pGroup *v1alpha1.VolumeReplicationGroup,
	secondary client.Client, sGroup *v1alpha1.VolumeReplicationGroup, want int) {
	var receive []v1alpha1.VolSyncReceivePVC
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(primary.Get(ctx, client.ObjectKeyFromObject(pGroup), got)).To(Succeed())
		receive = nil
		for _, p := range got.Status.ProtectedPVCs {
			if p.Backend != v1alpha1.BackendVolSync {
				continue
			}
			g.Expect(p.Capacity).NotTo(BeNil())
			receive = append(receive, v1alpha1.VolSyncReceivePVC{
				PVCNamespace: p.Namespace, PVCName: p.Name, StorageClassName: p.StorageClassName,
				AccessModes: p.AccessModes, Capacity: *p.Capacity, MoverSecurityContext: p.MoverSecurityContext,
			})
		}
		g.Expect(receive).To(HaveLen(want))
	}).Should(Succeed(), "the primary reports its VolSync PVCs")
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(secondary.Get(ctx, client.ObjectKeyFromObject(sGroup), got)).To(Succeed())
		if got.Spec.VolSync == nil {
			got.Spec.VolSync = &v1alpha1.VolSyncSpec{}
		}
		got.Spec.VolSync.ReceivePVCs = receive
		g.Expect(secondary.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
}

// hubSend is the second half of hubCopy: the secondary's destinations go to the primary, whose
// agent then holds each destination's key Secret, equal to the secondary's, without anyone
// copying it.
func hubSend(ctx context.Context, g Gomega, primary client.Client, pGroup *v1alpha1.VolumeReplicationGroup,
	secondary client.Client, sGroup *v1alpha1.VolumeReplicationGroup, want int) {
	var dests []v1alpha1.VolSyncDestination
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(secondary.Get(ctx, client.ObjectKeyFromObject(sGroup), got)).To(Succeed())
		dests = got.Status.VolSyncDestinations
		g.Expect(dests).To(HaveLen(want))
	}).Should(Succeed(), "the secondary reports a destination per PVC")
	setDestinations(ctx, g, primary, pGroup, dests)
	for _, d := range dests {
		g.Expect(d.KeySecretName).To(Equal(volsync.KeySecretName(sGroup.Name, d.PVCName)), "the key Secret's name is derived from the group and the PVC")
		g.Eventually(func(g Gomega) {
			key, have := &corev1.Secret{}, &corev1.Secret{}
			g.Expect(secondary.Get(ctx, client.ObjectKey{Namespace: d.PVCNamespace, Name: d.KeySecretName}, key)).To(Succeed())
			g.Expect(primary.Get(ctx, client.ObjectKey{Namespace: d.PVCNamespace, Name: d.KeySecretName}, have)).To(Succeed())
			g.Expect(have.Data[volsync.PSKKey]).To(Equal(key.Data[volsync.PSKKey]), "the primary's key is the secondary's")
		}).Should(Succeed(), "the primary's agent makes the key Secret of %s/%s from the stores", d.PVCNamespace, d.PVCName)
	}
}

// pvcImage is the lab volume handle of a PVC's PV.
func pvcImage(ctx context.Context, g Gomega, cl client.Client, ns, name string) string {
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)).To(Succeed())
	g.Expect(pvc.Spec.VolumeName).NotTo(BeEmpty(), "PVC %s/%s is bound", ns, name)
	pv := &corev1.PersistentVolume{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
	return pv.Spec.CSI.VolumeHandle
}

// runningWriters waits for the StatefulSet's n pods to run and returns their writer IDs by PVC.
func runningWriters(ctx context.Context, g Gomega, cl client.Client, ns string, n int) map[string]string {
	writers := map[string]string{}
	g.Eventually(func(g Gomega) {
		for i := range n {
			pod := &corev1.Pod{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			writers[fmt.Sprintf("data-db-%d", i)] = storage.WriterID(pod)
		}
	}).Should(Succeed(), "the StatefulSet's pods run")
	return writers
}

// volumeWatch records, from a watch, the PVCs created in a namespace and the last state of each
// PV before it was deleted.
type volumeWatch struct {
	mu      sync.Mutex
	pvcs    []string
	lastPVs map[string]corev1.PersistentVolume
	deleted []string
}

func watchVolumes(ctx context.Context, t *testing.T, g Gomega, cluster, ns string) *volumeWatch {
	c, err := vrglab.Lab().Cluster(cluster)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	wc, err := client.NewWithWatch(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	pvcs, err := wc.Watch(ctx, &corev1.PersistentVolumeClaimList{}, client.InNamespace(ns))
	g.Expect(err).NotTo(HaveOccurred())
	pvs, err := wc.Watch(ctx, &corev1.PersistentVolumeList{})
	g.Expect(err).NotTo(HaveOccurred())
	w := &volumeWatch{lastPVs: map[string]corev1.PersistentVolume{}}
	go func() {
		for e := range pvcs.ResultChan() {
			if pvc, ok := e.Object.(*corev1.PersistentVolumeClaim); ok && e.Type == watch.Added {
				w.mu.Lock()
				w.pvcs = append(w.pvcs, pvc.Name)
				w.mu.Unlock()
			}
		}
	}()
	go func() {
		for e := range pvs.ResultChan() {
			pv, ok := e.Object.(*corev1.PersistentVolume)
			if !ok {
				continue
			}
			w.mu.Lock()
			if e.Type == watch.Deleted {
				w.deleted = append(w.deleted, pv.Name)
			} else {
				w.lastPVs[pv.Name] = *pv
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { pvcs.Stop(); pvs.Stop() })
	return w
}

func (w *volumeWatch) sawPVC(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.pvcs, name)
}

func (w *volumeWatch) lastPV(name string) (corev1.PersistentVolume, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pv, ok := w.lastPVs[name]
	return pv, ok
}

// expectNoVolSyncObjects checks that no ReplicationSource or ReplicationDestination of kind is
// left in a namespace.
func countVolSync(ctx context.Context, g Gomega, cl client.Client, ns string) (sources, destinations []string) {
	rss := &volsyncv1alpha1.ReplicationSourceList{}
	g.Expect(cl.List(ctx, rss, client.InNamespace(ns))).To(Succeed())
	for _, rs := range rss.Items {
		sources = append(sources, rs.Name)
	}
	rds := &volsyncv1alpha1.ReplicationDestinationList{}
	g.Expect(cl.List(ctx, rds, client.InNamespace(ns))).To(Succeed())
	for _, rd := range rds.Items {
		destinations = append(destinations, rd.Name)
	}
	return sources, destinations
}

// The VolSync story, driven through VolumeReplicationGroups with the hub's copies done by the
// test (hubCopy): a StatefulSet of writers on east, its PVCs of the lab's file class replicated
// by VolSync to west; east is lost and west's group, promoted with action Failover, restores
// the PVCs from the latest snapshots with every record up to the last sync; east returns, its
// StatefulSet's PVCs kept, is demoted with action Failover and becomes the destination,
// receiving into its kept PVCs; the application is relocated back to east with no record lost,
// one PVC deleted by the workload on the way (its final sync runs from a DR-owned PVC bound to
// the retained PV); east replaces the kept PVCs it received into (VolSync's replicas, which a
// cut sync could have left mixed) by PVCs restored from the latest images; east is lost again
// and west, primary a second time, replaces the PVC it kept and received into and restores the
// deleted one, both from the latest images; and unprotecting leaves nothing of VolSync behind.
func TestVolSyncProtectsFailsOverAndRelocatesAStatefulSet(t *testing.T) {
	labtest.LongTier(t, "test/e2e.TestTheWholeStory",
		"the agent's own view of the VolSync story (the e2e slice runs a StatefulSet that keeps its PVCs through the whole story on VolSync, driven by the hub)")
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volSyncClient(t, lab.East), volSyncClient(t, lab.West)

	ns := "volsync-sts"
	for _, cl := range []client.Client{east, west} {
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	g.Expect(east.Create(ctx, fileStatefulSet(ns, "db", 2))).To(Succeed())
	eastGroup := volSyncVRG(ns, profiles, v1alpha1.ReplicationStatePrimary)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := volSyncVRG(ns, profiles, v1alpha1.ReplicationStateSecondary)
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())

	// (a) Protect. Without a destination, east's PVCs are writable and say what they wait for.
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(2))
		g.Expect(vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady).Status).To(Equal(metav1.ConditionTrue))
		dp := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected)
		g.Expect(dp.Reason).To(Equal(v1alpha1.ReasonVolSyncDestinationUnknown), dp.Message)
		g.Expect(dp.Message).To(ContainSubstring("spec.volSync.destinations has no entry"))
	}).Should(Succeed(), "east's PVCs wait for their destinations")
	protect := time.Now()
	hubCopy(ctx, g, east, eastGroup, west, westGroup, 2)
	eastWriters := runningWriters(ctx, g, east, ns, 2)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
		g.Expect(got.Status.LastGroupSyncTime).NotTo(BeNil())
		for pvc, writer := range eastWriters {
			rs := &volsyncv1alpha1.ReplicationSource{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rs)).To(Succeed())
			g.Expect(rs.Spec.Trigger.Schedule).To(HaveValue(Equal("*/1 * * * *")))
			g.Expect(rs.Spec.RsyncTLS.CopyMethod).To(Equal(volsyncv1alpha1.CopyMethodSnapshot))
			rd := &volsyncv1alpha1.ReplicationDestination{}
			g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
			g.Expect(rd.Spec.RsyncTLS.VolumeSnapshotClassName).To(HaveValue(Equal(lab.FileSnapshotClass)))
			g.Expect(rd.Status.LatestImage).NotTo(BeNil())
			w, ok := vrglab.ImageReport(g, lab.West, pvcImage(ctx, g, west, ns, "volsync-"+pvc+"-dst")).Writer(writer)
			g.Expect(ok).To(BeTrue(), "west's destination of %s holds records of %s", pvc, writer)
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
		}
	}).Should(Succeed(), "east's PVCs sync to west's destinations and the records reach west")
	t.Logf("protect: destinations given → east's records on west in %s", time.Since(protect).Round(time.Millisecond))

	// (b) Fail over with east lost.
	eastHandles := map[string]string{}
	for pvc := range eastWriters {
		eastHandles[pvc] = pvcImage(ctx, g, east, ns, pvc)
	}
	vrglab.StopAgent(lab.East)
	g.Expect(vrglab.Lab().Stop(lab.East)).To(Succeed())
	lostOnEast := map[string]records.Report{}
	for pvc, handle := range eastHandles {
		lostOnEast[pvc] = vrglab.ImageReport(g, lab.East, handle)
	}
	failover := time.Now()
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
		g.Expect(cdr.Message).To(ContainSubstring("(2 objects created, 0 adopted)"))
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
		dp := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected)
		g.Expect(dp.Reason).To(Equal(v1alpha1.ReasonVolSyncDestinationUnknown), "with the peer lost, no destination: %s", dp.Message)
		g.Expect(got.Status.VolSyncDestinations).To(BeEmpty(), "a primary receives nothing")
		_, rds := countVolSync(ctx, g, west, ns)
		g.Expect(rds).To(BeEmpty(), "west's destinations are removed once the PVCs are restored")
	}).Should(Succeed(), "west's group restores the PVCs from the latest snapshots")
	t.Logf("failover: action Failover → PVCs restored on west in %s", time.Since(failover).Round(time.Millisecond))
	for pvc, writer := range eastWriters {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(corev1.ClaimBound))
		g.Expect(got.Spec.DataSourceRef).NotTo(BeNil())
		g.Expect(got.Spec.DataSourceRef.Kind).To(Equal("VolumeSnapshot"))
		restored := vrglab.ImageReport(g, lab.West, pvcImage(ctx, g, west, ns, pvc))
		wrote, _ := lostOnEast[pvc].Writer(writer)
		kept, ok := restored.Writer(writer)
		g.Expect(ok).To(BeTrue())
		g.Expect(kept.Gaps).To(BeEmpty())
		g.Expect(kept.LastSeq).To(BeNumerically(">", 0))
		diff := records.Compare(lostOnEast[pvc], restored)
		g.Expect(diff.Writers).To(HaveLen(1))
		g.Expect(diff.Writers[0].OnlyInB).To(BeEmpty(), "west has no record east did not write")
		if wrote.LastSeq > kept.LastSeq {
			g.Expect(diff.Writers[0].OnlyInA).To(Equal([]records.Range{{First: kept.LastSeq + 1, Last: wrote.LastSeq}}),
				"what is lost is exactly what east wrote after the last sync")
		}
		t.Logf("failover, %s: east wrote %d records, west restored %d, lost %d written after the last sync", pvc, wrote.LastSeq, kept.LastSeq, wrote.LastSeq-kept.LastSeq)
	}
	g.Expect(west.Create(ctx, fileStatefulSet(ns, "db", 2))).To(Succeed())
	westWriters := runningWriters(ctx, g, west, ns, 2)

	// East returns; its StatefulSet is deleted, its PVCs kept; it is demoted with action
	// Failover and becomes the destination.
	g.Expect(vrglab.Lab().Start(ctx, lab.East)).To(Succeed())
	g.Expect(vrglab.StartAgent(lab.East)).To(Succeed())
	east = volSyncClient(t, lab.East)
	g.Expect(east.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
	demoted := time.Now()
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		sources, _ := countVolSync(ctx, g, east, ns)
		g.Expect(sources).To(BeEmpty(), "the old primary's sources are removed")
	}).Should(Succeed())
	hubCopy(ctx, g, west, westGroup, east, eastGroup, 2)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		for pvc := range eastWriters {
			rd := &volsyncv1alpha1.ReplicationDestination{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
			g.Expect(rd.Spec.RsyncTLS.DestinationPVC).To(HaveValue(Equal(pvc)), "east receives into its kept PVC")
			kept := &corev1.PersistentVolumeClaim{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, kept)).To(Succeed())
			g.Expect(kept.DeletionTimestamp).To(BeNil())
			g.Expect(pvcImage(ctx, g, east, ns, pvc)).To(Equal(eastHandles[pvc]), "the kept PVC is east's own volume")
			w, ok := vrglab.ImageReport(g, lab.East, eastHandles[pvc]).Writer(westWriters[pvc])
			g.Expect(ok).To(BeTrue(), "east's kept %s holds records of the west writer", pvc)
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
		}
		wg := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), wg)).To(Succeed())
		dr := vrglab.ConditionOf(wg.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(wg.Status.State).To(Equal(v1alpha1.StatePrimary))
	}).Should(Succeed(), "east is the destination, receiving west's data into its kept PVCs")
	t.Logf("old primary: action Failover → destination receiving into its kept PVCs in %s", time.Since(demoted).Round(time.Millisecond))

	// (c) Relocate west → east; the workload deletes one of its PVCs on the way.
	watched := watchVolumes(ctx, t, g, lab.West, ns)
	westHandles := map[string]string{}
	for pvc := range westWriters {
		westHandles[pvc] = pvcImage(ctx, g, west, ns, pvc)
	}
	deletedPVC := &corev1.PersistentVolumeClaim{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-1"}, deletedPVC)).To(Succeed())
	deletedPV := deletedPVC.Spec.VolumeName
	const request = "relocate-1"
	relocate := time.Now()
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		got.Spec.ReplicationState, got.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate
		got.Spec.FinalSyncRequest = request
		g.Expect(west.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	// The workload goes once the agent acts on the relocation (as the hub orders it): a PVC
	// deleted before would be released as a scale-down of the primary.
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKeyWithValue(webhook.AnnotationFence, webhook.FenceRelocate))
	}).Should(Succeed(), "west's group is fenced for the relocation")
	g.Expect(west.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
	g.Expect(west.Delete(ctx, deletedPVC)).To(Succeed())
	var wroteOnWest map[string]records.Report
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKey(vrg.AnnotationDemotedAt), "the consumer check passed behind the fence")
		// Nothing writes any more: the writers' logs are final.
		wroteOnWest = map[string]records.Report{}
		for pvc, handle := range westHandles {
			wroteOnWest[pvc] = vrglab.ImageReport(g, lab.West, handle)
		}
	}).Should(Succeed(), "west's workload is stopped and its group fenced")
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		g.Expect(got.Status.FinalSync).NotTo(BeNil())
		g.Expect(got.Status.FinalSync.Request).To(Equal(request))
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	}).Should(Succeed(), "west's group records the final sync and is Secondary")
	t.Logf("relocate: action Relocate → final sync recorded on west in %s", time.Since(relocate).Round(time.Millisecond))
	finalPVC := volsync.FinalSyncPVCName("data-db-1")
	g.Expect(watched.sawPVC(finalPVC)).To(BeTrue(), "a DR-owned PVC carried the final sync of the deleted PVC")
	g.Eventually(func(g Gomega) {
		err := west.Get(ctx, client.ObjectKey{Namespace: ns, Name: finalPVC}, &corev1.PersistentVolumeClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the DR-owned PVC is deleted: %v", err)
		err = west.Get(ctx, client.ObjectKey{Name: deletedPV}, &corev1.PersistentVolume{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the PV, given back its Delete policy and its deleted claim, is reclaimed: %v", err)
	}).Should(Succeed())
	last, ok := watched.lastPV(deletedPV)
	g.Expect(ok).To(BeTrue())
	g.Expect(last.Spec.ClaimRef).NotTo(BeNil())
	g.Expect(last.Spec.ClaimRef.Name).To(Equal("data-db-1"), "the PV's claimRef was restored")
	g.Expect(last.Spec.ClaimRef.UID).To(Equal(deletedPVC.UID))
	g.Expect(last.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete), "the PV's reclaim policy was restored")
	g.Expect(last.Annotations).NotTo(HaveKey(vrg.AnnotationOriginalReclaimPolicy))

	promote := time.Now()
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
		g.Expect(cdr.Message).To(ContainSubstring("(2 objects created, 0 adopted)"), "east restores its replica PVCs from the latest images")
	}).Should(Succeed(), "east's group replaces the PVCs its destinations received into")
	t.Logf("relocate: action Relocate on east → PVCs restored in %s (%s since the relocation began)",
		time.Since(promote).Round(time.Millisecond), time.Since(relocate).Round(time.Millisecond))
	for pvc, handle := range eastHandles {
		g.Expect(pvcImage(ctx, g, east, ns, pvc)).NotTo(Equal(handle), "%s: the replica is replaced, not adopted", pvc)
		eastHandles[pvc] = pvcImage(ctx, g, east, ns, pvc)
	}
	for pvc, handle := range eastHandles {
		onEast := vrglab.ImageReport(g, lab.East, handle)
		wrote, ok := wroteOnWest[pvc].Writer(westWriters[pvc])
		g.Expect(ok).To(BeTrue())
		kept, ok := onEast.Writer(westWriters[pvc])
		g.Expect(ok).To(BeTrue())
		g.Expect(kept.Gaps).To(BeEmpty())
		for _, w := range records.Compare(wroteOnWest[pvc], onEast).Writers {
			g.Expect(w.OnlyInA).To(BeEmpty(), "%s: east lacks records of %s", pvc, w.Writer)
		}
		g.Expect(kept.LastSeq).To(BeNumerically(">=", wrote.LastSeq))
		t.Logf("relocate, %s: the west writer wrote %d records, east holds %d, lost 0", pvc, wrote.LastSeq, kept.LastSeq)
	}
	hubCopy(ctx, g, east, eastGroup, west, westGroup, 2)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
		sources, rds := countVolSync(ctx, g, east, ns)
		g.Expect(sources).To(ConsistOf("data-db-0", "data-db-1"))
		g.Expect(rds).To(BeEmpty())
		sources, rds = countVolSync(ctx, g, west, ns)
		g.Expect(sources).To(BeEmpty())
		g.Expect(rds).To(ConsistOf("data-db-0", "data-db-1"))
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, rd)).To(Succeed())
		g.Expect(rd.Spec.RsyncTLS.DestinationPVC).To(HaveValue(Equal("data-db-0")), "west receives into the PVC it kept")
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-1"}, rd)).To(Succeed())
		g.Expect(rd.Spec.RsyncTLS.DestinationPVC).To(BeNil(), "the deleted PVC's destination has a volume of its own")
	}).Should(Succeed(), "east is primary again with sources, west the destination")

	// (d) West becomes primary a second time: the StatefulSet runs on east again, the group's
	// interval drops below a minute (the sources then sync continuously), east is lost, and
	// west's group, promoted with action Failover, replaces the PVC it kept and received into
	// and restores the one the workload deleted, both from their latest snapshots.
	g.Expect(east.Create(ctx, fileStatefulSet(ns, "db", 2))).To(Succeed())
	eastWriters2 := runningWriters(ctx, g, east, ns, 2)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		got.Spec.SchedulingInterval = "10s"
		g.Expect(east.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		for pvc, writer := range eastWriters2 {
			rs := &volsyncv1alpha1.ReplicationSource{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rs)).To(Succeed())
			g.Expect(rs.Spec.Trigger).To(BeNil(), "below a minute the source syncs continuously")
			into := "volsync-" + pvc + "-dst" // VolSync's own volume
			if pvc == "data-db-0" {
				into = pvc // west's kept PVC
			}
			w, ok := vrglab.ImageReport(g, lab.West, pvcImage(ctx, g, west, ns, into)).Writer(writer)
			g.Expect(ok).To(BeTrue(), "west's destination of %s holds records of %s", pvc, writer)
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
		}
	}).Should(Succeed(), "the second east writers' records reach west")
	// Settled, west's relocated secondary receives east's syncs (continuous here). Its kept
	// PVC was demoted in this generation: its passes neither probe the fence nor list the
	// PVC's consumers from the API server (each pass did, five passes a second here, before the
	// agent remembered its demotions), nor patch the group or its status.
	g.Eventually(func(g Gomega) {
		before, received := vrglab.Writes(), destinationSync(ctx, g, west, ns, "data-db-0")
		time.Sleep(2 * 3 * time.Second)
		after := vrglab.Writes()
		g.Expect(destinationSync(ctx, g, west, ns, "data-db-0")).To(BeTemporally(">", received), "east synced to west's destination")
		g.Expect(vrglab.SettledWork(lab.West, before, after, ns)).To(BeEmpty(), "west's settled secondary still checks the fence live or patches itself or its status")
		// Nor do the destination's syncs wake its passes (destinationChangeMatters): each pass
		// reads the key Secret of every PVC it receives (two), forty passes in these two
		// intervals before; what else wakes it (its requeues) is a few.
		read := vrglab.WriteKey{Cluster: lab.West, Namespace: ns, What: "secrets", Read: true}
		g.Expect(after[read]-before[read]).To(BeNumerically("<=", 8), "west's settled secondary passes at its destination's syncs")
	}).Should(Succeed(), "two intervals in which west's settled secondary neither checks the fence live nor patches itself, nor passes at each sync")
	vrglab.StopAgent(lab.East)
	g.Expect(vrglab.Lab().Stop(lab.East)).To(Succeed())
	lostOnEast = map[string]records.Report{}
	for pvc, handle := range eastHandles {
		lostOnEast[pvc] = vrglab.ImageReport(g, lab.East, handle)
	}
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
		g.Expect(cdr.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(cdr.Message).To(ContainSubstring("(2 objects created, 0 adopted)"), "data-db-0 replaced, data-db-1 restored")
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
	}).Should(Succeed(), "west's group restores both PVCs from the latest images")
	g.Expect(pvcImage(ctx, g, west, ns, "data-db-0")).NotTo(Equal(westHandles["data-db-0"]), "west's kept replica is replaced, not adopted")
	for pvc, writer := range eastWriters2 {
		onWest := vrglab.ImageReport(g, lab.West, pvcImage(ctx, g, west, ns, pvc))
		wrote, _ := lostOnEast[pvc].Writer(writer)
		kept, ok := onWest.Writer(writer)
		g.Expect(ok).To(BeTrue())
		g.Expect(kept.Gaps).To(BeEmpty())
		for _, w := range records.Compare(lostOnEast[pvc], onWest).Writers {
			g.Expect(w.OnlyInB).To(BeEmpty(), "%s: west has no record of %s that east did not write", pvc, w.Writer)
			if w.Writer == writer && wrote.LastSeq > kept.LastSeq {
				g.Expect(w.OnlyInA).To(Equal([]records.Range{{First: kept.LastSeq + 1, Last: wrote.LastSeq}}), "%s: only the tail after the last sync is lost", pvc)
			} else {
				g.Expect(w.OnlyInA).To(BeEmpty(), "%s: the log of %s is the same on both", pvc, w.Writer)
			}
		}
		t.Logf("second failover, %s: east wrote %d records, west kept %d", pvc, wrote.LastSeq, kept.LastSeq)
	}
	g.Expect(vrglab.Lab().Start(ctx, lab.East)).To(Succeed())
	g.Expect(vrglab.StartAgent(lab.East)).To(Succeed())
	east = volSyncClient(t, lab.East)
	g.Expect(east.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	hubCopy(ctx, g, west, westGroup, east, eastGroup, 2)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		sources, rds := countVolSync(ctx, g, east, ns)
		g.Expect(sources).To(BeEmpty())
		g.Expect(rds).To(ConsistOf("data-db-0", "data-db-1"))
		wg := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), wg)).To(Succeed())
		g.Expect(vrglab.ConditionOf(wg.Status.Conditions, v1alpha1.ConditionDataProtected).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed(), "east is the destination again and west's PVCs are protected")

	// The VolSync path tells its transitions as the VolRep path does.
	vrglab.ExpectEvents(ctx, g, east, eastGroup, v1alpha1.EventProtected, v1alpha1.EventDemoted, v1alpha1.EventPromoted)
	vrglab.ExpectEvents(ctx, g, west, westGroup, v1alpha1.EventPromoted, v1alpha1.EventDemoted, v1alpha1.EventFenced,
		v1alpha1.EventFinalSyncCompleted, v1alpha1.EventUnfenced)

	// Unprotect both sides: nothing of VolSync is left, the reclaim policies are restored.
	for _, c := range []struct {
		cl    client.Client
		group *v1alpha1.VolumeReplicationGroup
	}{{east, eastGroup}, {west, westGroup}} {
		g.Expect(c.cl.Delete(ctx, c.group.DeepCopy())).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, cl := range []client.Client{east, west} {
			err := cl.Get(ctx, client.ObjectKeyFromObject(eastGroup), &v1alpha1.VolumeReplicationGroup{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the group is gone: %v", err)
			sources, rds := countVolSync(ctx, g, cl, ns)
			g.Expect(sources).To(BeEmpty())
			g.Expect(rds).To(BeEmpty())
			for _, pvc := range []string{"data-db-0", "data-db-1"} {
				err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: volsync.KeySecretName("db", pvc)}, &corev1.Secret{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "key Secret of %s: %v", pvc, err)
			}
		}
		for pvc := range eastHandles {
			got := &corev1.PersistentVolumeClaim{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, got)).To(Succeed())
			g.Expect(got.Finalizers).NotTo(ContainElement(vrg.PVCFinalizer))
			pv := &corev1.PersistentVolume{}
			g.Expect(east.Get(ctx, client.ObjectKey{Name: got.Spec.VolumeName}, pv)).To(Succeed())
			g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete))
			g.Expect(pv.Annotations).NotTo(HaveKey(vrg.AnnotationOriginalReclaimPolicy))
		}
	}).Should(Succeed(), "unprotecting removes every VolSync object and restores the reclaim policies")
}

// destinationSync is the last sync a cluster's ReplicationDestination of a PVC reports.
func destinationSync(ctx context.Context, g Gomega, cl client.Client, ns, pvc string) time.Time {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
	g.Expect(rd.Status).NotTo(BeNil())
	g.Expect(rd.Status.LastSyncTime).NotTo(BeNil())
	return rd.Status.LastSyncTime.Time
}
