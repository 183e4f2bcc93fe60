package drpc

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// csi-addons refreshes a primary VolumeReplication's lastSyncTime only every
// getInfoReconcileInterval of its class: the interval itself below 2 minutes. With the storage
// syncing every interval, a healthy last group sync is then up to twice the interval (plus the
// sync's duration) old just before a refresh. Protected allows for the refresh the primary's
// group reports (status.syncRefreshInterval): stale only past twice the interval plus the
// refresh, not at twice the interval.
func TestProtectedAllowsForTheStoragesStatusRefresh(t *testing.T) {
	w := newWorld(t, appDRPC()) // interval 10s
	w.deployed()
	ctx := context.Background()
	report := func(age time.Duration, refresh *metav1.Duration) {
		t.Helper()
		east := w.vrg("east")
		capacity := resource.MustParse("1Gi")
		last := metav1.NewTime(w.now.Add(-age))
		east.Status.ProtectedPVCs = []v1alpha1.ProtectedPVC{{Namespace: "app", Name: "data-db-0", Backend: v1alpha1.BackendVolRep, Capacity: &capacity, LastSyncTime: &last}}
		east.Status.LastGroupSyncTime, east.Status.SyncRefreshInterval = &last, refresh
		w.g.Expect(w.clusters["east"].Status().Update(ctx, east)).To(Succeed())
		w.reconcile()
	}
	tenSeconds := &metav1.Duration{Duration: 10 * time.Second}

	report(25*time.Second, tenSeconds)
	p := w.cond(v1alpha1.ConditionProtected)
	w.g.Expect(p.Status).To(Equal(metav1.ConditionTrue), "a sync 25 s old with an interval of 10 s and a refresh of 10 s is healthy: %s", p.Message)
	w.g.Expect(w.drpc().Status.SyncRefreshInterval).To(Equal(tenSeconds), "the DRPC reports the primary's refresh")

	report(31*time.Second, tenSeconds)
	p = w.cond(v1alpha1.ConditionProtected)
	w.g.Expect(p.Status).To(Equal(metav1.ConditionFalse))
	w.g.Expect(p.Reason).To(Equal(v1alpha1.ReasonSyncStale))
	w.g.Expect(p.Message).To(Equal("the last group sync was 31s ago, more than twice the interval 10s plus the storage's status refresh 10s"))

	// A group that reports no refresh (its syncs are reported as they complete, or an older
	// agent) is judged against twice the interval.
	report(25*time.Second, nil)
	p = w.cond(v1alpha1.ConditionProtected)
	w.g.Expect(p.Reason).To(Equal(v1alpha1.ReasonSyncStale))
	w.g.Expect(p.Message).To(Equal("the last group sync was 25s ago, more than twice the interval 10s"))
}
