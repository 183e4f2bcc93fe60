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

// The storage reports no split brain (csi-addons forces a promotion while the peer is primary):
// the agent tells it from the stores and its own VolumeReplications. A primary whose store
// shows the peer promoted after it, and whose storage still reports its PVC primary, reports
// SplitBrain and writes nothing; once its PVCs are no longer primary there, it is a stale
// primary (StalePrimary), still writing nothing.
func TestAPrimaryWhosePeerClaimedANewerEpochWhileItsVolumesArePrimaryReportsASplitBrain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion, pv.Annotations = "", nil
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Labels, pvc.Finalizers, pvc.ResourceVersion = map[string]string{"app": "db"}, nil, ""
	f := newFixture(t, pv, pvc)
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{
		ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0)),
		Primary: true,
	})
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	// West was failed over to while east's store was down, and holds only its own claim.
	g.Expect(f.stores["s3-west"].DeletePrefix(ctx, "app/db/")).To(Succeed())
	putMarker(g, f.stores["s3-west"], PrimaryMarker{Cluster: "west", Epoch: 2, Since: metav1.NewTime(t0)})

	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	c := groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSplitBrain), "the stores tell which primary is stale: %s", c.Message)
	g.Expect(c.Message).To(And(
		ContainSubstring("PVCs app/data-db-0 primary (writable) here"),
		ContainSubstring("cluster west was promoted after this group"),
		ContainSubstring("epoch 2")))
	keys, _ := f.stores["s3-west"].List(ctx, "app/db/")
	g.Expect(keys).To(ConsistOf("app/db/"+MarkerKey), "the stale primary writes nothing")

	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0))})
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	c = groupCondition(g, f.group(g), v1alpha1.ConditionClusterDataProtected)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonStalePrimary), c.Message)
	keys, _ = f.stores["s3-west"].List(ctx, "app/db/")
	g.Expect(keys).To(ConsistOf("app/db/"+MarkerKey), "the stale primary still writes nothing")
}
