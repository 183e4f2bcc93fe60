package vrg_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// writeOnTheOldPrimary starts a writer pod on the returned old primary, on the kept PVC of
// handle, waits until the cluster's image holds its records, deletes it, and returns its writer
// ID.
func writeOnTheOldPrimary(ctx context.Context, g Gomega, cl client.Client, ns, handle string) string {
	template := vrglab.WriterStatefulSet(ns, "stray", 1, 100*time.Millisecond).Spec.Template
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray", Labels: template.Labels, Annotations: template.Annotations},
		Spec: template.Spec}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}}}
	g.Expect(cl.Create(ctx, pod)).To(Succeed())
	var id string
	g.Eventually(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(corev1.PodRunning))
		id = storage.WriterID(got)
		w, ok := vrglab.ImageReport(g, lab.East, handle).Writer(id)
		g.Expect(ok).To(BeTrue())
		g.Expect(w.LastSeq).To(BeNumerically(">", 5))
	}).Should(Succeed(), "a pod on the old primary writes to a kept PVC before the demotion")
	g.Expect(cl.Delete(ctx, pod)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})) }).Should(BeTrue())
	return id
}

// The story of a failover driven through VolumeReplicationGroups: a StatefulSet writes records
// on east, protected by east's primary group; east is lost; west's group, promoted with action
// Failover, restores the PVCs under the StatefulSet's names from the store that survived and
// the StatefulSet runs on west with every record up to the last completed mirror; east returns
// with its PVCs kept, its group demoted with action Failover, and its images resync to west's;
// the StatefulSet fails back to east, which adopts its leftovers; then the whole round repeats,
// so each cluster has been primary twice: east is lost again, west adopts what its first time
// as primary left, and east returns a second time and resyncs.
func TestAFailedOverStatefulSetRunsOnWestAndTheOldPrimaryResyncsWithItsPVCsKept(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	const interval = 3 * time.Second

	ns := "failover-sts"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	g.Expect(east.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 3, 100*time.Millisecond))).To(Succeed())
	eastGroup := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSecondary))
		g.Expect(vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady).Status).To(Equal(metav1.ConditionUnknown))
	}).Should(Succeed(), "west's group, protecting nothing locally, is Secondary")

	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(3))
		for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
	}).Should(Succeed(), "east's group protects the StatefulSet's 3 PVCs")

	// The PVCs' images and the east writers (records are per pod UID).
	handles := map[string]string{}
	pvcs := &corev1.PersistentVolumeClaimList{}
	g.Expect(east.List(ctx, pvcs, client.InNamespace(ns))).To(Succeed())
	for _, pvc := range pvcs.Items {
		pv := &corev1.PersistentVolume{}
		g.Expect(east.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
		handles[pvc.Name] = pv.Spec.CSI.VolumeHandle
	}
	g.Expect(handles).To(HaveLen(3))
	eastWriters := map[string]string{}
	g.Eventually(func(g Gomega) {
		for i := range 3 {
			pod := &corev1.Pod{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			eastWriters[fmt.Sprintf("data-db-%d", i)] = storage.WriterID(pod)
		}
		// Each east writer's records have reached west in a completed mirror.
		for pvc, writer := range eastWriters {
			w, ok := vrglab.ImageReport(g, lab.West, handles[pvc]).Writer(writer)
			g.Expect(ok).To(BeTrue(), "west's image of %s holds records of %s", pvc, writer)
			g.Expect(w.LastSeq).To(BeNumerically(">", 10))
		}
	}).Should(Succeed(), "the east writers write and their records are mirrored to west")

	// Lose east between two mirrors. Its agent goes first: its API server is about to vanish.
	time.Sleep(interval / 2)
	vrglab.StopAgent(lab.East)
	g.Expect(vrglab.Lab().Stop(lab.East)).To(Succeed())
	lostOnEast, keptOnWest := map[string]records.Report{}, map[string]records.Report{}
	for pvc, handle := range handles {
		lostOnEast[pvc] = vrglab.ImageReport(g, lab.East, handle)
		keptOnWest[pvc] = vrglab.ImageReport(g, lab.West, handle)
	}

	failover := time.Now()
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	var clusterDataReady, dataReady time.Duration
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		if clusterDataReady == 0 && cdr.Status == metav1.ConditionTrue && cdr.ObservedGeneration == got.Generation {
			clusterDataReady = time.Since(failover)
		}
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
		g.Expect(cdr.Message).To(ContainSubstring("from S3 profile s3-west"))
		g.Expect(cdr.Message).To(ContainSubstring("skipped: S3 profile s3-east"), "the unreachable store is named")
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(dr.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
		if dataReady == 0 {
			dataReady = time.Since(failover)
		}
	}).Should(Succeed(), "west's group restores the PVCs and promotes them")
	t.Logf("failover: action Failover → ClusterDataReady in %s, → DataReady (primary) in %s",
		clusterDataReady.Round(time.Millisecond), dataReady.Round(time.Millisecond))

	for pvc, handle := range handles {
		expectRestoredPrimary(g, ctx, west, ns, pvc, handle)

		// West's image holds every record of the east writer up to the last completed mirror,
		// and none after.
		writer := eastWriters[pvc]
		promoted := vrglab.ImageReport(g, lab.West, handle)
		g.Expect(records.Compare(keptOnWest[pvc], promoted).Identical).To(BeTrue(), "promotion changed no record of %s", pvc)
		wrote, _ := lostOnEast[pvc].Writer(writer)
		kept, ok := promoted.Writer(writer)
		g.Expect(ok).To(BeTrue())
		g.Expect(kept.Gaps).To(BeEmpty())
		diff := records.Compare(lostOnEast[pvc], promoted)
		g.Expect(diff.Writers).To(HaveLen(1))
		g.Expect(diff.Writers[0].OnlyInB).To(BeEmpty(), "west has no record east did not write")
		if wrote.LastSeq > kept.LastSeq {
			g.Expect(diff.Writers[0].OnlyInA).To(Equal([]records.Range{{First: kept.LastSeq + 1, Last: wrote.LastSeq}}),
				"what is lost is exactly what east wrote after the last mirror")
		} else {
			g.Expect(diff.Writers[0].OnlyInA).To(BeEmpty())
		}
		t.Logf("%s: east wrote %d records, west kept %d, lost %d written after the last mirror",
			pvc, wrote.LastSeq, kept.LastSeq, wrote.LastSeq-kept.LastSeq)
	}

	g.Expect(west.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 3, 100*time.Millisecond))).To(Succeed())
	g.Eventually(func(g Gomega) {
		for i := range 3 {
			pod := &corev1.Pod{}
			g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(pod.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", fmt.Sprintf("data-db-%d", i))))
			w, ok := vrglab.ImageReport(g, lab.West, handles[fmt.Sprintf("data-db-%d", i)]).Writer(storage.WriterID(pod))
			g.Expect(ok).To(BeTrue())
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
		}
	}).Should(Succeed(), "the StatefulSet runs on west with the restored PVCs and writes")

	// East returns. Its StatefulSet is deleted, its PVCs kept (the default); its group is
	// demoted with action Failover, and nobody deletes a PVC.
	g.Expect(vrglab.Lab().Start(ctx, lab.East)).To(Succeed())
	g.Expect(vrglab.StartAgent(lab.East)).To(Succeed())
	east = vrglab.ClusterClient(t, lab.East)
	g.Expect(east.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())

	// Before its demotion the old primary is written to: a pod started there on a kept PVC (an
	// editor, or a GitOps tool still targeting east; nothing fences a failover's old primary)
	// writes records while east's group is still primary. None may ever reach west.
	strayID := writeOnTheOldPrimary(ctx, g, east, ns, handles["data-db-0"])
	_, onWest := vrglab.ImageReport(g, lab.West, handles["data-db-0"]).Writer(strayID)
	g.Expect(onWest).To(BeFalse(), "a write on the returned old primary reached west before its demotion")
	demoted := time.Now()
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	var waits []string
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		if said := dr.Reason + ": " + dr.Message; dr.Status != metav1.ConditionTrue && !slices.Contains(waits, said) {
			waits = append(waits, said)
		}
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(3))
	}).WithTimeout(3*time.Minute).Should(Succeed(), "east's group reaches Secondary")
	t.Logf("old primary: action Failover (secondary) → Secondary in %s; on the way, DataReady said: %s",
		time.Since(demoted).Round(time.Millisecond), strings.Join(waits, " | "))
	expectPVCsKeptAndResyncing(g, ctx, east, ns, 3)

	// East's images resync to west's: the east writers' logs are identical on both (east's
	// stray records since the failover are discarded), and east holds no record west lacks;
	// the west writers keep writing, so east trails them by at most a mirror.
	g.Eventually(func(g Gomega) {
		for pvc, handle := range handles {
			onEast, onWest := vrglab.ImageReport(g, lab.East, handle), vrglab.ImageReport(g, lab.West, handle)
			diff := records.Compare(onEast, onWest)
			for _, w := range diff.Writers {
				g.Expect(w.OnlyInA).To(BeEmpty(), "%s: east holds records of %s that west lacks", pvc, w.Writer)
				if w.Writer == eastWriters[pvc] {
					g.Expect(w.OnlyInB).To(BeEmpty(), "%s: the east writer's log is identical on both", pvc)
				}
			}
			_, ok := onEast.Writer(eastWriters[pvc])
			g.Expect(ok).To(BeTrue())
		}
	}).WithTimeout(2*time.Minute).Should(Succeed(), "east's images resync to west's")
	for _, c := range []string{lab.West, lab.East} {
		w, held := vrglab.ImageReport(g, c, handles["data-db-0"]).Writer(strayID)
		g.Expect(held).To(BeFalse(), "%s's image of data-db-0 holds %d records the old primary wrote before its demotion", c, w.LastSeq)
	}
	t.Logf("the records written on east before its demotion are on neither cluster after the resync")

	// Fail back to east: west's workload is stopped (its PVCs kept) and west's group demoted;
	// east's group, promoted with action Failover, finds the PVs and PVCs it kept and adopts
	// them instead of reporting conflicts.
	westPods := map[string]string{}
	for i := range 3 {
		pod := &corev1.Pod{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
		westPods[fmt.Sprintf("data-db-%d", i)] = storage.WriterID(pod)
	}
	g.Expect(west.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	}).WithTimeout(3*time.Minute).Should(Succeed(), "west's group reaches Secondary once its pods are gone")

	failback := time.Now()
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
		g.Expect(cdr.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(cdr.Message).To(ContainSubstring("(0 objects created, 6 adopted)"), "east's kept PVs and PVCs are adopted")
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
	}).Should(Succeed(), "east's group adopts its leftovers and is primary again")
	t.Logf("fail back: action Failover on east → ClusterDataReady and DataReady in %s", time.Since(failback).Round(time.Millisecond))

	g.Expect(east.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 3, 100*time.Millisecond))).To(Succeed())
	g.Eventually(func(g Gomega) {
		for i := range 3 {
			pvc := fmt.Sprintf("data-db-%d", i)
			pod := &corev1.Pod{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			onEast := vrglab.ImageReport(g, lab.East, handles[pvc])
			// The west writer's records all came back: its demotion sent a final mirror.
			fromWest, ok := onEast.Writer(westPods[pvc])
			g.Expect(ok).To(BeTrue())
			g.Expect(fromWest.Gaps).To(BeEmpty())
			onWest := vrglab.ImageReport(g, lab.West, handles[pvc])
			wrote, _ := onWest.Writer(westPods[pvc])
			g.Expect(fromWest.LastSeq).To(Equal(wrote.LastSeq), "%s: east has every record the west writer wrote", pvc)
			w, ok := onEast.Writer(storage.WriterID(pod))
			g.Expect(ok).To(BeTrue())
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
		}
	}).Should(Succeed(), "the StatefulSet runs on east again with its adopted PVCs")

	// The second round: east is lost again while its new writers write; west is promoted with
	// action Failover a second time and adopts what its first time as primary left.
	eastWriters2 := map[string]string{}
	g.Eventually(func(g Gomega) {
		for i := range 3 {
			pvc := fmt.Sprintf("data-db-%d", i)
			pod := &corev1.Pod{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			eastWriters2[pvc] = storage.WriterID(pod)
			w, ok := vrglab.ImageReport(g, lab.West, handles[pvc]).Writer(eastWriters2[pvc])
			g.Expect(ok).To(BeTrue(), "west's image of %s holds records of %s", pvc, eastWriters2[pvc])
			g.Expect(w.LastSeq).To(BeNumerically(">", 10))
		}
	}).WithTimeout(90*time.Second).Should(Succeed(), "the second east writers' records are mirrored to west")
	for pvc, writer := range eastWriters2 {
		g.Expect(writer).NotTo(Equal(eastWriters[pvc]), "%s: the second east writer is a new pod", pvc)
	}

	time.Sleep(interval / 2)
	vrglab.StopAgent(lab.East)
	g.Expect(vrglab.Lab().Stop(lab.East)).To(Succeed())
	lostOnEast, keptOnWest = map[string]records.Report{}, map[string]records.Report{}
	for pvc, handle := range handles {
		lostOnEast[pvc] = vrglab.ImageReport(g, lab.East, handle)
		keptOnWest[pvc] = vrglab.ImageReport(g, lab.West, handle)
	}

	failover = time.Now()
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	var adoptedSaid string
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
		g.Expect(cdr.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(cdr.Message).To(ContainSubstring("(0 objects created, 6 adopted)"), "west's kept PVs and PVCs are adopted")
		g.Expect(cdr.Message).To(ContainSubstring("skipped: S3 profile s3-east"), "the unreachable store is named")
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(dr.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
		adoptedSaid = cdr.Message
	}).WithTimeout(90*time.Second).Should(Succeed(), "west's group adopts its leftovers and is primary again")
	t.Logf("second failover: action Failover on west → ClusterDataReady and DataReady in %s; %s",
		time.Since(failover).Round(time.Millisecond), adoptedSaid)

	for pvc, handle := range handles {
		expectRestoredPrimary(g, ctx, west, ns, pvc, handle)

		// West holds every record of the second east writer up to the last completed mirror and
		// none after; the writers of earlier rounds are the same on both.
		writer := eastWriters2[pvc]
		promoted := vrglab.ImageReport(g, lab.West, handle)
		g.Expect(records.Compare(keptOnWest[pvc], promoted).Identical).To(BeTrue(), "promotion changed no record of %s", pvc)
		wrote, _ := lostOnEast[pvc].Writer(writer)
		kept, ok := promoted.Writer(writer)
		g.Expect(ok).To(BeTrue())
		g.Expect(kept.Gaps).To(BeEmpty())
		diff := records.Compare(lostOnEast[pvc], promoted)
		g.Expect(diff.Writers).To(HaveLen(3), "%s: the first east, the west and the second east writer", pvc)
		for _, w := range diff.Writers {
			g.Expect(w.OnlyInB).To(BeEmpty(), "%s: west has no record of %s that east did not write", pvc, w.Writer)
			if w.Writer != writer {
				g.Expect(w.OnlyInA).To(BeEmpty(), "%s: the earlier writer %s is the same on both", pvc, w.Writer)
			} else if wrote.LastSeq > kept.LastSeq {
				g.Expect(w.OnlyInA).To(Equal([]records.Range{{First: kept.LastSeq + 1, Last: wrote.LastSeq}}),
					"what is lost is exactly what east wrote after the last mirror")
			} else {
				g.Expect(w.OnlyInA).To(BeEmpty())
			}
		}
		t.Logf("second failover, %s: east wrote %d records, west kept %d, lost %d written after the last mirror",
			pvc, wrote.LastSeq, kept.LastSeq, wrote.LastSeq-kept.LastSeq)
	}

	g.Expect(west.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 3, 100*time.Millisecond))).To(Succeed())
	westWriters2 := map[string]string{}
	g.Eventually(func(g Gomega) {
		for i := range 3 {
			pvc := fmt.Sprintf("data-db-%d", i)
			pod := &corev1.Pod{}
			g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(pod.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", pvc)))
			w, ok := vrglab.ImageReport(g, lab.West, handles[pvc]).Writer(storage.WriterID(pod))
			g.Expect(ok).To(BeTrue())
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
			westWriters2[pvc] = storage.WriterID(pod)
		}
	}).WithTimeout(90*time.Second).Should(Succeed(), "the StatefulSet runs on west again with its adopted PVCs and writes")

	// East returns a second time: its StatefulSet deleted, its PVCs kept, its group demoted with
	// action Failover, and nobody deletes a PVC.
	g.Expect(vrglab.Lab().Start(ctx, lab.East)).To(Succeed())
	g.Expect(vrglab.StartAgent(lab.East)).To(Succeed())
	east = vrglab.ClusterClient(t, lab.East)
	g.Expect(east.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
	demoted = time.Now()
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	waits = nil
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		if said := dr.Reason + ": " + dr.Message; dr.Status != metav1.ConditionTrue && !slices.Contains(waits, said) {
			waits = append(waits, said)
		}
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(dr.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(3))
	}).WithTimeout(3*time.Minute).Should(Succeed(), "east's group reaches Secondary a second time")
	t.Logf("old primary, second time: action Failover (secondary) → Secondary in %s; on the way, DataReady said: %s",
		time.Since(demoted).Round(time.Millisecond), strings.Join(waits, " | "))
	expectPVCsKeptAndResyncing(g, ctx, east, ns, 3)

	// East's images resync to west's: east holds no record west lacks (the second east writers'
	// stray records are discarded), and every writer but the running west ones is identical.
	g.Eventually(func(g Gomega) {
		for pvc, handle := range handles {
			diff := records.Compare(vrglab.ImageReport(g, lab.East, handle), vrglab.ImageReport(g, lab.West, handle))
			g.Expect(diff.Writers).To(HaveLen(4), "%s: two east writers and two west writers", pvc)
			for _, w := range diff.Writers {
				g.Expect(w.OnlyInA).To(BeEmpty(), "%s: east holds records of %s that west lacks", pvc, w.Writer)
				if w.Writer != westWriters2[pvc] {
					g.Expect(w.OnlyInB).To(BeEmpty(), "%s: the log of %s is identical on both", pvc, w.Writer)
				}
			}
		}
	}).WithTimeout(2*time.Minute).Should(Succeed(), "east's images resync to west's a second time")

	// Every transition is an event on the group that made it.
	notes := vrglab.ExpectEvents(ctx, g, east, eastGroup, v1alpha1.EventProtected, v1alpha1.EventDemoted, v1alpha1.EventPromoted, v1alpha1.EventPVCAdopted)
	g.Expect(notes[v1alpha1.EventPVCAdopted]).To(ContainElement(And(ContainSubstring("PVC "+ns+"/data-db-0"), ContainSubstring("PV pvc-"))),
		"east's fail back names what it adopted")
	g.Expect(notes[v1alpha1.EventDemoted]).To(ContainElement(ContainSubstring("Secondary after Failover")))
	notes = vrglab.ExpectEvents(ctx, g, west, westGroup, v1alpha1.EventPromoted, v1alpha1.EventDemoted, v1alpha1.EventPVCAdopted)
	g.Expect(notes[v1alpha1.EventPromoted]).To(ContainElement(ContainSubstring("Primary after Failover: 3 PVCs")))
	g.Expect(notes).NotTo(HaveKey(v1alpha1.EventProtected), "west never protected without an action")
}

