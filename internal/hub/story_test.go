package hub_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// app is one application protected by a DRPlacementControl, seen from the test: the hub and
// both managed clusters.
type app struct {
	t        *testing.T
	g        *WithT
	ns       string
	hub      client.Client
	clusters map[string]client.Client
	key      client.ObjectKey
	replicas int
	// down are the clusters this test stopped and has not started again.
	down map[string]bool
}

func newApp(t *testing.T, ns string) *app {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	a := &app{t: t, g: g, ns: ns, hub: h, clusters: map[string]client.Client{}, key: client.ObjectKey{Namespace: ns, Name: "db"}, replicas: 3}
	for _, name := range []string{lab.East, lab.West} {
		cl, err := testLab.Client(name, v1alpha1.AddToScheme, clientgoscheme.AddToScheme)
		g.Expect(err).NotTo(HaveOccurred())
		a.clusters[name] = cl
	}
	g.Expect(h.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	t.Cleanup(a.remove)
	return a
}

// remove unprotects the application once its test has ended and deletes its namespace on the
// managed clusters. The suite's lab is shared by every test: an application left protected
// would go on replicating every interval until the suite ends, and the CPU its mirrors, syncs
// and status updates take slows every later test's, until their groups trail their storage
// (SyncStale) on two cores. It waits up to two minutes for the DRPlacementControl to go (a
// test that failed with a cluster stopped leaves it) and never fails the test.
func (a *app) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	drpc := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: a.key.Namespace, Name: a.key.Name}}
	if err := a.hub.Delete(ctx, drpc); err != nil && !apierrors.IsNotFound(err) {
		a.t.Logf("clean-up: failed to delete DRPlacementControl %s: %v", a.key, err)
	}
	for {
		if err := a.hub.Get(ctx, a.key, &v1alpha1.DRPlacementControl{}); apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			a.t.Logf("clean-up: DRPlacementControl %s is still there after two minutes; its namespaces are deleted anyway", a.key)
			break
		}
		time.Sleep(time.Second)
	}
	for name, c := range a.clusters {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}}
		if err := c.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) && !a.down[name] {
			a.t.Logf("clean-up: failed to delete namespace %s on %s: %v", a.ns, name, err)
		}
	}
}

// drpcFor builds the application's DRPlacementControl preferring east.
func (a *app) drpcFor(placement bool) *v1alpha1.DRPlacementControl {
	d := &v1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.key.Namespace, Name: a.key.Name},
		Spec: v1alpha1.DRPlacementControlSpec{
			DRPolicyRef: v1alpha1.PolicyReference{Name: policyVolRep}, PreferredCluster: lab.East,
			PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		},
	}
	if placement {
		d.Spec.PlacementRef = &v1alpha1.PlacementReference{Kind: "Placement", Name: "db"}
	} else {
		d.Spec.ProtectedNamespaces = []string{a.ns}
	}
	return d
}

func (a *app) drpc(g Gomega) *v1alpha1.DRPlacementControl {
	d := &v1alpha1.DRPlacementControl{}
	g.Expect(a.hub.Get(context.Background(), a.key, d)).To(Succeed())
	return d
}

// cond returns a condition of the DRPlacementControl; Unknown when absent.
func cond(d *v1alpha1.DRPlacementControl, t string) metav1.Condition {
	if c := apimeta.FindStatusCondition(d.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionUnknown}
}

// ask sets the DRPlacementControl's action and its cluster, as a person or the CLI does.
func (a *app) ask(action v1alpha1.DRAction, cluster string) time.Time {
	a.g.Eventually(func(g Gomega) {
		d := a.drpc(g)
		d.Spec.Action = action
		if action == v1alpha1.ActionFailover {
			d.Spec.FailoverCluster = cluster
		} else {
			d.Spec.PreferredCluster = cluster
		}
		g.Expect(a.hub.Update(context.Background(), d)).To(Succeed())
	}).Should(Succeed())
	return time.Now()
}

// settledOn waits until the application runs on cluster in phase, Available, with every
// condition at the current generation.
func (a *app) settledOn(phase v1alpha1.DRPCPhase, cluster string, peerReady bool, msg string) *v1alpha1.DRPlacementControl {
	var out *v1alpha1.DRPlacementControl
	a.g.Eventually(func(g Gomega) {
		d := a.drpc(g)
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.Phase).To(Equal(phase), "progression %s; Available: %s", d.Status.Progression, cond(d, v1alpha1.ConditionAvailable).Message)
		g.Expect(d.Status.CurrentPrimary).To(Equal(cluster))
		av := cond(d, v1alpha1.ConditionAvailable)
		g.Expect(av.Status).To(Equal(metav1.ConditionTrue), av.Message)
		if peerReady {
			pr := cond(d, v1alpha1.ConditionPeerReady)
			g.Expect(pr.Status).To(Equal(metav1.ConditionTrue), pr.Message)
			p := cond(d, v1alpha1.ConditionProtected)
			g.Expect(p.Status).To(Equal(metav1.ConditionTrue), p.Message)
		}
		out = d
	}).Should(Succeed(), msg)
	return out
}

