package vrg

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
)

var t0 = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

// pvcIn builds a pvcState of a bound PVC with the given result and last sync (nil: none).
func pvcIn(name string, result replication.Result, lastSync *time.Time) *pvcState {
	ps := &pvcState{pvc: boundPVC("app", name, "pv-"+name), storageClass: "lab-block", backend: v1alpha1.BackendVolRep, result: result}
	if lastSync != nil {
		ps.sync = replication.SyncStatus{ReplicationID: "vrc-5s", LastSyncTime: &metav1.Time{Time: *lastSync}}
	}
	return ps
}

func at(d time.Duration) *time.Time { t := t0.Add(d); return &t }

func TestGroupConditionsFollowTheirPVCs(t *testing.T) {
	noClass := replication.Failed(v1alpha1.ReasonNoReplicationClass, "no VolumeReplicationClass for PVC app/c")
	notBound := replication.Retry(2*time.Second, v1alpha1.ReasonPVCNotBound, "PVC app/b is not Bound yet")
	tests := []struct {
		name                    string
		pvcs                    []*pvcState
		wantReady, wantProtect  metav1.ConditionStatus
		wantReason, wantMessage string
		wantGroupSync           *time.Time
	}{
		{
			name:      "every PVC primary and synced makes the group ready and protected",
			pvcs:      []*pvcState{pvcIn("a", replication.Done(), at(time.Second)), pvcIn("b", replication.Done(), at(0))},
			wantReady: metav1.ConditionTrue, wantProtect: metav1.ConditionTrue,
			wantGroupSync: at(0),
		},
		{
			name:      "a PVC waiting for its first sync leaves the group ready but not protected",
			pvcs:      []*pvcState{pvcIn("a", replication.Done(), at(0)), pvcIn("b", replication.Done(), nil)},
			wantReady: metav1.ConditionTrue, wantProtect: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonProgressing, wantMessage: "waiting for the first sync of PVC app/b",
		},
		{
			name:      "a PVC that needs a person wins over one in progress, and the rest are counted",
			pvcs:      []*pvcState{pvcIn("b", notBound, nil), pvcIn("c", noClass, nil), pvcIn("a", replication.Done(), at(0))},
			wantReady: metav1.ConditionFalse, wantProtect: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonNoReplicationClass, wantMessage: "no VolumeReplicationClass for PVC app/c (and 1 more PVCs)",
		},
		{
			name: "a writable PVC whose replication waits (a VolSync primary without destination) is ready but not protected",
			pvcs: []*pvcState{pvcIn("a", replication.Result{Outcome: replication.OutcomeRetry, RetryAfter: time.Second,
				Reason: v1alpha1.ReasonVolSyncDestinationUnknown, Message: "PVC app/a waits for its VolSync destination", Writable: true}, nil)},
			wantReady: metav1.ConditionTrue, wantProtect: metav1.ConditionFalse,
			wantReason: v1alpha1.ReasonVolSyncDestinationUnknown, wantMessage: "replication is not established: PVC app/a waits for its VolSync destination",
		},
		{
			name:      "no PVC selected is ready and protected: there is nothing to wait for",
			wantReady: metav1.ConditionTrue, wantProtect: metav1.ConditionTrue,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ready := dataReadyCondition(tt.pvcs, []string{"app"})
			protected := dataProtectedCondition(tt.pvcs, false)
			g.Expect(ready.Status).To(Equal(tt.wantReady), ready.Message)
			g.Expect(protected.Status).To(Equal(tt.wantProtect), protected.Message)
			if tt.wantReason != "" {
				failing := ready
				if ready.Status == metav1.ConditionTrue {
					failing = protected
				}
				g.Expect(failing.Reason).To(Equal(tt.wantReason))
				g.Expect(failing.Message).To(Equal(tt.wantMessage))
			}
			got := lastGroupSyncTime(tt.pvcs)
			if tt.wantGroupSync == nil {
				g.Expect(got).To(BeNil())
			} else {
				g.Expect(got.Time).To(Equal(*tt.wantGroupSync))
			}
		})
	}
}

