package volrep

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// These tests use a fake client: they check the backend's decisions (which class, which object,
// which Result); the agent's lab test proves them against a real API server and lab storage.

const driver = "block.lab.drover.io"

func class(name, provisioner, interval string, labels map[string]string) *replicationv1alpha1.VolumeReplicationClass {
	params := map[string]string{}
	if interval != "" {
		params[SchedulingIntervalParameter] = interval
	}
	return &replicationv1alpha1.VolumeReplicationClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       replicationv1alpha1.VolumeReplicationClassSpec{Provisioner: provisioner, Parameters: params},
	}
}

func TestMatchingClassesComparesProvisionerAndIntervalAsDuration(t *testing.T) {
	classes := []replicationv1alpha1.VolumeReplicationClass{
		*class("b-1m", driver, "1m", nil), *class("a-60s", driver, "60s", nil), *class("other-driver", "rbd", "1m", nil),
		*class("no-interval", driver, "", nil), *class("garbage", driver, "soon", nil), *class("c-5s", driver, "5s", nil),
	}
	tests := []struct {
		name     string
		interval time.Duration
		want     []string
	}{
		{"equal durations in other spellings match, sorted", time.Minute, []string{"a-60s", "b-1m"}},
		{"one class of the interval", 5 * time.Second, []string{"c-5s"}},
		{"no class of the interval", 7 * time.Second, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(MatchingClasses(classes, driver, tt.interval)).To(Equal(tt.want))
		})
	}
}

func pvcContext(interval time.Duration, volRep *v1alpha1.VolRepSpec) *replication.PVCContext {
	return &replication.PVCContext{
		VRG: &v1alpha1.VolumeReplicationGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"},
			Spec:       v1alpha1.VolumeReplicationGroupSpec{VolRep: volRep},
		},
		PVC: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0"}},
		PV: &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-0"}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "pv-0"}},
		}},
		StorageClassName: "lab-block", Provisioner: driver, Interval: interval,
	}
}

func newClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := replicationv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&replicationv1alpha1.VolumeReplication{}, &replicationv1alpha1.VolumeGroupReplication{}).Build()
}

