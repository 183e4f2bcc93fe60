package volsync_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
	"github.com/drover-io/drover/internal/lab/storage/volsync"
)

func rsyncDestination(namespace, name string) *volsyncv1alpha1.ReplicationDestination {
	return &volsyncv1alpha1.ReplicationDestination{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: volsyncv1alpha1.ReplicationDestinationSpec{
			RsyncTLS: &volsyncv1alpha1.ReplicationDestinationRsyncTLSSpec{
				// Reachable from the peer (address.go); ClusterIP, the default, is not.
				ServiceType:          ptr.To(corev1.ServiceTypeLoadBalancer),
				CopyMethod:           volsyncv1alpha1.CopyMethodSnapshot,
				Capacity:             ptr.To(resource.MustParse("1Gi")),
				StorageClassName:     ptr.To(lab.FileStorageClass),
				AccessModes:          []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				MoverSecurityContext: moverUser(),
			},
		},
	}
}

// moverUser is the security context the tests' movers run as: an application's non-root user.
// Without one a mover runs as root without capabilities, which rsync cannot (identity.go).
func moverUser() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](1000)}
}

func rsyncSource(namespace, name, pvc, address, keySecret, manual string) *volsyncv1alpha1.ReplicationSource {
	return &volsyncv1alpha1.ReplicationSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: volsyncv1alpha1.ReplicationSourceSpec{
			SourcePVC: pvc,
			Trigger:   &volsyncv1alpha1.TriggerSpec{Manual: manual},
			RsyncTLS: &volsyncv1alpha1.ReplicationSourceRsyncTLSSpec{
				CopyMethod:           volsyncv1alpha1.CopyMethodSnapshot,
				Address:              ptr.To(address),
				KeySecret:            ptr.To(keySecret),
				MoverSecurityContext: moverUser(),
			},
		},
	}
}

// publishedDestination waits for a destination's address and key Secret.
func publishedDestination(g Gomega, cl client.Client, namespace, name string) (address, keySecret string) {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Eventually(func(g Gomega) {
		g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		g.Expect(rd.Status.RsyncTLS).NotTo(BeNil())
		g.Expect(rd.Status.RsyncTLS.Address).NotTo(BeNil())
		g.Expect(rd.Status.RsyncTLS.KeySecret).NotTo(BeNil())
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the destination publishes an address and a key Secret")
	return *rd.Status.RsyncTLS.Address, *rd.Status.RsyncTLS.KeySecret
}

// copySecret copies a Secret between clusters, as a person or drover distributes the key.
func copySecret(g Gomega, from, to client.Client, namespace, name string) {
	secret := &corev1.Secret{}
	g.Expect(from.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, secret)).To(Succeed())
	g.Expect(to.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: secret.Data,
	})).To(Succeed())
}

func getSource(g Gomega, cl client.Client, namespace, name string) *volsyncv1alpha1.ReplicationSource {
	rs := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, rs)).To(Succeed())
	if rs.Status == nil {
		rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{}
	}
	return rs
}

func triggerManual(g Gomega, cl client.Client, namespace, name, manual string) {
	rs := getSource(g, cl, namespace, name)
	patch := client.MergeFrom(rs.DeepCopy())
	rs.Spec.Trigger = &volsyncv1alpha1.TriggerSpec{Manual: manual}
	g.Expect(cl.Patch(context.Background(), rs, patch)).To(Succeed())
}

// awaitManualSync waits until a source reports the manual trigger served.
func awaitManualSync(g Gomega, cl client.Client, namespace, name, manual string) *volsyncv1alpha1.ReplicationSource {
	var rs *volsyncv1alpha1.ReplicationSource
	g.Eventually(func(g Gomega) {
		rs = getSource(g, cl, namespace, name)
		g.Expect(rs.Status.LastManualSync).To(Equal(manual))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "source %s serves trigger %s", name, manual)
	return rs
}

// latestSnapshot waits for the destination's latest image to be a ready VolumeSnapshot other
// than previous, and returns it.
func latestSnapshot(g Gomega, cl client.Client, namespace, name, previous string) *snapshotv1.VolumeSnapshot {
	vs := &snapshotv1.VolumeSnapshot{}
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		g.Expect(rd.Status.LatestImage).NotTo(BeNil())
		g.Expect(rd.Status.LatestImage.APIGroup).To(Equal(ptr.To(snapshotv1.GroupName)))
		g.Expect(rd.Status.LatestImage.Kind).To(Equal("VolumeSnapshot"))
		g.Expect(rd.Status.LatestImage.Name).NotTo(Equal(previous))
		g.Expect(rd.Status.LastSyncTime).NotTo(BeNil())
		g.Expect(cl.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: rd.Status.LatestImage.Name}, vs)).To(Succeed())
		g.Expect(vs.Status).NotTo(BeNil())
		g.Expect(vs.Status.ReadyToUse).To(Equal(ptr.To(true)))
		g.Expect(vs.Status.BoundVolumeSnapshotContentName).NotTo(BeNil())
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the destination's latest image is a ready snapshot")
	return vs
}