// pvcsProtectedOn waits until the application's PVCs are Bound on cluster, its
// VolumeReplicationGroup there reports every one of them protected, and the DRPlacementControl
// is Protected and PeerReady: a group protected before the StatefulSet made its PVCs is
// Protected by its objects alone, which is no recovery point for the data.
func (a *app) pvcsProtectedOn(cluster string) *v1alpha1.DRPlacementControl {
	a.volumes(cluster)
	var out *v1alpha1.DRPlacementControl
	a.g.Eventually(func(g Gomega) {
		d := a.drpc(g)
		g.Expect(d.Status.VRGs).NotTo(BeEmpty())
		for _, s := range d.Status.VRGs {
			if s.Cluster == cluster {
				g.Expect(s.ProtectedPVCs).To(HaveValue(BeEquivalentTo(a.replicas)))
			}
		}
		for _, ct := range []string{v1alpha1.ConditionProtected, v1alpha1.ConditionPeerReady} {
			c := cond(d, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ct, c.Message)
		}
		out = d
	}).Should(Succeed(), "the StatefulSet's PVCs are protected on %s and the group is Protected once they synced", cluster)
	return out
}

// waitPhase waits until the DRPlacementControl reports phase.
func (a *app) waitPhase(phase v1alpha1.DRPCPhase) {
	a.g.Eventually(func(g Gomega) {
		g.Expect(a.drpc(g).Status.Phase).To(Equal(phase))
	}).Should(Succeed())
}

// volumes returns the image handle of each of the application's PVCs on a cluster.
func (a *app) volumes(cluster string) map[string]string {
	handles := map[string]string{}
	a.g.Eventually(func(g Gomega) {
		for i := range a.replicas {
			pvc := &corev1.PersistentVolumeClaim{}
			name := fmt.Sprintf("data-db-%d", i)
			g.Expect(a.clusters[cluster].Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: name}, pvc)).To(Succeed())
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
			pv := &corev1.PersistentVolume{}
			g.Expect(a.clusters[cluster].Get(context.Background(), client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
			handles[name] = pv.Spec.CSI.VolumeHandle
		}
	}).Should(Succeed(), "the application's PVCs are Bound on %s", cluster)
	return handles
}

