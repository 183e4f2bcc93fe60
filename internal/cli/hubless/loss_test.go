package hubless

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The loss bound is the point the secondary reports, as a clock time and an age; without one,
// it says why, by backend.
func TestLossBoundSaysWhatTheSecondaryHoldsOrWhyItCannot(t *testing.T) {
	now := time.Date(2026, 12, 7, 5, 31, 14, 0, time.UTC)
	volSync := v1alpha1.VolumeReplicationGroup{Spec: v1alpha1.VolumeReplicationGroupSpec{
		StorageClassBackends: []v1alpha1.StorageClassBackend{{StorageClassName: "file", Backend: v1alpha1.BackendVolSync}},
		VolSync:              &v1alpha1.VolSyncSpec{ReceivePVCs: []v1alpha1.VolSyncReceivePVC{{PVCNamespace: "ns", PVCName: "data"}}},
	}}
	held := volSync.DeepCopy()
	held.Status.ReceivedSyncTime = &metav1.Time{Time: now.Add(-12 * time.Second)}
	volRep := v1alpha1.VolumeReplicationGroup{Spec: v1alpha1.VolumeReplicationGroupSpec{
		StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: "block", Backend: v1alpha1.BackendVolRep}},
	}}
	for _, c := range []struct {
		name string
		vrg  *v1alpha1.VolumeReplicationGroup
		ok   bool
		want string
	}{
		{"held", held, true, "writes after 05:31:02 UTC, 12s ago"},
		{"volsync not yet", &volSync, false, "has not completed two syncs"},
		{"volrep", &volRep, false, "csi-addons reports a VolumeReplication's lastSyncTime on the primary only"},
	} {
		got, ok := LossBound(c.vrg, now)
		if ok != c.ok || !strings.Contains(got, c.want) {
			t.Errorf("%s: LossBound = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if plan := expectedLoss(held, now); !strings.HasPrefix(plan, "the writes after 05:31:02 UTC, 12s ago") {
		t.Errorf("expectedLoss = %q", plan)
	}
	if plan := expectedLoss(&volRep, now); !strings.Contains(plan, "at most about one interval") {
		t.Errorf("expectedLoss without a point = %q", plan)
	}
}