// snapshotDataDir is where a lab snapshot's data lives.
func snapshotDataDir(g Gomega, cl client.Client, cluster string, vs *snapshotv1.VolumeSnapshot) string {
	content := &snapshotv1.VolumeSnapshotContent{}
	g.Expect(cl.Get(context.Background(), client.ObjectKey{Name: *vs.Status.BoundVolumeSnapshotContentName}, content)).To(Succeed())
	g.Expect(content.Spec.Driver).To(Equal(lab.FileDriver))
	g.Expect(content.Status).NotTo(BeNil())
	g.Expect(content.Status.ReadyToUse).To(Equal(ptr.To(true)))
	g.Expect(content.Status.SnapshotHandle).NotTo(BeNil())
	return storage.SnapshotPath(filepath.Join(testLab.Dir(), cluster, "storage"), *content.Status.SnapshotHandle)
}

func TestVolSyncRoundTripDeliversIdenticalDataAndAUsableSnapshot(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)

	address, keySecret, source := volsyncPair(g, east, west, ns)
	g.Expect(address).To(Equal("volsync-db." + ns + ".lab"))
	first := storagetest.Tree{"a.txt": []byte("alpha\n"), "dir/b.bin": storagetest.RandomBytes(g, 1<<20), "dir/sub/c.txt": []byte("gamma\n")}
	storagetest.WriteTree(g, source, first)

	began := time.Now()
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	rs := awaitManualSync(g, east, ns, "db", "first")
	t.Logf("First sync of 1 MB reported by the source after %s (lastSyncDuration %s)",
		time.Since(began).Round(time.Millisecond), rs.Status.LastSyncDuration.Duration)
	g.Expect(rs.Status.LastSyncTime).NotTo(BeNil())
	g.Expect(rs.Status.LastSyncStartTime).To(BeNil(), "VolSync clears lastSyncStartTime when a sync completes")
	g.Expect(rs.Status.LastSyncDuration).NotTo(BeNil())
	g.Expect(apimeta.IsStatusConditionFalse(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)).To(BeTrue())
	g.Expect(apimeta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing).Reason).
		To(Equal(volsyncv1alpha1.SynchronizingReasonManual))

	snap1 := latestSnapshot(g, west, ns, "db", "")
	snap1Data := snapshotDataDir(g, west, lab.West, snap1)
	storagetest.SameTree(g, storagetest.ReadTree(g, snap1Data), first, "the first snapshot")
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")), first, "the destination volume")

	g.Expect(west.Create(ctx, storagetest.RestoredClaim(ns, "restored-first", snap1.Name))).To(Succeed())
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "restored-first")), first, "a PVC restored from the first snapshot")

	second := storagetest.Tree{"a.txt": []byte("alpha, changed\n"), "dir/b.bin": first["dir/b.bin"], "d.txt": []byte("delta\n")}
	g.Expect(os.Remove(filepath.Join(source, "dir/sub/c.txt"))).To(Succeed())
	storagetest.WriteTree(g, source, second)
	triggerManual(g, east, ns, "db", "second")
	awaitManualSync(g, east, ns, "db", "second")

	snap2 := latestSnapshot(g, west, ns, "db", snap1.Name)
	g.Expect(west.Create(ctx, storagetest.RestoredClaim(ns, "restored-second", snap2.Name))).To(Succeed())
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "restored-second")), second, "a PVC restored from the second snapshot")
	g.Eventually(func(g Gomega) {
		err := west.Get(ctx, client.ObjectKeyFromObject(snap1), &snapshotv1.VolumeSnapshot{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the first snapshot is deleted, got %v", err)
		g.Expect(snap1Data).NotTo(BeADirectory())
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the destination keeps only its latest snapshot")
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "restored-first")), first,
		"a volume restored from a deleted snapshot keeps its data")
}

func TestVolSyncSourceWithAWrongKeyIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)

	g.Expect(west.Create(ctx, rsyncDestination(ns, "db"))).To(Succeed())
	address, keySecret := publishedDestination(g, west, ns, "db")
	g.Expect(east.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: keySecret},
		Data:       map[string][]byte{"psk.txt": []byte("volsync:0123456789abcdef")},
	})).To(Succeed())
	g.Expect(east.Create(ctx, storagetest.FileClaim(ns, "db"))).To(Succeed())
	storagetest.WriteTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "db"), storagetest.Tree{"a.txt": []byte("alpha\n")})
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())

	g.Eventually(func(g Gomega) {
		cond := apimeta.FindStatusCondition(getSource(g, east, ns, "db").Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonError))
		g.Expect(cond.Message).To(ContainSubstring("refused the key"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the source reports the refused key")
	rs := getSource(g, east, ns, "db")
	g.Expect(rs.Status.LastManualSync).To(BeEmpty())
	g.Expect(rs.Status.LastSyncTime).To(BeNil())
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, rd)).To(Succeed())
	g.Expect(rd.Status.LatestImage).To(BeNil())
}

func TestVolSyncDestinationRefusesATransferWithAnotherKey(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	west := storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, west)
	g.Expect(west.Create(ctx, rsyncDestination(ns, "db"))).To(Succeed())
	address, _ := publishedDestination(g, west, ns, "db")

	// A sender that skipped the handshake: its transfer arrives with a key of its own.
	transfer := filepath.Join(testLab.Dir(), lab.West, "storage", "volsync", "incoming", address, "rogue-1")
	storagetest.WriteTree(g, filepath.Join(transfer, "data"), storagetest.Tree{"planted.txt": []byte("not yours\n")})
	storagetest.WriteTree(g, transfer, storagetest.Tree{"transfer.json": []byte(fmt.Sprintf(
		`{"source":"elsewhere/%s/rogue","psk":"volsync:00","bytes":10,"startTime":%q}`, ns, time.Now().Format(time.RFC3339Nano)))})

	g.Eventually(func(g Gomega) {
		ack, err := os.ReadFile(filepath.Join(transfer, "ack.json"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(ack)).To(ContainSubstring("does not match"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the destination answers with a refusal")
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Eventually(func(g Gomega) {
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, rd)).To(Succeed())
		cond := apimeta.FindStatusCondition(rd.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonError))
		g.Expect(cond.Message).To(ContainSubstring("Refused a transfer from elsewhere/"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the destination reports the refusal")
	g.Expect(rd.Status.LatestImage).To(BeNil())
	g.Expect(storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst"))).To(BeEmpty())
	g.Expect(filepath.Join(transfer, "data", "planted.txt")).To(BeAnExistingFile(), "a refused transfer is not applied")
}

func TestVolSyncSourceWithoutATriggerSyncsContinuously(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)

	address, keySecret, source := volsyncPair(g, east, west, ns)
	storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": []byte("one\n")})
	rs := rsyncSource(ns, "db", "db", address, keySecret, "")
	rs.Spec.Trigger = nil
	g.Expect(east.Create(ctx, rs)).To(Succeed())

	destination := storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")
	for _, content := range []string{"one\n", "two\n", "three\n"} {
		storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": []byte(content)})
		g.Eventually(func(g Gomega) {
			storagetest.SameTree(g, storagetest.ReadTree(g, destination), storagetest.Tree{"a.txt": []byte(content)}, "the destination volume")
		}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "a change reaches the destination without a trigger")
	}
	rs = getSource(g, east, ns, "db")
	g.Expect(rs.Status.LastSyncTime).NotTo(BeNil())
	g.Expect(rs.Status.LastManualSync).To(BeEmpty())
	g.Expect(apimeta.IsStatusConditionTrue(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)).To(BeTrue())
	// With nothing changed, syncs keep completing one after the other.
	last := rs.Status.LastSyncTime.Time
	for range 2 {
		g.Eventually(func(g Gomega) {
			rs = getSource(g, east, ns, "db")
			g.Expect(rs.Status.LastSyncTime).NotTo(BeNil())
			g.Expect(rs.Status.LastSyncTime.Time).To(BeTemporally(">", last))
		}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "another sync completes without a trigger")
		last = rs.Status.LastSyncTime.Time
	}
}

// holdSource sets or removes the lab's hold on a source's running sync.
func holdSource(g Gomega, cl client.Client, namespace, name string, hold bool) {
	rs := getSource(g, cl, namespace, name)
	patch := client.MergeFrom(rs.DeepCopy())
	if hold {
		metav1.SetMetaDataAnnotation(&rs.ObjectMeta, volsync.AnnotationHoldSync, "true")
	} else {
		delete(rs.Annotations, volsync.AnnotationHoldSync)
	}
	g.Expect(cl.Patch(context.Background(), rs, patch)).To(Succeed())
}

// awaitHeldSync waits until a held source's sync has been sent and applied at the destination.
func awaitHeldSync(g Gomega, cl client.Client, namespace, name string) *volsyncv1alpha1.ReplicationSource {
	var rs *volsyncv1alpha1.ReplicationSource
	g.Eventually(func(g Gomega) {
		rs = getSource(g, cl, namespace, name)
		cond := apimeta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Message).To(ContainSubstring("held by annotation"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "source %s holds a sync it sent", name)
	return rs
}

// As upstream (backube/volsync internal/controller/statemachine/machine.go): a running sync
// has status.lastSyncStartTime and no new lastSyncTime; its completion sets lastSyncTime and
// lastSyncDuration and clears lastSyncStartTime.
func TestVolSyncARunningSyncHasAStartTimeThatItsCompletionClears(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": []byte("one\n")})
	rs := rsyncSource(ns, "db", "db", address, keySecret, "first")
	rs.Annotations = map[string]string{volsync.AnnotationHoldSync: "true"}
	g.Expect(east.Create(ctx, rs)).To(Succeed())

	rs = awaitHeldSync(g, east, ns, "db")
	g.Expect(rs.Status.LastSyncStartTime).NotTo(BeNil(), "a running sync has a start time")
	g.Expect(rs.Status.LastSyncTime).To(BeNil(), "nothing completed yet")
	g.Expect(rs.Status.LastManualSync).To(BeEmpty())
	started := rs.Status.LastSyncStartTime.Time
	g.Expect(apimeta.IsStatusConditionTrue(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)).To(BeTrue())

	holdSource(g, east, ns, "db", false)
	rs = awaitManualSync(g, east, ns, "db", "first")
	g.Expect(rs.Status.LastSyncStartTime).To(BeNil(), "a completed sync clears its start time")
	g.Expect(rs.Status.LastSyncTime).NotTo(BeNil())
	g.Expect(rs.Status.LastSyncTime.Time).NotTo(BeTemporally("<", started), "lastSyncTime is the completion")
	g.Expect(rs.Status.LastSyncDuration).NotTo(BeNil())
	g.Expect(rs.Status.LastSyncTime.Add(-rs.Status.LastSyncDuration.Duration)).To(BeTemporally("~", started, time.Second),
		"lastSyncTime - lastSyncDuration is the start")
	g.Expect(apimeta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing).Reason).
		To(Equal(volsyncv1alpha1.SynchronizingReasonManual))
}

// As upstream: the manual trigger does not interrupt a running sync, and when that sync
// completes lastManualSync becomes the trigger current then. A trigger set after the copy was
// taken is satisfied by a sync that does not hold what was written after it.
func TestVolSyncATriggerSetDuringARunningSyncIsSatisfiedByThatSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	before := storagetest.Tree{"a.txt": []byte("before the trigger\n")}
	storagetest.WriteTree(g, source, before)
	rs := rsyncSource(ns, "db", "db", address, keySecret, "first")
	rs.Annotations = map[string]string{volsync.AnnotationHoldSync: "true"}
	g.Expect(east.Create(ctx, rs)).To(Succeed())
	awaitHeldSync(g, east, ns, "db")

	// Written after the copy, then a new trigger, both while the sync runs.
	after := storagetest.Tree{"a.txt": before["a.txt"], "b.txt": []byte("after the copy\n")}
	storagetest.WriteTree(g, source, after)
	triggerManual(g, east, ns, "db", "second")
	holdSource(g, east, ns, "db", false)

	rs = awaitManualSync(g, east, ns, "db", "second")
	g.Expect(rs.Status.LastSyncStartTime).To(BeNil())
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")), before,
		"the sync that satisfied trigger second copied the volume before the trigger was set")
	g.Expect(apimeta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing).Reason).
		To(Equal(volsyncv1alpha1.SynchronizingReasonManual), "no other sync runs: the trigger is served")

	triggerManual(g, east, ns, "db", "third")
	awaitManualSync(g, east, ns, "db", "third")
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")), after, "a trigger set with no sync running starts one")
}

func TestVolSyncWaitsWhileTheDestinationClusterIsStoppedAndContinuesAfterStart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)

	address, keySecret, source := volsyncPair(g, east, west, ns)
	storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": []byte("before the stop\n")})
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	awaitManualSync(g, east, ns, "db", "first")
	snap1 := latestSnapshot(g, west, ns, "db", "")

	g.Expect(testLab.Stop(lab.West)).To(Succeed())
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = testLab.Start(context.Background(), lab.West)
		}
	})
	second := storagetest.Tree{"a.txt": []byte("while west was stopped\n")}
	storagetest.WriteTree(g, source, second)
	triggerManual(g, east, ns, "db", "second")
	g.Eventually(func(g Gomega) {
		cond := apimeta.FindStatusCondition(getSource(g, east, ns, "db").Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Message).To(ContainSubstring("unreachable"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the source reports the stopped peer")
	g.Expect(getSource(g, east, ns, "db").Status.LastManualSync).To(Equal("first"))

	began := time.Now()
	g.Expect(testLab.Start(ctx, lab.West)).To(Succeed())
	stopped = false
	t.Logf("West started in %s", time.Since(began).Round(time.Millisecond))
	west = storagetest.Client(g, testLab, lab.West)
	awaitManualSync(g, east, ns, "db", "second")
	t.Logf("The sync waiting for west completed %s after its start", time.Since(began).Round(time.Millisecond))
	snap2 := latestSnapshot(g, west, ns, "db", snap1.Name)
	g.Expect(west.Create(ctx, storagetest.RestoredClaim(ns, "restored", snap2.Name))).To(Succeed())
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "restored")), second, "a PVC restored after the restart")
}

