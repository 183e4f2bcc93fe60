package vrg_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/agent/webhook"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// podMounting builds a pod that mounts claim.
func podMounting(namespace, name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "lab/idle",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}},
		},
	}
}

// The story of a relocation driven through VolumeReplicationGroups: a StatefulSet writes records
// on east; east's group is demoted with action Relocate while the StatefulSet still runs, and
// waits, naming the pod; once the StatefulSet is scaled to zero, the fence refuses a new pod of
// the PVC, the demotion completes with the final sync, and west's group, promoted with action
// Relocate, restores the PVCs with every record east wrote.
func TestARelocatedStatefulSetLosesNoRecordAndTheFenceRefusesNewPods(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)

	ns := "relocate-sts"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	sts := vrglab.WriterStatefulSet(ns, "db", 2, 100*time.Millisecond)
	g.Expect(east.Create(ctx, sts)).To(Succeed())
	eastGroup := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(2))
		for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
		got = &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
	}).Should(Succeed(), "east's group protects the StatefulSet's 2 PVCs and west's is Secondary")

	handles := map[string]string{}
	eastWriters := map[string]string{}
	g.Eventually(func(g Gomega) {
		for i := range 2 {
			pvcName := fmt.Sprintf("data-db-%d", i)
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvcName}, pvc)).To(Succeed())
			pv := &corev1.PersistentVolume{}
			g.Expect(east.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
			handles[pvcName] = pv.Spec.CSI.VolumeHandle
			pod := &corev1.Pod{}
			g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			eastWriters[pvcName] = storage.WriterID(pod)
			w, ok := vrglab.ImageReport(g, lab.East, pv.Spec.CSI.VolumeHandle).Writer(storage.WriterID(pod))
			g.Expect(ok).To(BeTrue())
			g.Expect(w.LastSeq).To(BeNumerically(">", 10))
		}
	}).Should(Succeed(), "the east writers write")

	// Relocate east → west: east's group is demoted while the StatefulSet still runs.
	const request = "relocate-1"
	relocate := time.Now()
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		got.Spec.ReplicationState, got.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate
		got.Spec.FinalSyncRequest = request
		g.Expect(east.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKeyWithValue(webhook.AnnotationFence, webhook.FenceRelocate))
		c := vrglab.PVCCondition(got, "data-db-0", v1alpha1.ConditionDataReady)
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPVCInUse), c.Message)
		g.Expect(c.Message).To(ContainSubstring("pod " + ns + "/db-0"))
		g.Expect(c.Message).To(ContainSubstring("the workload must be stopped"))
		g.Expect(got.Status.State).NotTo(Equal(v1alpha1.StateSecondary))
		nsObj := &corev1.Namespace{}
		g.Expect(east.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		g.Expect(nsObj.Labels).To(HaveKeyWithValue(webhook.LabelFenced, "true"))
	}).Should(Succeed(), "east's group is fenced and waits, naming the pod that uses the PVC")
	vr := &replicationv1alpha1.VolumeReplication{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-db-0"}, vr)).To(Succeed())
	g.Expect(vr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Primary), "nothing is demoted while a pod uses the PVC")

	stop := time.Now()
	vrglab.ScaleTo(ctx, g, east, client.ObjectKeyFromObject(sts), 0)
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(east.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}).Should(Succeed(), "the StatefulSet's pods are gone")

	err := east.Create(ctx, podMounting(ns, "late", "data-db-0"))
	g.Expect(webhook.IsFenceDenial(err)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("VolumeReplicationGroup " + ns + "/db")))

	var demoted *v1alpha1.VolumeReplicationGroup
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		g.Expect(got.Status.FinalSync).NotTo(BeNil())
		g.Expect(got.Status.FinalSync.Request).To(Equal(request))
		demoted = got
	}).Should(Succeed(), "east's group is Secondary with the final sync")
	t.Logf("relocate: action Relocate → Secondary with the final sync in %s (%s after the StatefulSet was scaled to 0)",
		time.Since(relocate).Round(time.Millisecond), time.Since(stop).Round(time.Millisecond))
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Annotations).NotTo(HaveKey(webhook.AnnotationFence))
		nsObj := &corev1.Namespace{}
		g.Expect(east.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		g.Expect(nsObj.Labels).To(HaveKeyWithValue(webhook.LabelFenced, "true"), "a secondary group keeps its namespace fenced")
	}).Should(Succeed(), "the fence annotation goes once the group is Secondary")
	g.Expect(demoted.Status.ProtectedPVCs).To(HaveLen(2))
	for pvc := range handles {
		vr := &replicationv1alpha1.VolumeReplication{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, vr)).To(Succeed())
		g.Expect(vr.Status.State).To(Equal(replicationv1alpha1.SecondaryState))
		g.Expect(vr.Spec.AutoResync).To(BeFalse())
	}
	err = east.Create(ctx, podMounting(ns, "later", "data-db-0"))
	g.Expect(webhook.IsFenceDenial(err)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("VolumeReplicationGroup " + ns + "/db is secondary on this cluster")))

	// West's images hold every record east's writers wrote: the final mirror carried them.
	for pvc, handle := range handles {
		onEast, onWest := vrglab.ImageReport(g, lab.East, handle), vrglab.ImageReport(g, lab.West, handle)
		wrote, ok := onEast.Writer(eastWriters[pvc])
		g.Expect(ok).To(BeTrue())
		diff := records.Compare(onEast, onWest)
		for _, w := range diff.Writers {
			g.Expect(w.OnlyInA).To(BeEmpty(), "%s: west lacks records of %s", pvc, w.Writer)
		}
		kept, ok := onWest.Writer(eastWriters[pvc])
		g.Expect(ok).To(BeTrue())
		g.Expect(kept.Gaps).To(BeEmpty())
		g.Expect(kept.LastSeq).To(Equal(wrote.LastSeq))
		t.Logf("%s: east wrote %d records, west holds %d, lost 0", pvc, wrote.LastSeq, kept.LastSeq)
	}

	// West's group, promoted with action Relocate, restores the PVCs with every record.
	promote := time.Now()
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
		g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		g.Expect(got.Status.State).To(Equal(v1alpha1.StatePrimary))
	}).Should(Succeed(), "west's group restores the PVCs and promotes them")
	t.Logf("relocate: action Relocate on west → Primary in %s", time.Since(promote).Round(time.Millisecond))
	for pvc, handle := range handles {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(corev1.ClaimBound))
		pv := &corev1.PersistentVolume{}
		g.Expect(west.Get(ctx, client.ObjectKey{Name: got.Spec.VolumeName}, pv)).To(Succeed())
		g.Expect(pv.Spec.CSI.VolumeHandle).To(Equal(handle))
		diff := records.Compare(vrglab.ImageReport(g, lab.East, handle), vrglab.ImageReport(g, lab.West, handle))
		var lost []string
		for _, w := range diff.Writers {
			if w.Writer == eastWriters[pvc] && len(w.OnlyInA) > 0 {
				lost = append(lost, fmt.Sprint(w.OnlyInA))
			}
		}
		g.Expect(lost).To(BeEmpty(), "%s: records of the east writer only on east: %s", pvc, strings.Join(lost, ", "))
	}
	notes := vrglab.ExpectEvents(ctx, g, east, eastGroup, v1alpha1.EventFenced, v1alpha1.EventDemoted, v1alpha1.EventFinalSyncCompleted)
	g.Expect(notes[v1alpha1.EventFenced]).To(ContainElement(ContainSubstring("Fenced namespaces " + ns)))
	g.Expect(notes[v1alpha1.EventDemoted]).To(ContainElement(ContainSubstring("Secondary after Relocate")))
	vrglab.ExpectEvents(ctx, g, west, westGroup, v1alpha1.EventPromoted)

	// Settled, east's demoted group receives west's mirrors (the lab storage records each), which
	// change nothing of its VolumeReplication: a secondary reports no sync, as csi-addons, and
	// its sync alone would wake no pass anyway. With nothing left to demote, its passes (its own
	// requeues) neither probe the fence nor
	// read the namespace or its pods from the API server (at 100 groups that was four requests
	// per group per sync), nor patch the group (they set and removed the demotion's time in
	// turn, each patch waking the next pass) or its status (it copied each sync's time, which
	// only the primary's group reports), and the namespace stays fenced.
	g.Eventually(func(g Gomega) {
		before, synced := vrglab.Writes(), demotedSync(ctx, g, east, lab.East, ns, "data-db-0")
		time.Sleep(2 * 3 * time.Second)
		g.Expect(demotedSync(ctx, g, east, lab.East, ns, "data-db-0")).To(BeTemporally(">", synced), "west mirrored to east's demoted PVC")
		g.Expect(vrglab.SettledWork(lab.East, before, vrglab.Writes(), ns)).To(BeEmpty(), "east's settled secondary still checks the fence live or patches itself or its status")
	}).Should(Succeed(), "two intervals in which east's settled secondary neither checks the fence live nor patches itself")
	settled := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), settled)).To(Succeed())
	for _, p := range settled.Status.ProtectedPVCs {
		g.Expect(p.LastSyncTime).To(BeNil(), "a secondary's status reports no sync of PVC %s: the primary's does", p.Name)
	}
	nsObj := &corev1.Namespace{}
	g.Expect(east.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	g.Expect(nsObj.Labels).To(HaveKeyWithValue(webhook.LabelFenced, "true"))
}

// demotedSync is when the peer's last mirror reached a demoted PVC's image, as the lab storage
// records it: a secondary VolumeReplication reports no sync (as csi-addons).
func demotedSync(ctx context.Context, g Gomega, cl client.Client, cluster, ns, pvc string) time.Time {
	claim := &corev1.PersistentVolumeClaim{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, claim)).To(Succeed())
	pv := &corev1.PersistentVolume{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv)).To(Succeed())
	im, err := storage.NewImages(filepath.Join(vrglab.Lab().Dir(), cluster, "storage"), "")
	g.Expect(err).NotTo(HaveOccurred())
	st, err := im.State(pv.Spec.CSI.VolumeHandle)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.LastSyncTime).NotTo(BeNil())
	return *st.LastSyncTime
}
