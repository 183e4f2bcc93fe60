package vrg

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/metrics/metricstest"
	"github.com/drover-io/drover/internal/objectstore"
)

// The group's gauges come from its status; the store's writes and their failures are counted
// by profile and reason.
func TestMetricsReportTheGroupsAndCountTheStoreWrites(t *testing.T) {
	g := NewWithT(t)
	scheme, err := testScheme()
	g.Expect(err).NotTo(HaveOccurred())
	synced := metav1.NewTime(time.Unix(1_800_000_000, 0))
	group := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}}
	group.Status = v1alpha1.VolumeReplicationGroupStatus{
		State: v1alpha1.StatePrimary, LastGroupSyncTime: &synced,
		ProtectedPVCs: []v1alpha1.ProtectedPVC{{Namespace: "app", Name: "data-db-0", LastSyncTime: &synced,
			LastSyncDuration: &metav1.Duration{Duration: 1500 * time.Millisecond}, LastSyncBytes: ptr.To[int64](4096)}},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionClusterDataProtected, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonStalePrimary, LastTransitionTime: synced}},
	}
	m := NewMetrics(fake.NewClientBuilder().WithScheme(scheme).WithObjects(group).Build(), "east")
	store := objectstore.NewFake("s3-east")
	counted := m.countWrites(store)
	ctx := context.Background()
	g.Expect(counted.Put(ctx, "app/db/pvs/pv-0.json", []byte("{}"))).To(Succeed())
	store.SetError(&objectstore.Error{Kind: objectstore.KindUnreachable, Profile: "s3-east", Op: objectstore.OpPut})
	g.Expect(counted.Put(ctx, "app/db/pvs/pv-1.json", []byte("{}"))).NotTo(Succeed())

	metricstest.ExpectSamples(g, m, `
drover_vrg_last_group_sync_timestamp_seconds{cluster="east",name="db",namespace="app"} 1.8e+09
drover_vrg_protected_pvcs{cluster="east",name="db",namespace="app"} 1
drover_vrg_primary{cluster="east",name="db",namespace="app"} 1
drover_vrg_stale_primary{cluster="east",name="db",namespace="app"} 1
drover_vrg_pvc_last_sync_duration_seconds{cluster="east",name="db",namespace="app",pvc="data-db-0",pvc_namespace="app"} 1.5
drover_vrg_pvc_last_sync_bytes{cluster="east",name="db",namespace="app",pvc="data-db-0",pvc_namespace="app"} 4096
drover_s3_writes_total{cluster="east",profile="s3-east"} 2
drover_s3_write_errors_total{cluster="east",profile="s3-east",reason="StoreUnreachable"} 1
`)
}

// A pass times each of its phases and its status patch under their names, so a benchmark can
// say where the agent's workers spend their time.
func TestAPassTimesEachPhaseAndTheStatusPatch(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.r.Metrics = NewMetrics(f.client, "east")
	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())

	got := metricstest.Text(g, f.r.Metrics)
	for _, name := range []string{"parseSpec", "fenceStores", "restorePVCs", "protectPVCs", "protectMetadata", "protectKubeObjects", "status"} {
		g.Expect(got).To(ContainSubstring("\n"+`drover_vrg_phase_duration_seconds_count{cluster="east",phase="`+name+`"} 1`+"\n"), "metrics:\n%s", got)
	}
	g.Expect(got).NotTo(ContainSubstring(`phase="demotePVCs"`), "a primary's pass runs no secondary phase")
}