func TestAGroupWithNoPVCTakesItsRecoveryPointFromItsCaptures(t *testing.T) {
	captured := t0.Add(90 * time.Second)
	previous := &metav1.Time{Time: t0}
	objects := &v1alpha1.KubeObjectProtectionSpec{}
	tests := []struct {
		name     string
		pvcs     []*pvcState
		objects  *v1alpha1.KubeObjectProtectionSpec
		captured time.Time
		want     *metav1.Time
	}{
		{name: "a capture every store holds is the recovery point", objects: objects, captured: captured, want: &metav1.Time{Time: captured}},
		{name: "a pass without a capture keeps the last one, which ages", objects: objects, want: previous},
		{name: "without object protection nothing protects the group", captured: captured},
		{name: "a PVC that appears joins the group: nil until it synced", objects: objects, captured: captured,
			pvcs: []*pvcState{pvcIn("a", replication.Done(), nil)}},
		{name: "once it synced, its sync is the recovery point", objects: objects, captured: captured,
			pvcs: []*pvcState{pvcIn("a", replication.Done(), at(30*time.Second))}, want: &metav1.Time{Time: *at(30 * time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sc := newScope(&v1alpha1.VolumeReplicationGroup{Spec: v1alpha1.VolumeReplicationGroupSpec{KubeObjectProtection: tt.objects}})
			sc.pvcs, sc.capturedEverywhere = tt.pvcs, tt.captured
			got := recoveryPoint(sc, previous)
			if tt.want == nil {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.Time).To(BeTemporally("==", tt.want.Time))
		})
	}
	g := NewWithT(t)
	c := dataProtectedCondition(nil, true)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Message).To(ContainSubstring("protected by its captured objects"))
}

func TestClusterDataProtectedNamesTheFailingStoreAndTheOthers(t *testing.T) {
	unreachable := &objectstore.Error{Kind: objectstore.KindUnreachable, Profile: "s3-west", Endpoint: "http://127.0.0.1:1", Err: errors.New("connection refused")}
	tests := []struct {
		name        string
		stores      []storeOutcome
		pending     []string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage []string
	}{
		{
			name:       "every store written",
			stores:     []storeOutcome{{name: "s3-east"}, {name: "s3-west"}},
			wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonSucceeded,
			wantMessage: []string{"the metadata (6 objects) is in S3 profiles s3-east, s3-west"},
		},
		{
			name:       "one store down is named with its reason and the written one is listed",
			stores:     []storeOutcome{{name: "s3-east"}, {name: "s3-west", err: unreachable}},
			wantStatus: metav1.ConditionFalse, wantReason: objectstore.ReasonStoreUnreachable,
			wantMessage: []string{"S3 profile s3-west at http://127.0.0.1:1 is unreachable", "the metadata is written to S3 profiles s3-east"},
		},
		{
			name:       "a PVC not bound yet keeps it false without blaming a store",
			stores:     []storeOutcome{{name: "s3-east"}},
			pending:    []string{"app/data-db-2"},
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonPVCNotBound,
			wantMessage: []string{"the metadata of PVCs app/data-db-2 is written once they are Bound"},
		},
		{
			name:       "nothing written yet is progressing",
			wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonProgressing,
			wantMessage: []string{"not written yet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := clusterDataProtectedCondition(tt.stores, tt.pending, 6)
			g.Expect(c.Type).To(Equal(v1alpha1.ConditionClusterDataProtected))
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			for _, m := range tt.wantMessage {
				g.Expect(c.Message).To(ContainSubstring(m))
			}
		})
	}
}

