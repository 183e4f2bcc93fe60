package lab_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/story"
)

// The story's workload with its pods as real processes: each pod runs `drover lab writer` on
// the lab kubelet's node, writing into its mounted PVC, and the storage writes nothing on its
// behalf. Protected, failed over with east stopped (losing no more than was written after the
// last group sync), recovered, relocated back (losing nothing), its records judged by the
// story as for pods on fake nodes: no gap, no record from after the cut, every index at most
// its log (a copy of one instant).
func TestAWorkloadOfWriterProcessesFailsOverAndRelocatesWithItsRecords(t *testing.T) {
	for _, c := range []story.Case{
		{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass, Namespace: "app-processes-volrep"},
		// VolSync with writer processes: the e2e subset's placement case (test/e2e).
	} {
		c.Mode, c.Replicas, c.AppProcesses = story.SelfContained, 2, true
		t.Run(c.Policy, func(t *testing.T) {
			g := newG(t)
			ctx := context.Background()
			r := startCase(ctx, g, t, c, nil)
			defer func() {
				g.Expect(r.Close()).To(Succeed())
				story.PrintTable(os.Stderr, r.Steps)
			}()
			runSteps(t, g, func() story.Step { return r.Protect(ctx) })
			expectWriterProcesses(ctx, g, c, lab.East)
			failover := r.Failover(ctx, lab.East)
			g.Expect(failover.Err).NotTo(HaveOccurred(), "failover east→west")
			t.Logf("failover east→west in %s: kept %d, lost %d records, written within %s of the last group sync",
				failover.Duration, failover.Kept, failover.Lost, failover.LossBound.Round(time.Millisecond))
			g.Expect(failover.Kept).To(BeNumerically(">", 0))
			expectWriterProcesses(ctx, g, c, lab.West)
			runSteps(t, g, func() story.Step { return r.Recover(ctx, lab.East) })
			relocate := r.Relocate(ctx, lab.West)
			g.Expect(relocate.Err).NotTo(HaveOccurred(), "relocate west→east")
			t.Logf("relocate west→east in %s: kept %d, lost %d records", relocate.Duration, relocate.Kept, relocate.Lost)
			g.Expect(relocate.Lost).To(BeZero())
			g.Expect(relocate.Kept).To(BeNumerically(">", failover.Kept))
			expectWriterProcesses(ctx, g, c, lab.East)
		})
	}
}

// expectWriterProcesses checks that the application's pods on cluster run on the lab kubelet's
// node as processes of its own (a pid in the kubelet's state), that their status files are the
// process writer's (the volume's mount path, no image handle: the storage's goroutine writer
// names the handle) and running, and that every volume's records hold the index invariant.
func expectWriterProcesses(ctx context.Context, g *WithT, c story.Case, cluster string) {
	lc, err := testLab.Cluster(cluster)
	g.Expect(err).NotTo(HaveOccurred())
	cl := clusterClient(g, cluster)
	pods := &corev1.PodList{}
	g.Expect(cl.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(story.AppLabel))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(int(c.Replicas)))
	state, err := kubelet.ReadState(lc.KubeletStateDir())
	g.Expect(err).NotTo(HaveOccurred())
	pids := map[string]int{}
	for _, p := range state {
		if p.Namespace == c.Namespace && len(p.Containers) == 1 {
			pids[p.Name] = p.Containers[0].PID
		}
	}
	for _, p := range pods.Items {
		g.Expect(p.Spec.NodeName).To(Equal(kubelet.DefaultNodeName), "pod %s runs on the lab kubelet's node", p.Name)
		g.Expect(pids).To(HaveKeyWithValue(p.Name, BeNumerically(">", 0)), "the lab kubelet runs pod %s as a process", p.Name)
		g.Eventually(func(g Gomega) {
			st, err := storage.ReadWriterStatus(lc.StorageDir(), p.Namespace, p.Name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.UID).To(Equal(p.UID))
			g.Expect(st.Running).To(BeTrue())
			g.Expect(st.Volumes).To(HaveLen(1))
			g.Expect(st.Volumes[0]).To(And(HaveField("PVC", "data-"+p.Name), HaveField("Dir", "/data"), HaveField("Handle", "")),
				"pod %s's own process writes its status, not the storage controller", p.Name)
			g.Expect(st.Volumes[0].Written).To(BeNumerically(">", 0))
		}).Should(Succeed())
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	g.Expect(cl.List(ctx, pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(story.AppLabel))).To(Succeed())
	for _, pvc := range pvcs.Items {
		pv := &corev1.PersistentVolume{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
		_, err := records.Verify(storage.VolumePath(lc.StorageDir(), pv.Spec.CSI.VolumeHandle))
		g.Expect(err).NotTo(HaveOccurred(), "the records of %s on %s", pvc.Name, cluster)
	}
}