// BenchmarkVolSyncRoundTrip measures one manual sync of a 50 MB volume from east to west, from
// the trigger until the source reports it, the destination's snapshot included.
func BenchmarkVolSyncRoundTrip(b *testing.B) {
	const size = 50 << 20
	g := NewWithT(b)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(b, g, east, west)
	g.Expect(west.Create(ctx, rsyncDestination(ns, "db"))).To(Succeed())
	address, keySecret := publishedDestination(g, west, ns, "db")
	copySecret(g, west, east, ns, keySecret)
	g.Expect(east.Create(ctx, storagetest.FileClaim(ns, "db"))).To(Succeed())
	files := storagetest.Tree{}
	for i := range 50 {
		files[fmt.Sprintf("f%02d.bin", i)] = storagetest.RandomBytes(g, size/50)
	}
	storagetest.WriteTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "db"), files)
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "warm-up"))).To(Succeed())
	awaitManualSync(g, east, ns, "db", "warm-up")

	b.SetBytes(size)
	i := 0
	for b.Loop() {
		i++
		trigger := fmt.Sprintf("run-%d", i)
		triggerManual(g, east, ns, "db", trigger)
		rs := awaitManualSync(g, east, ns, "db", trigger)
		b.ReportMetric(rs.Status.LastSyncDuration.Seconds(), "sync-s")
	}
}