func TestComputeStatusMovesObservedGenerationOnlyAfterAFullySuccessfulPass(t *testing.T) {
	newGroup := func() *v1alpha1.VolumeReplicationGroup {
		return &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 2}}
	}
	tests := []struct {
		name      string
		succeeded bool
		pvcs      []*pvcState
		stores    []storeOutcome
		wantGen   int64
		wantState v1alpha1.VRGState
	}{
		{"a clean pass", true, []*pvcState{pvcIn("a", replication.Done(), nil)}, []storeOutcome{{name: "s3-east"}}, 2, v1alpha1.StatePrimary},
		{"a pass that returned an error", false, []*pvcState{pvcIn("a", replication.Done(), nil)}, []storeOutcome{{name: "s3-east"}}, 0, v1alpha1.StatePrimary},
		{"a PVC not replicating", true, []*pvcState{pvcIn("a", replication.Failed(v1alpha1.ReasonNoReplicationClass, "x"), nil)}, []storeOutcome{{name: "s3-east"}}, 0, v1alpha1.StateUnknown},
		{"a store failing", true, []*pvcState{pvcIn("a", replication.Done(), nil)}, []storeOutcome{{name: "s3-east", err: objectstore.ErrUnauthorized}}, 0, v1alpha1.StatePrimary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sc := newScope(newGroup())
			sc.pvcs, sc.stores, sc.pvcsListed = tt.pvcs, tt.stores, true
			computeStatus(sc, tt.succeeded)
			st := sc.vrg.Status
			g.Expect(st.ObservedGeneration).To(Equal(tt.wantGen))
			g.Expect(st.State).To(Equal(tt.wantState))
			g.Expect(st.ProtectedPVCs).To(HaveLen(1))
			g.Expect(st.ProtectedPVCs[0].Conditions).To(HaveLen(2))
			for _, c := range append(st.Conditions, st.ProtectedPVCs[0].Conditions...) {
				g.Expect(c.ObservedGeneration).To(Equal(int64(2)), "condition %s", c.Type)
			}
		})
	}
}

func TestProtectedPVCConditionsKeepTheirTransitionTime(t *testing.T) {
	g := NewWithT(t)
	sc := newScope(&v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 1}})
	sc.pvcs, sc.pvcsListed = []*pvcState{pvcIn("a", replication.Done(), at(0))}, true
	computeStatus(sc, true)
	first := sc.vrg.Status.ProtectedPVCs[0].Conditions[0].LastTransitionTime
	g.Expect(first.IsZero()).To(BeFalse())

	next := newScope(sc.vrg)
	next.pvcs, next.pvcsListed = []*pvcState{pvcIn("a", replication.Done(), at(time.Minute))}, true
	next.vrg.Status.ProtectedPVCs[0].Conditions[0].LastTransitionTime = metav1.NewTime(t0)
	computeStatus(next, true)
	g.Expect(next.vrg.Status.ProtectedPVCs[0].Conditions[0].LastTransitionTime.Time).To(Equal(t0), "an unchanged condition keeps its transition time")
	g.Expect(next.vrg.Status.ProtectedPVCs[0].LastSyncTime.Time).To(Equal(t0.Add(time.Minute)))
}

func TestComputeStatusKeepsTheLastStatusWhenThePVCsCouldNotBeListed(t *testing.T) {
	g := NewWithT(t)
	vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 1}}
	vrg.Status.State = v1alpha1.StatePrimary
	vrg.Status.ProtectedPVCs = []v1alpha1.ProtectedPVC{{Namespace: "app", Name: "a"}}
	sc := newScope(vrg)
	computeStatus(sc, false)
	g.Expect(sc.vrg.Status).To(Equal(sc.before.Status), "an API failure does not report the group as having no PVCs")
}

func TestASecondarysStatusDoesNotChangeWithEachSyncItReceives(t *testing.T) {
	g := NewWithT(t)
	secondary := func() *v1alpha1.VolumeReplicationGroup {
		return &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 1},
			Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStateSecondary}}
	}
	received := func(d time.Duration) *pvcState {
		ps := pvcIn("a", replication.Done(), at(d))
		ps.secondary = true
		ps.sync.LastSyncDuration, ps.sync.LastSyncBytes = &metav1.Duration{Duration: time.Second}, ptr.To[int64](4096)
		return ps
	}
	sc := newScope(secondary())
	sc.pvcs, sc.pvcsListed = []*pvcState{received(0)}, true
	computeStatus(sc, true)
	g.Expect(sc.vrg.Status.State).To(Equal(v1alpha1.StateSecondary))
	g.Expect(sc.vrg.Status.ProtectedPVCs).To(HaveLen(1))
	p := sc.vrg.Status.ProtectedPVCs[0]
	g.Expect(p.LastSyncTime).To(BeNil(), "the primary's group reports the syncs")
	g.Expect(p.LastSyncDuration).To(BeNil())
	g.Expect(p.LastSyncBytes).To(BeNil())

	next := newScope(sc.vrg)
	next.pvcs, next.pvcsListed = []*pvcState{received(5 * time.Second)}, true
	computeStatus(next, true)
	g.Expect(next.vrg.Status).To(Equal(next.before.Status), "a later sync leaves a settled secondary's status as it was: nothing to patch")
}