// expectPVCsKeptAndResyncing checks that a demoted old primary kept its want PVCs (nobody
// deleted them) and that each one's VolumeReplication is secondary with autoResync.
func expectPVCsKeptAndResyncing(g Gomega, ctx context.Context, cl client.Client, ns string, want int) {
	pvcs := &corev1.PersistentVolumeClaimList{}
	g.Expect(cl.List(ctx, pvcs, client.InNamespace(ns))).To(Succeed())
	g.Expect(pvcs.Items).To(HaveLen(want), "the old primary's PVCs are kept")
	for _, pvc := range pvcs.Items {
		g.Expect(pvc.DeletionTimestamp).To(BeNil())
		vr := &replicationv1alpha1.VolumeReplication{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(&pvc), vr)).To(Succeed())
		g.Expect(vr.Spec.AutoResync).To(BeTrue())
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
	}
}

// expectRestoredPrimary checks that a promoted cluster's PVC is Bound to a retained PV of its
// replicated image and that its VolumeReplication is primary.
func expectRestoredPrimary(g Gomega, ctx context.Context, cl client.Client, ns, pvc, handle string) {
	got := &corev1.PersistentVolumeClaim{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(corev1.ClaimBound))
	pv := &corev1.PersistentVolume{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: got.Spec.VolumeName}, pv)).To(Succeed())
	g.Expect(pv.Spec.CSI.VolumeHandle).To(Equal(handle), "PVC %s binds to its replicated image", pvc)
	g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))
	vr := &replicationv1alpha1.VolumeReplication{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(got), vr)).To(Succeed())
	g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.PrimaryState))
}
