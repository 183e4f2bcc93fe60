package vrg

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

func TestAPrimaryInSplitBrainStopsWritingMetadataAndSaysSo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion, pv.Annotations = "", nil
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Labels, pvc.Finalizers, pvc.ResourceVersion = map[string]string{"app": "db"}, nil, ""
	f := newFixture(t, pv, pvc)
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{
		ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0)),
		SplitBrain: "VolumeReplication app/data-db-0: image pv-0 is primary on both clusters",
	})

	res, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(requeueAfterFailure))
	for _, s := range f.stores {
		keys, err := s.List(ctx, "app/db/")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(keys).To(BeEmpty(), "store %s: a primary in split brain writes no metadata", s.Name())
	}
	got := f.group(g)
	c := groupCondition(g, got, v1alpha1.ConditionClusterDataProtected)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSplitBrain))
	g.Expect(c.Message).To(And(
		ContainSubstring("image pv-0 is primary on both clusters"),
		ContainSubstring("must not overwrite the new primary's metadata"),
		ContainSubstring("demote the stale group")))
	g.Expect(got.Status.ObservedGeneration).NotTo(Equal(got.Generation))

	// Once the storage no longer reports it, the metadata is written again.
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0))})
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected).Status).To(Equal(metav1.ConditionTrue))
	for _, s := range f.stores {
		keys, _ := s.List(ctx, "app/db/")
		g.Expect(keys).To(HaveLen(2), "store %s", s.Name())
	}
}
