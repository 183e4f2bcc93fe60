package volsync

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

func TestACycleTriggerNamesItsInstantAndNoFinalSyncTriggerIsOne(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 12, 8, 1, 2, 3, 0, time.UTC)
	g.Expect(CycleTrigger(at)).To(Equal("drover-sync-20261208T010203Z"))
	got, ok := CycleTime(CycleTrigger(at.Add(400 * time.Millisecond)))
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(at), "a cycle counts in whole seconds")
	drain, final, confirm := FinalSyncTriggers("relocate-2026-12-08T01:00:00Z")
	for _, s := range []string{drain, final, confirm, "", "drover-sync-", "2026-12-08T01:00:00Z"} {
		_, ok := CycleTime(s)
		g.Expect(ok).To(BeFalse(), s)
	}
}

// A group whose recipe has a BeforeSync hook makes no source before a cycle passed, then the
// source carries the cycle's trigger and never an older one.
func TestProtectWithBeforeSyncHooksTriggersOnlyPassedCyclesNeverBackwards(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	vrg.Spec.Recipe = &v1alpha1.VRGRecipe{Name: "db", Spec: v1alpha1.DRRecipeSpec{Hooks: []v1alpha1.Hook{{Name: "checkpoint", Point: v1alpha1.HookBeforeSync}}}}
	g.Expect(ManualSyncs(vrg)).To(BeTrue())
	key := KeySecretName(vrg.Name, "data")
	vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{Destinations: []v1alpha1.VolSyncDestination{{
		PVCNamespace: "app", PVCName: "data", Address: "volsync-data.app.lab", KeySecretName: key,
	}}}
	cl := newClient(g, ptr.To(snapshotClass("lab-file-snapshot", driver, false)), keySecret(key))
	b := New(cl, cl)
	rs := &volsyncv1alpha1.ReplicationSource{}
	source := client.ObjectKey{Namespace: "app", Name: "data"}

	res := b.Protect(ctx, pvcContext(vrg))
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonHookRunning))
	g.Expect(cl.Get(ctx, source, rs)).NotTo(Succeed(), "no source syncs before the hooks")

	first, second := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC), time.Date(2026, 12, 8, 1, 1, 0, 0, time.UTC)
	for _, tc := range []struct{ asked, want string }{
		{CycleTrigger(first), CycleTrigger(first)},
		{"", CycleTrigger(first)},
		{CycleTrigger(second), CycleTrigger(second)},
		{CycleTrigger(first), CycleTrigger(second)},
	} {
		pc := pvcContext(vrg)
		pc.SyncTrigger = tc.asked
		g.Expect(b.Protect(ctx, pc).IsDone()).To(BeTrue())
		g.Expect(cl.Get(ctx, source, rs)).To(Succeed())
		g.Expect(rs.Spec.Trigger).To(Equal(&volsyncv1alpha1.TriggerSpec{Manual: tc.want}), "asked %q", tc.asked)
	}
	srcs, err := b.ObserveSources(ctx, []*replication.PVCContext{pvcContext(vrg)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srcs).To(Equal(Sources{Trigger: second, Syncing: "app/data"}), "no sync completed the trigger yet")
}