func TestProtectCreatesAPrimaryVolumeReplicationWithTheMatchingClass(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newClient(t, class("vrc-5s", driver, "5s", nil), class("vrc-1m", driver, "1m", nil))
	b := New(c)
	pc := pvcContext(5*time.Second, nil)

	res := b.Protect(ctx, pc)
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry), res.String())
	g.Expect(res.Message).To(ContainSubstring("waiting for the storage to act on VolumeReplication app/data-db-0"))

	vr := &replicationv1alpha1.VolumeReplication{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-0"}, vr)).To(Succeed())
	g.Expect(vr.Spec.VolumeReplicationClass).To(Equal("vrc-5s"))
	g.Expect(vr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Primary))
	g.Expect(vr.Spec.DataSource.Kind).To(Equal("PersistentVolumeClaim"))
	g.Expect(vr.Spec.DataSource.Name).To(Equal("data-db-0"))
	g.Expect(vr.Labels).To(Equal(map[string]string{LabelVRGName: "db", LabelVRGNamespace: "app"}))
	g.Expect(vr.OwnerReferences).To(BeEmpty(), "labelled, never garbage-collected behind the agent's back")

	// The storage reports it primary with a first sync: Protect is Done, Status reports the sync.
	synced := metav1.NewTime(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC))
	vr.Status = replicationv1alpha1.VolumeReplicationStatus{
		State: replicationv1alpha1.PrimaryState, ObservedGeneration: vr.Generation, LastSyncTime: &synced,
		Conditions: []metav1.Condition{{Type: replicationv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Promoted", LastTransitionTime: synced}},
	}
	g.Expect(c.Status().Update(ctx, vr)).To(Succeed())
	g.Expect(b.Protect(ctx, pc).IsDone()).To(BeTrue())
	st, err := b.Status(ctx, pc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.ReplicationID).To(Equal("vrc-5s"))
	g.Expect(st.LastSyncTime.Time).To(BeTemporally("==", synced.Time))
}

func TestProtectExplainsAMissingOrAmbiguousClass(t *testing.T) {
	tests := []struct {
		name       string
		classes    []client.Object
		volRep     *v1alpha1.VolRepSpec
		wantReason string
		wantIn     []string
	}{
		{
			name:       "no class of the interval names the storage class, provisioner and interval",
			classes:    []client.Object{class("vrc-5s", driver, "5s", nil)},
			wantReason: v1alpha1.ReasonNoReplicationClass,
			wantIn: []string{"StorageClass lab-block", "provisioner " + driver, `schedulingInterval "7s"`,
				`create a VolumeReplicationClass with spec.provisioner block.lab.drover.io and parameters.schedulingInterval "7s"`},
		},
		{
			name: "an interval no class expresses lists the classes seen with their intervals, and that ceph-csi takes only whole minutes",
			classes: []client.Object{class("vrc-1m", driver, "1m", nil), class("vrc-1d", driver, "1d", nil),
				class("vrc-odd", driver, "weekly", nil), class("other-7s", "other.csi.example", "7s", nil)},
			wantReason: v1alpha1.ReasonNoReplicationClass,
			wantIn: []string{`the classes of provisioner block.lab.drover.io seen are vrc-1d (24h0m0s), vrc-1m (1m0s), vrc-odd ("weekly", not an interval)`,
				`ceph-csi accepts only whole minutes, hours or days, ^\d+[mhd]$, so no ceph-csi class can express 7s`},
		},
		{
			name:       "a selector that excludes every class says so",
			classes:    []client.Object{class("vrc-7s", driver, "7s", map[string]string{"tier": "gold"})},
			volRep:     &v1alpha1.VolRepSpec{ReplicationClassSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "silver"}}},
			wantReason: v1alpha1.ReasonNoReplicationClass,
			wantIn:     []string{`with labels matching "tier=silver"`},
		},
		{
			name:       "two matching classes are named, with the fix",
			classes:    []client.Object{class("vrc-a", driver, "7s", nil), class("vrc-b", driver, "7s", nil)},
			wantReason: v1alpha1.ReasonReplicationClassAmbiguous,
			wantIn:     []string{"vrc-a, vrc-b", "set spec.volRep.replicationClassSelector"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newClient(t, tt.classes...)
			res := New(c).Protect(context.Background(), pvcContext(7*time.Second, tt.volRep))
			g.Expect(res.Outcome).To(Equal(replication.OutcomeFailed))
			g.Expect(res.Reason).To(Equal(tt.wantReason))
			for _, s := range tt.wantIn {
				g.Expect(res.Message).To(ContainSubstring(s))
			}
			list := &replicationv1alpha1.VolumeReplicationList{}
			g.Expect(c.List(context.Background(), list)).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
		})
	}
}

func TestProtectLeavesAnotherGroupsVolumeReplicationAlone(t *testing.T) {
	g := NewWithT(t)
	theirs := &replicationv1alpha1.VolumeReplication{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", Labels: map[string]string{LabelVRGName: "other", LabelVRGNamespace: "app"}},
		Spec: replicationv1alpha1.VolumeReplicationSpec{
			VolumeReplicationClass: "vrc-5s", ReplicationState: replicationv1alpha1.Secondary,
			DataSource: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "data-db-0"},
		},
	}
	c := newClient(t, theirs)
	b := New(c)
	res := b.Protect(context.Background(), pvcContext(5*time.Second, nil))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonReplicationConflict))
	g.Expect(res.Message).To(ContainSubstring("belongs to VolumeReplicationGroup app/other"))
	g.Expect(b.Cleanup(context.Background(), pvcContext(5*time.Second, nil)).IsDone()).To(BeTrue(), "cleanup leaves it alone")
	vr := &replicationv1alpha1.VolumeReplication{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(theirs), vr)).To(Succeed())
	g.Expect(vr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Secondary), "never promoted by another group")
}