// writing waits until the application's pods run on cluster and write records, and returns
// each PVC's writer.
func (a *app) writing(cluster string, handles map[string]string) map[string]string {
	writers := map[string]string{}
	a.g.Eventually(func(g Gomega) {
		for i := range a.replicas {
			pod := &corev1.Pod{}
			g.Expect(a.clusters[cluster].Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			pvc := fmt.Sprintf("data-db-%d", i)
			w, ok := imageReport(g, cluster, handles[pvc]).Writer(storage.WriterID(pod))
			g.Expect(ok).To(BeTrue(), "%s's writer wrote into %s", pod.Name, pvc)
			g.Expect(w.LastSeq).To(BeNumerically(">", 5))
			writers[pvc] = storage.WriterID(pod)
		}
	}).Should(Succeed(), "the application runs on %s and writes", cluster)
	return writers
}

// gone waits until the application's workload is gone from a cluster while its PVCs stay.
func (a *app) gone(cluster string) {
	a.g.Eventually(func(g Gomega) {
		err := a.clusters[cluster].Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: "db"}, &appsv1.StatefulSet{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the StatefulSet is removed from %s", cluster)
		pods := &corev1.PodList{}
		g.Expect(a.clusters[cluster].List(context.Background(), pods, client.InNamespace(a.ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
		for i := range a.replicas {
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(a.clusters[cluster].Get(context.Background(), client.ObjectKey{Namespace: a.ns, Name: fmt.Sprintf("data-db-%d", i)}, pvc)).To(Succeed())
			g.Expect(pvc.DeletionTimestamp.IsZero()).To(BeTrue(), "nobody deletes the StatefulSet's PVCs")
		}
	}).Should(Succeed())
}

// imageReport verifies the records of an image on a cluster's lab storage.
func imageReport(g Gomega, cluster, handle string) records.Report {
	report, err := records.Verify(storage.VolumePath(filepath.Join(testLab.Dir(), cluster, "storage"), handle))
	g.Expect(err).NotTo(HaveOccurred())
	return report
}

// lose stops a cluster, its agent first (its API server is about to vanish), and returns what
// each image held on the lost cluster and on the survivor at that moment.
func (a *app) lose(cluster string, handles map[string]string) (lost, kept map[string]records.Report) {
	survivor := lab.West
	if cluster == lab.West {
		survivor = lab.East
	}
	// Lose the cluster after a group sync that began once the writers had written, so the
	// failover has records to keep.
	since := metav1.NewTime(time.Now().Truncate(time.Second))
	a.g.Eventually(func(g Gomega) {
		vrg := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(a.clusters[cluster].Get(context.Background(), a.key, vrg)).To(Succeed())
		g.Expect(vrg.Status.LastGroupSyncTime).NotTo(BeNil())
		g.Expect(vrg.Status.LastGroupSyncTime.Before(&since)).To(BeFalse())
	}).Should(Succeed(), "a group sync on %s after the writers wrote", cluster)
	if a.down == nil {
		a.down = map[string]bool{}
		// A test that fails with a cluster stopped leaves the lab as it found it.
		a.t.Cleanup(func() {
			for c := range a.down {
				if err := testLab.Start(context.Background(), c); err != nil {
					a.t.Errorf("failed to start %s again: %v", c, err)
				}
				if err := startAgent(c); err != nil {
					a.t.Errorf("failed to start the agent of %s again: %v", c, err)
				}
			}
		})
	}
	a.down[cluster] = true
	stop(cluster)
	a.g.Expect(testLab.Stop(cluster)).To(Succeed())
	lost, kept = map[string]records.Report{}, map[string]records.Report{}
	for pvc, h := range handles {
		lost[pvc], kept[pvc] = imageReport(a.g, cluster, h), imageReport(a.g, survivor, h)
	}
	return lost, kept
}

// restore starts a lost cluster and its agent again.
func (a *app) restore(cluster string) {
	a.g.Expect(testLab.Start(context.Background(), cluster)).To(Succeed())
	a.g.Expect(startAgent(cluster)).To(Succeed())
	delete(a.down, cluster)
}

// expectFailoverKept checks each image promoted on to: it holds the old writers' records up to
// the last completed sync with no gap and nothing they did not write, and reports what was lost.
func (a *app) expectFailoverKept(to string, handles, oldWriters map[string]string, lost map[string]records.Report) {
	for pvc, h := range handles {
		promoted := imageReport(a.g, to, h)
		wrote, _ := lost[pvc].Writer(oldWriters[pvc])
		kept, ok := promoted.Writer(oldWriters[pvc])
		a.g.Expect(ok).To(BeTrue(), "%s on %s holds records of %s", pvc, to, oldWriters[pvc])
		a.g.Expect(kept.Gaps).To(BeEmpty())
		a.g.Expect(kept.LastSeq).To(BeNumerically("<=", wrote.LastSeq))
		for _, w := range records.Compare(lost[pvc], promoted).Writers {
			if w.Writer == oldWriters[pvc] {
				a.g.Expect(w.OnlyInB).To(BeEmpty(), "%s holds no record its writer did not write", pvc)
			}
		}
		a.t.Logf("failover to %s: %s: the writer wrote %d records, %d kept, %d lost after the last sync", to, pvc, wrote.LastSeq, kept.LastSeq, wrote.LastSeq-kept.LastSeq)
	}
}

// expectNothingLost checks that every record the writers of from acknowledged is in the
// images of to.
func (a *app) expectNothingLost(from, to string, handles map[string]string) {
	dataDir := filepath.Join(testLab.Dir(), from, "storage")
	for i := range a.replicas {
		st, err := storage.ReadWriterStatus(dataDir, a.ns, fmt.Sprintf("db-%d", i))
		a.g.Expect(err).NotTo(HaveOccurred())
		a.g.Expect(st.Running).To(BeFalse(), "the writer of db-%d on %s stopped", i, from)
		for _, v := range st.Volumes {
			got, ok := imageReport(a.g, to, handles[v.PVC]).Writer(st.WriterID)
			a.g.Expect(ok).To(BeTrue())
			a.g.Expect(got.Gaps).To(BeEmpty())
			a.g.Expect(got.LastSeq).To(Equal(v.LastSeq), "%s: every record %s acknowledged on %s is on %s", v.PVC, st.WriterID, from, to)
			a.t.Logf("relocate %s → %s: %s: %d records written, %d on %s, lost 0", from, to, v.PVC, v.LastSeq, got.LastSeq, to)
		}
	}
}
