package volsynclab_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage"
)

// volumeFill is how much data each volume of the benchmark holds besides the writers' records.
const volumeFill = 50 << 20

// BenchmarkVolSyncRelocate relocates a StatefulSet of 3 writers with 50 MB in each volume from
// east to west with VolSync, the hub's copies done as in the lab test, and reports how long the
// relocation took: from the request to the final sync recorded on east, and to west's PVCs
// restored and Bound. Run it alone, once:
//
//	go test ./internal/agent/vrg -run '^$' -bench BenchmarkVolSyncRelocate -benchtime 1x
func BenchmarkVolSyncRelocate(b *testing.B) {
	g := NewWithT(b)
	g.SetDefaultEventuallyTimeout(3 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := volSyncClient(b, lab.East), volSyncClient(b, lab.West)
	profiles, _ := vrglab.S3Profiles(g)
	for i := range b.N {
		ns := fmt.Sprintf("volsync-bench-%d-%d", time.Now().Unix(), i)
		for _, cl := range []client.Client{east, west} {
			g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		}
		g.Expect(east.Create(ctx, fileStatefulSet(ns, "db", 3))).To(Succeed())
		eastGroup := volSyncVRG(ns, profiles, v1alpha1.ReplicationStatePrimary)
		g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
		westGroup := volSyncVRG(ns, profiles, v1alpha1.ReplicationStateSecondary)
		g.Expect(west.Create(ctx, westGroup)).To(Succeed())
		runningWriters(ctx, g, east, ns, 3)
		for r := range 3 {
			fill := make([]byte, volumeFill)
			_, err := rand.Read(fill)
			g.Expect(err).NotTo(HaveOccurred())
			dir := storage.VolumePath(filepath.Join(vrglab.Lab().Dir(), lab.East, "storage"), pvcImage(ctx, g, east, ns, fmt.Sprintf("data-db-%d", r)))
			g.Expect(os.WriteFile(filepath.Join(dir, "fill.bin"), fill, 0o600)).To(Succeed())
		}
		hubCopy(ctx, g, east, eastGroup, west, westGroup, 3)
		g.Eventually(func(g Gomega) {
			got := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
			g.Expect(got.Status.LastGroupSyncTime).NotTo(BeNil())
		}).Should(Succeed(), "every PVC synced once")

		b.ResetTimer()
		start := time.Now()
		g.Eventually(func(g Gomega) {
			got := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
			got.Spec.ReplicationState, got.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate
			got.Spec.FinalSyncRequest = "bench"
			g.Expect(east.Update(ctx, got)).To(Succeed())
		}).Should(Succeed())
		g.Expect(east.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
			g.Expect(got.FinalSyncComplete()).To(BeTrue())
		}).Should(Succeed(), "east records the final sync")
		finalSync := time.Since(start)
		vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate)
		g.Eventually(func(g Gomega) {
			got := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
			cdr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataReady)
			g.Expect(cdr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cdr.Reason, cdr.Message)
			g.Expect(cdr.ObservedGeneration).To(Equal(got.Generation))
		}).Should(Succeed(), "west restores the PVCs")
		total := time.Since(start)
		b.StopTimer()
		b.ReportMetric(finalSync.Seconds(), "s-final-sync")
		b.ReportMetric(total.Seconds(), "s-relocate")
		b.Logf("3 PVCs × %d MB: relocation request → final sync recorded in %s, → PVCs restored on west in %s",
			volumeFill>>20, finalSync.Round(time.Millisecond), total.Round(time.Millisecond))
		for _, c := range []struct {
			cl    client.Client
			group *v1alpha1.VolumeReplicationGroup
		}{{east, eastGroup}, {west, westGroup}} {
			g.Expect(c.cl.Delete(ctx, c.group.DeepCopy())).To(Succeed())
		}
	}
}