func TestObservePrimaryWaitsForTheStorage(t *testing.T) {
	completed := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: replicationv1alpha1.ConditionCompleted, Status: status, Reason: reason, Message: "image is primary on the peer cluster"}}
	}
	tests := []struct {
		name   string
		vr     replicationv1alpha1.VolumeReplication
		done   bool
		wantIn string
		reason string
	}{
		{"not observed yet", replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: replicationv1alpha1.VolumeReplicationStatus{ObservedGeneration: 1}}, false, "waiting for the storage", ""},
		{"completed but not primary", replicationv1alpha1.VolumeReplication{Status: replicationv1alpha1.VolumeReplicationStatus{State: replicationv1alpha1.SecondaryState, Conditions: completed(metav1.ConditionTrue, "Demoted")}}, false, `reports state "Secondary"`, ""},
		{"primary and completed", replicationv1alpha1.VolumeReplication{Status: replicationv1alpha1.VolumeReplicationStatus{State: replicationv1alpha1.PrimaryState, Conditions: completed(metav1.ConditionTrue, "Promoted")}}, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res := observePrimary(&tt.vr)
			g.Expect(res.IsDone()).To(Equal(tt.done))
			g.Expect(res.Message).To(ContainSubstring(tt.wantIn))
			if tt.reason != "" {
				g.Expect(res.Reason).To(Equal(tt.reason))
			}
		})
	}
}

func TestObserveProtectionReadsWhatProtectWouldReturnAndNeverWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrOf := func(name string, state replicationv1alpha1.ReplicationState, labels map[string]string) *replicationv1alpha1.VolumeReplication {
		return &replicationv1alpha1.VolumeReplication{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Labels: labels},
			Spec: replicationv1alpha1.VolumeReplicationSpec{
				VolumeReplicationClass: "vrc-5s", ReplicationState: state,
				DataSource: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: name},
			},
		}
	}
	ours := map[string]string{LabelVRGName: "db", LabelVRGNamespace: "app"}
	promoted := vrOf("data-db-0", replicationv1alpha1.Primary, ours)
	promoted.Status = replicationv1alpha1.VolumeReplicationStatus{
		State:      replicationv1alpha1.PrimaryState,
		Conditions: []metav1.Condition{{Type: replicationv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Promoted"}},
	}
	unobserved := vrOf("data-db-1", replicationv1alpha1.Primary, ours)
	stillSecondary := vrOf("data-db-2", replicationv1alpha1.Secondary, ours)
	unlabelled := vrOf("data-db-3", replicationv1alpha1.Primary, nil)
	theirs := vrOf("data-db-4", replicationv1alpha1.Primary, map[string]string{LabelVRGName: "other", LabelVRGNamespace: "app"})
	c := newClient(t, promoted, unobserved, stillSecondary, unlabelled, theirs)
	b := New(c)
	of := func(name string) *replication.PVCContext {
		pc := pvcContext(5*time.Second, nil)
		pc.PVC.Name = name
		return pc
	}

	res, known := b.ObserveProtection(ctx, of("data-db-0"))
	g.Expect(known).To(BeTrue())
	g.Expect(res.IsDone()).To(BeTrue(), "the storage made it primary: %s", res)
	res, known = b.ObserveProtection(ctx, of("data-db-1"))
	g.Expect(known).To(BeTrue())
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
	g.Expect(res.Message).To(ContainSubstring("waiting for the storage"))
	for _, name := range []string{"data-db-2", "data-db-3", "data-db-4", "data-db-5"} {
		_, known := b.ObserveProtection(ctx, of(name))
		g.Expect(known).To(BeFalse(), "%s: Protect would still promote, label or create it, or it is another group's", name)
	}
	list := &replicationv1alpha1.VolumeReplicationList{}
	g.Expect(c.List(ctx, list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(5), "nothing created")
	for _, vr := range list.Items {
		g.Expect(vr.ResourceVersion).To(Equal("999"), "%s unchanged", vr.Name)
	}
}

func TestProtectAdoptsAnUnlabelledVolumeReplicationOfThePVC(t *testing.T) {
	g := NewWithT(t)
	mine := &replicationv1alpha1.VolumeReplication{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0"},
		Spec: replicationv1alpha1.VolumeReplicationSpec{
			VolumeReplicationClass: "vrc-5s", ReplicationState: replicationv1alpha1.Secondary,
			DataSource: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "data-db-0"},
		},
	}
	c := newClient(t, mine)
	res := New(c).Protect(context.Background(), pvcContext(5*time.Second, nil))
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry), res.String())
	vr := &replicationv1alpha1.VolumeReplication{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(mine), vr)).To(Succeed())
	g.Expect(vr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Primary))
	g.Expect(vr.Labels).To(Equal(map[string]string{LabelVRGName: "db", LabelVRGNamespace: "app"}))
}