// volsyncPair sets up the usual pair in ns: a ReplicationDestination "db" on west with its
// published address, its key Secret copied to east, and a PVC "db" on east. It returns the
// address, the key Secret's name and the directory of the east PVC's volume.
func volsyncPair(g Gomega, east, west client.Client, ns string) (address, keySecret, source string) {
	ctx := context.Background()
	g.Expect(west.Create(ctx, rsyncDestination(ns, "db"))).To(Succeed())
	address, keySecret = publishedDestination(g, west, ns, "db")
	copySecret(g, west, east, ns, keySecret)
	g.Expect(east.Create(ctx, storagetest.FileClaim(ns, "db"))).To(Succeed())
	return address, keySecret, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "db")
}

// As upstream, a destination's address is its Service's: ClusterIP unless
// spec.rsyncTLS.serviceType says otherwise, and a ClusterIP address is not reachable from the
// peer cluster. The source says which setting to choose; with LoadBalancer the pair syncs.
func TestVolSyncAClusterIPDestinationIsUnreachableFromThePeer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	rd := rsyncDestination(ns, "db")
	rd.Spec.RsyncTLS.ServiceType = nil
	g.Expect(west.Create(ctx, rd)).To(Succeed())
	address, keySecret := publishedDestination(g, west, ns, "db")
	g.Expect(address).To(Equal("volsync-db." + ns + ".svc.cluster.local"))
	copySecret(g, west, east, ns, keySecret)
	g.Expect(east.Create(ctx, storagetest.FileClaim(ns, "db"))).To(Succeed())
	data := storagetest.Tree{"a.txt": []byte("alpha\n")}
	storagetest.WriteTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "db"), data)
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		cond := apimeta.FindStatusCondition(getSource(g, east, ns, "db").Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonError))
		g.Expect(cond.Message).To(ContainSubstring("ClusterIP Service address"))
		g.Expect(cond.Message).To(ContainSubstring("set spec.rsyncTLS.serviceType to LoadBalancer"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the source cannot reach a ClusterIP address of the peer")
	g.Expect(getSource(g, east, ns, "db").Status.LastSyncTime).To(BeNil(), "nothing was sent")

	g.Expect(west.Get(ctx, client.ObjectKeyFromObject(rd), rd)).To(Succeed())
	rd.Spec.RsyncTLS.ServiceType = ptr.To(corev1.ServiceTypeLoadBalancer)
	g.Expect(west.Update(ctx, rd)).To(Succeed())
	var lb string
	g.Eventually(func(g Gomega) {
		lb, _ = publishedDestination(g, west, ns, "db")
		g.Expect(lb).To(Equal("volsync-db." + ns + ".lab"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "a LoadBalancer destination publishes its load balancer's address")
	g.Expect(filepath.Join(testLab.Dir(), lab.West, "storage", "volsync", "listeners", address+".json")).NotTo(BeAnExistingFile(),
		"the ClusterIP address is no longer listened at")
	rs := getSource(g, east, ns, "db")
	patch := client.MergeFrom(rs.DeepCopy())
	rs.Spec.RsyncTLS.Address = ptr.To(lb)
	g.Expect(east.Patch(ctx, rs, patch)).To(Succeed())
	awaitManualSync(g, east, ns, "db", "first")
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")), data, "the destination volume")
}

// As upstream, a failing mover is retried: the sync stays running with Synchronizing True
// (SyncInProgress, not Error) and status.latestMoverStatus carries the failure and its log.
func TestVolSyncAFailingMoverIsRetriedAndReportedInLatestMoverStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	address, keySecret, source := volsyncPair(g, east, west, ns)
	storagetest.WriteTree(g, source, storagetest.Tree{"a.txt": []byte("alpha\n")})
	rs := rsyncSource(ns, "db", "db", address, keySecret, "first")
	const logs = `rsync: [sender] opendir "/data" failed: Permission denied (13)`
	rs.Annotations = map[string]string{volsync.AnnotationFailMover: logs}
	g.Expect(east.Create(ctx, rs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		rs = getSource(g, east, ns, "db")
		g.Expect(rs.Status.LatestMoverStatus).NotTo(BeNil())
		g.Expect(rs.Status.LatestMoverStatus.Result).To(Equal(volsyncv1alpha1.MoverResultFailed))
		g.Expect(rs.Status.LatestMoverStatus.Logs).To(Equal(logs))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "the mover's failure is reported")
	cond := apimeta.FindStatusCondition(rs.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonSync), "a failing mover is not a reconcile error")
	g.Expect(rs.Status.LastSyncStartTime).NotTo(BeNil(), "the sync keeps running")
	g.Expect(rs.Status.LastSyncTime).To(BeNil())

	patch := client.MergeFrom(rs.DeepCopy())
	delete(rs.Annotations, volsync.AnnotationFailMover)
	g.Expect(east.Patch(ctx, rs, patch)).To(Succeed())
	rs = awaitManualSync(g, east, ns, "db", "first")
	g.Expect(rs.Status.LatestMoverStatus).To(HaveValue(HaveField("Result", volsyncv1alpha1.MoverResultSuccessful)), "the retried mover succeeded")
}
