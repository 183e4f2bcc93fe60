package vrg

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
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
	// A store that cannot be read may hold a newer primary's claim: the group cannot prove it
	// is the newest primary, so the split brain stops it.
	f.stores["s3-west"].SetError(objectstore.ErrUnreachable)

	res, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(requeueAfterFailure))
	for _, s := range f.stores {
		s.SetError(nil)
		keys, err := s.List(ctx, "app/db/pv")
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

	// Every store read, none holding a newer claim: the group is the newest primary (the
	// other is stopped by the stores' markers), and it writes despite the split brain.
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected).Status).To(Equal(metav1.ConditionTrue))
	for _, s := range f.stores {
		keys, _ := s.List(ctx, "app/db/pv")
		g.Expect(keys).To(HaveLen(2), "store %s", s.Name())
	}

	// Once the storage no longer reports it, the metadata stays written.
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0))})
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected).Status).To(Equal(metav1.ConditionTrue))
	for _, s := range f.stores {
		keys, _ := s.List(ctx, "app/db/pv")
		g.Expect(keys).To(HaveLen(2), "store %s", s.Name())
	}
}

func TestAPrimaryInSplitBrainWhosePeerClaimedANewerEpochReportsItselfStale(t *testing.T) {
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
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	// West was failed over to while east's store was down, and holds only its own claim.
	g.Expect(f.stores["s3-west"].DeletePrefix(ctx, "app/db/")).To(Succeed())
	putMarker(g, f.stores["s3-west"], PrimaryMarker{Cluster: "west", Epoch: 2, Since: metav1.NewTime(t0)})

	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	c := groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonStalePrimary), "the stores tell which primary is stale: %s", c.Message)
	keys, _ := f.stores["s3-west"].List(ctx, "app/db/")
	g.Expect(keys).To(ConsistOf("app/db/"+MarkerKey), "the stale primary writes nothing")
}