func TestDemoteSetsThePrimaryToSecondaryWithAutoResyncAndWaitsForTheStorage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newClient(t, class("vrc-5s", driver, "5s", nil))
	b := New(c)
	pc := pvcContext(5*time.Second, nil)
	g.Expect(b.Protect(ctx, pc).Outcome).To(Equal(replication.OutcomeRetry))

	res := b.Demote(ctx, pc, true)
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry), res.String())
	g.Expect(res.Message).To(ContainSubstring("waiting for the storage to demote VolumeReplication app/data-db-0"))
	vr := &replicationv1alpha1.VolumeReplication{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-0"}, vr)).To(Succeed())
	g.Expect(vr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Secondary))
	g.Expect(vr.Spec.AutoResync).To(BeTrue())

	// The storage has not acted on the new generation yet, then reports it still primary.
	vr.Status = replicationv1alpha1.VolumeReplicationStatus{State: replicationv1alpha1.PrimaryState, ObservedGeneration: vr.Generation - 1}
	g.Expect(c.Status().Update(ctx, vr)).To(Succeed())
	g.Expect(b.Demote(ctx, pc, true).Message).To(ContainSubstring("waiting for the storage to act on VolumeReplication app/data-db-0"))
	vr.Status.ObservedGeneration = vr.Generation
	g.Expect(c.Status().Update(ctx, vr)).To(Succeed())
	g.Expect(b.Demote(ctx, pc, true).Message).To(ContainSubstring(`reports state "Primary", waiting for Secondary`))

	vr.Status.State = replicationv1alpha1.SecondaryState
	g.Expect(c.Status().Update(ctx, vr)).To(Succeed())
	g.Expect(b.Demote(ctx, pc, true).IsDone()).To(BeTrue())
}

func TestDemoteCreatesASecondaryVolumeReplicationWhenThePVCHasNone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newClient(t, class("vrc-5s", driver, "5s", nil))
	res := New(c).Demote(ctx, pvcContext(5*time.Second, nil), true)
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry), res.String())
	vr := &replicationv1alpha1.VolumeReplication{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-0"}, vr)).To(Succeed())
	g.Expect(vr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Secondary))
	g.Expect(vr.Spec.AutoResync).To(BeTrue())
	g.Expect(vr.Spec.VolumeReplicationClass).To(Equal("vrc-5s"))
}

func TestStatusReportsTheVolumePrimaryOnlyFromItsState(t *testing.T) {
	for _, tc := range []struct {
		name        string
		state       replicationv1alpha1.State
		wantPrimary bool
	}{
		{name: "a primary volume is primary", state: replicationv1alpha1.PrimaryState, wantPrimary: true},
		{name: "a secondary volume is not", state: replicationv1alpha1.SecondaryState},
		{name: "a volume of unknown state is not", state: replicationv1alpha1.UnknownState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0"}}
			vr.Status.State = tc.state
			st, err := New(newClient(t, vr)).Status(context.Background(), pvcContext(5*time.Second, nil))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.Primary).To(Equal(tc.wantPrimary))
		})
	}
}

