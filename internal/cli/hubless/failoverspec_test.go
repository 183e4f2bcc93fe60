package hubless

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A failover's spec is the one the hub writes for the target: a VolSync section that held only
// the PVCs a secondary receives is left out, as the hub leaves it out, so the hub adopting the
// promotion has nothing to rewrite.
func TestTheFailoverSpecIsTheHubsForTheTarget(t *testing.T) {
	receive := []v1alpha1.VolSyncReceivePVC{{PVCNamespace: "app", PVCName: "data", Capacity: resource.MustParse("1Gi")}}
	secondary := v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStateSecondary, FinalSyncRequest: "relocate-east-1",
		SchedulingInterval: "1m", VolSync: &v1alpha1.VolSyncSpec{ReceivePVCs: receive}}
	got := FailoverSpec(secondary)
	if got.ReplicationState != v1alpha1.ReplicationStatePrimary || got.Action != v1alpha1.ActionFailover || got.FinalSyncRequest != "" || got.SchedulingInterval != "1m" {
		t.Fatalf("got %+v", got)
	}
	if got.VolSync != nil {
		t.Fatalf("a VolSync section that held only the PVCs to receive is left out, got %+v", got.VolSync)
	}
	if secondary.VolSync == nil || len(secondary.VolSync.ReceivePVCs) != 1 {
		t.Fatalf("the secondary's spec was changed: %+v", secondary.VolSync)
	}

	secondary.VolSync.Movers = v1alpha1.VolSyncMoversPrivileged
	got = FailoverSpec(secondary)
	if got.VolSync == nil || got.VolSync.Movers != v1alpha1.VolSyncMoversPrivileged || got.VolSync.ReceivePVCs != nil {
		t.Fatalf("the policy's VolSync settings are kept, the PVCs to receive dropped: %+v", got.VolSync)
	}
}