func TestStatusTellsADemotedVolumeInSyncOnlyByItsStoragesWordForThatGeneration(t *testing.T) {
	cond := func(t string, s metav1.ConditionStatus, gen int64) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: "R", ObservedGeneration: gen}
	}
	// As csi-addons reports a volume demoted for a relocation once its storage says it is in
	// sync with its peer: no lastSyncTime, Completed True, Degraded False, not resyncing.
	inSync := func() *replicationv1alpha1.VolumeReplication {
		vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", Generation: 3}}
		vr.Spec.ReplicationState = replicationv1alpha1.Secondary
		vr.Status.State, vr.Status.ObservedGeneration = replicationv1alpha1.SecondaryState, 3
		vr.Status.Conditions = []metav1.Condition{cond(replicationv1alpha1.ConditionCompleted, metav1.ConditionTrue, 3),
			cond(replicationv1alpha1.ConditionDegraded, metav1.ConditionFalse, 3), cond(replicationv1alpha1.ConditionResyncing, metav1.ConditionFalse, 3)}
		return vr
	}
	for _, tc := range []struct {
		name   string
		change func(*replicationv1alpha1.VolumeReplication)
		want   bool
	}{
		{name: "demoted and in sync", change: func(*replicationv1alpha1.VolumeReplication) {}, want: true},
		{name: "just demoted: Degraded until the final snapshot reaches the peer", change: func(vr *replicationv1alpha1.VolumeReplication) {
			vr.Status.Conditions[1] = cond(replicationv1alpha1.ConditionDegraded, metav1.ConditionTrue, 3)
		}},
		{name: "resyncing", change: func(vr *replicationv1alpha1.VolumeReplication) {
			vr.Status.Conditions[2] = cond(replicationv1alpha1.ConditionResyncing, metav1.ConditionTrue, 3)
		}},
		{name: "the storage has not acted on the demotion", change: func(vr *replicationv1alpha1.VolumeReplication) { vr.Status.ObservedGeneration = 2 }},
		{name: "conditions of an earlier generation", change: func(vr *replicationv1alpha1.VolumeReplication) {
			vr.Status.Conditions[1] = cond(replicationv1alpha1.ConditionDegraded, metav1.ConditionFalse, 2)
		}},
		{name: "not reported Secondary", change: func(vr *replicationv1alpha1.VolumeReplication) { vr.Status.State = replicationv1alpha1.PrimaryState }},
		{name: "asked to be primary", change: func(vr *replicationv1alpha1.VolumeReplication) {
			vr.Spec.ReplicationState = replicationv1alpha1.Primary
		}},
		{name: "no Degraded condition", change: func(vr *replicationv1alpha1.VolumeReplication) { vr.Status.Conditions = vr.Status.Conditions[:1] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vr := inSync()
			tc.change(vr)
			st, err := New(newClient(t, vr)).Status(context.Background(), pvcContext(5*time.Second, nil))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.DemotedInSync).To(Equal(tc.want))
			g.Expect(st.LastSyncTime).To(BeNil())
		})
	}
}

func TestClassIntervalsInCephCSIsFormMatchTheSameDuration(t *testing.T) {
	g := NewWithT(t)
	classes := []replicationv1alpha1.VolumeReplicationClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "daily"}, Spec: replicationv1alpha1.VolumeReplicationClassSpec{Provisioner: driver, Parameters: map[string]string{SchedulingIntervalParameter: "1d"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hourly"}, Spec: replicationv1alpha1.VolumeReplicationClassSpec{Provisioner: driver, Parameters: map[string]string{SchedulingIntervalParameter: "1h"}}},
	}
	g.Expect(MatchingClasses(classes, driver, 24*time.Hour)).To(Equal([]string{"daily"}))
	g.Expect(MatchingClasses(classes, driver, time.Hour)).To(Equal([]string{"hourly"}))
	g.Expect(cephInterval(48 * time.Hour)).To(Equal("2d"))
	g.Expect(cephInterval(90 * time.Minute)).To(Equal("90m"))
	g.Expect(cephInterval(30 * time.Second)).To(Equal("30s"))
}

// csi-addons refreshes a primary's status every getInfoReconcileInterval of its class's
// schedulingInterval: the interval below 2 minutes, half of it from 2 minutes, an hour for a
// parameter time.ParseDuration cannot read (ceph-csi's days among them).
func TestStatusReportsHowOftenCSIAddonsRefreshesTheLastSync(t *testing.T) {
	for raw, want := range map[string]time.Duration{
		"5s": 5 * time.Second, "1m": time.Minute, "90s": 90 * time.Second, "2m": time.Minute, "5m": 150 * time.Second,
		"1h": 30 * time.Minute, "24h": 12 * time.Hour, "1d": time.Hour, "": time.Hour,
	} {
		t.Run(raw, func(t *testing.T) {
			g := NewWithT(t)
			vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0"},
				Spec: replicationv1alpha1.VolumeReplicationSpec{VolumeReplicationClass: "the-class"}}
			st, err := New(newClient(t, vr, class("the-class", driver, raw, nil))).Status(context.Background(), pvcContext(time.Minute, nil))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(st.RefreshInterval).To(Equal(want))
		})
	}
	t.Run("a class that is gone tells nothing", func(t *testing.T) {
		g := NewWithT(t)
		vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0"},
			Spec: replicationv1alpha1.VolumeReplicationSpec{VolumeReplicationClass: "gone"}}
		st, err := New(newClient(t, vr)).Status(context.Background(), pvcContext(time.Minute, nil))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.RefreshInterval).To(BeZero())
	})
}

// A group asked to release its volumes as primary (the last copy left) has each
// VolumeReplication promoted before it is deleted: ceph-csi disables mirroring only of a
// primary image.
func TestCleanupPromotesBeforeDeletingWhenTheGroupReleasesAsPrimary(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", Generation: 1},
		Spec: replicationv1alpha1.VolumeReplicationSpec{VolumeReplicationClass: "vrc-5s", ReplicationState: replicationv1alpha1.Secondary, AutoResync: true,
			DataSource: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "data-db-0"}}}
	vr.Status.State = replicationv1alpha1.SecondaryState
	c := newClient(t, vr)
	pc := pvcContext(5*time.Second, nil)
	pc.VRG.Annotations = map[string]string{v1alpha1.AnnotationUnprotectAsPrimary: "true"}
	b := New(c)

	res := b.Cleanup(ctx, pc)
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
	g.Expect(res.Message).To(ContainSubstring("promoting VolumeReplication app/data-db-0 before deleting it"))
	got := &replicationv1alpha1.VolumeReplication{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vr), got)).To(Succeed())
	g.Expect(got.Spec.ReplicationState).To(Equal(replicationv1alpha1.Primary))
	g.Expect(got.Spec.AutoResync).To(BeFalse())

	got.Status = replicationv1alpha1.VolumeReplicationStatus{State: replicationv1alpha1.PrimaryState, ObservedGeneration: got.Generation,
		Conditions: []metav1.Condition{{Type: replicationv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Promoted", LastTransitionTime: metav1.Now()}}}
	g.Expect(c.Status().Update(ctx, got)).To(Succeed())
	g.Expect(b.Cleanup(ctx, pc).Message).To(ContainSubstring("waiting for the storage to release VolumeReplication app/data-db-0"))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vr), got)).NotTo(Succeed(), "deleted once primary")
}

// A VolumeReplication the storage keeps past the grace is reported with what releases it.
func TestNotReleasedSaysWhatReleasesASecondary(t *testing.T) {
	g := NewWithT(t)
	deleted := metav1.NewTime(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", DeletionTimestamp: &deleted}}
	vr.Status.State = replicationv1alpha1.SecondaryState
	res := NotReleased(vr, deleted.Add(5*time.Second))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonProgressing), "within the grace the storage may still act")
	res = NotReleased(vr, deleted.Add(time.Minute))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonReplicationNotReleased))
	g.Expect(res.Message).To(And(ContainSubstring("VolumeReplication app/data-db-0 was deleted 1m0s ago"),
		ContainSubstring("only while it replays its peer's primary"), ContainSubstring("rbd mirror image promote --force")))
}

// Resyncing True (ResyncTriggered) at the current generation is csi-addons' word that ceph-csi
// found the secondary replaying: the one state in which it releases it.
func TestReplaysOnlyOnResyncTriggeredAtTheCurrentGeneration(t *testing.T) {
	cond := func(t, status, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, ObservedGeneration: gen}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		gen   int64
		want  bool
	}{
		{"resyncing from a live primary", []metav1.Condition{cond("Completed", "True", "Demoted", 2), cond("Resyncing", "True", "ResyncTriggered", 2)}, 2, true},
		{"in sync with a demoted peer", []metav1.Condition{cond("Completed", "True", "Demoted", 2), cond("Resyncing", "False", "NotResyncing", 2)}, 2, false},
		{"failed to resync", []metav1.Condition{cond("Completed", "False", "FailedToResync", 2), cond("Resyncing", "False", "FailedToResync", 2)}, 2, false},
		{"an older generation's word", []metav1.Condition{cond("Completed", "True", "Demoted", 1), cond("Resyncing", "True", "ResyncTriggered", 1)}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Generation: 2},
				Spec: replicationv1alpha1.VolumeReplicationSpec{ReplicationState: replicationv1alpha1.Secondary}}
			vr.Status = replicationv1alpha1.VolumeReplicationStatus{State: replicationv1alpha1.SecondaryState, ObservedGeneration: tc.gen, Conditions: tc.conds}
			NewWithT(t).Expect(Replays(vr)).To(Equal(tc.want))
		})
	}
}

// A volume whose image is gone is demoted for the agent only on the storage's NotFound answer
// to the demotion of the current generation, as csi-addons writes it (FailedToDemote, Degraded
// Error ending with the driver's gRPC error), whatever state the status still shows.
func TestDemoteCountsAVolumeTheStorageNoLongerHasAsDemoted(t *testing.T) {
	notFound := "volume failed to demote: rpc error: code = NotFound desc = volume pvc-1 not found: image not found"
	gone := func() *replicationv1alpha1.VolumeReplication {
		vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", Generation: 3,
			Labels: map[string]string{LabelVRGName: "db", LabelVRGNamespace: "app"}}}
		vr.Spec = replicationv1alpha1.VolumeReplicationSpec{VolumeReplicationClass: "vrc-5s", ReplicationState: replicationv1alpha1.Secondary, AutoResync: true,
			DataSource: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "data-db-0"}}
		vr.Status.State, vr.Status.ObservedGeneration = replicationv1alpha1.PrimaryState, 3
		vr.Status.Conditions = []metav1.Condition{
			{Type: replicationv1alpha1.ConditionCompleted, Status: metav1.ConditionFalse, Reason: replicationv1alpha1.ReasonFailedToDemote, Message: "failed to demote volume", ObservedGeneration: 3},
			{Type: replicationv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: replicationv1alpha1.ReasonError, Message: notFound, ObservedGeneration: 3},
		}
		return vr
	}
	for _, tc := range []struct {
		name   string
		change func(*replicationv1alpha1.VolumeReplication)
		want   bool
	}{
		{name: "NotFound while the status still says Primary (the image went before the demotion was reported)", change: func(*replicationv1alpha1.VolumeReplication) {}, want: true},
		{name: "NotFound with no state reported yet", change: func(vr *replicationv1alpha1.VolumeReplication) { vr.Status.State = replicationv1alpha1.UnknownState }, want: true},
		{name: "NotFound after a Secondary report", change: func(vr *replicationv1alpha1.VolumeReplication) { vr.Status.State = replicationv1alpha1.SecondaryState }, want: true},
		{name: "another failure of the demotion", change: func(vr *replicationv1alpha1.VolumeReplication) {
			vr.Status.Conditions[1].Message = "volume failed to demote: rpc error: code = Internal desc = failed to demote image"
		}},
		{name: "a NotFound of an earlier generation", change: func(vr *replicationv1alpha1.VolumeReplication) { vr.Status.Conditions[0].ObservedGeneration = 2 }},
		{name: "the storage has not acted on the demotion", change: func(vr *replicationv1alpha1.VolumeReplication) { vr.Status.ObservedGeneration = 2 }},
		{name: "a promotion that failed", change: func(vr *replicationv1alpha1.VolumeReplication) {
			vr.Status.Conditions[0].Reason = "FailedToPromote"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vr := gone()
			tc.change(vr)
			b := New(newClient(t, vr))
			res := b.Demote(context.Background(), pvcContext(5*time.Second, nil), true)
			g.Expect(res.IsDone()).To(Equal(tc.want), res.String())
			g.Expect(b.IsDemoted(context.Background(), pvcContext(5*time.Second, nil), true)).To(Equal(tc.want))
		})
	}
}
