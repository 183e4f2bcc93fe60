package volsync

import (
	"context"
	"strings"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/drover-io/drover/api/v1alpha1"
	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// These tests use a fake client: they check the backend's decisions (names, schedule, class,
// which object, which Result); the agent's lab test proves them against a real API server and
// the lab's VolSync.

const driver = "file.lab.drover.io"

func TestNamesAreDerivedFromTheGroupAndThePVCAndStayValid(t *testing.T) {
	g := NewWithT(t)
	g.Expect(KeySecretName("db", "data-db-0")).To(Equal("db-data-db-0-volsync-key"))
	g.Expect(FinalSyncPVCName("data-db-0")).To(Equal("data-db-0-drover-final"))

	long := strings.Repeat("p", 250)
	a, b := FinalSyncPVCName(long+"a"), FinalSyncPVCName(long+"b")
	g.Expect(len(a)).To(Equal(253), "a name too long is shortened to the longest allowed")
	g.Expect(a).NotTo(Equal(b), "two long names stay distinct")
	g.Expect(FinalSyncPVCName(long+"a")).To(Equal(a), "the same PVC always gets the same name")
	g.Expect(len(KeySecretName(long, long))).To(Equal(253))
}

func TestScheduleExpressesWholeMinutesHoursAndDaysAndRefusesTheRest(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		want     string
		wantErr  string
	}{
		{"a minute", time.Minute, "*/1 * * * *", ""},
		{"five minutes", 5 * time.Minute, "*/5 * * * *", ""},
		{"two hours", 2 * time.Hour, "0 */2 * * *", ""},
		{"a day", 24 * time.Hour, "0 0 */1 * *", ""},
		{"seconds cannot be scheduled", 30 * time.Second, "", "use 1m or more"},
		{"part minutes cannot be scheduled", 90 * time.Second, "", "whole minutes"},
		{"part hours above an hour cannot be scheduled", 90 * time.Minute, "", "whole hours"},
		{"part days above a day cannot be scheduled", 36 * time.Hour, "", "whole days"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Schedule(tt.interval)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestTriggerIsContinuousBelowAMinuteAndAScheduleFromAMinute(t *testing.T) {
	g := NewWithT(t)
	tr, err := Trigger(5 * time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tr).To(BeNil())
	tr, err = Trigger(2 * time.Minute)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tr.Schedule).To(HaveValue(Equal("*/2 * * * *")))
	_, err = Trigger(61 * time.Second)
	g.Expect(err).To(HaveOccurred())
}

func snapshotClass(name, drv string, isDefault bool) snapshotv1.VolumeSnapshotClass {
	c := snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: drv, DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete}
	if isDefault {
		c.Annotations = map[string]string{defaultSnapshotClassAnnotation: "true"}
	}
	return c
}

func TestSnapshotClassForPicksTheDriversOnlyOrDefaultClass(t *testing.T) {
	tests := []struct {
		name    string
		classes []snapshotv1.VolumeSnapshotClass
		want    string
		wantErr string
	}{
		{"the only class of the driver", []snapshotv1.VolumeSnapshotClass{snapshotClass("a", driver, false), snapshotClass("rbd", "rbd", true)}, "a", ""},
		{"the default among several", []snapshotv1.VolumeSnapshotClass{snapshotClass("a", driver, false), snapshotClass("b", driver, true)}, "b", ""},
		{"none of the driver", []snapshotv1.VolumeSnapshotClass{snapshotClass("rbd", "rbd", false)}, "", "no VolumeSnapshotClass"},
		{"several without one default", []snapshotv1.VolumeSnapshotClass{snapshotClass("b", driver, false), snapshotClass("a", driver, false)}, "", "VolumeSnapshotClasses a, b all have driver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := SnapshotClassFor(tt.classes, driver)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func newClient(g Gomega, objs ...client.Object) client.Client {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, volsyncv1alpha1.AddToScheme, snapshotv1.AddToScheme, mcsv1alpha1.AddToScheme} {
		g.Expect(add(s)).To(Succeed())
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&volsyncv1alpha1.ReplicationSource{}, &volsyncv1alpha1.ReplicationDestination{}, &mcsv1alpha1.ServiceExport{}).Build()
}

func group() *v1alpha1.VolumeReplicationGroup {
	return &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}}
}

func pvcContext(vrg *v1alpha1.VolumeReplicationGroup) *replication.PVCContext {
	return &replication.PVCContext{
		VRG:              vrg,
		PVC:              &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}},
		PV:               &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"}},
		StorageClassName: "lab-file", Provisioner: driver, Interval: time.Minute,
		MoverSecurityContext: appUser(),
	}
}

// appUser is the user of the tests' application, whom its movers run as.
func appUser() *v1alpha1.VolSyncMoverSecurityContext {
	return &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 1000, RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
}

func keySecret(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name}, Data: map[string][]byte{PSKKey: []byte("volsync:00")}}
}

func TestProtectWaitsForTheDestinationAndItsKeyThenSendsOnTheSchedule(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	cl := newClient(g, ptr.To(snapshotClass("lab-file-snapshot", driver, false)))
	b := New(cl, cl)

	res := b.Protect(ctx, pvcContext(vrg))
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonVolSyncDestinationUnknown))
	g.Expect(res.Message).To(ContainSubstring("spec.volSync.destinations has no entry"))
	g.Expect(res.Writable).To(BeTrue(), "the PVC is writable while its replication waits")

	key := KeySecretName("db", "data")
	vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{Destinations: []v1alpha1.VolSyncDestination{{
		PVCNamespace: "app", PVCName: "data", Address: "volsync-data.app.lab", KeySecretName: key,
	}}}
	res = b.Protect(ctx, pvcContext(vrg))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonVolSyncDestinationUnknown))
	g.Expect(res.Message).To(ContainSubstring("key Secret app/" + key + " is not on this cluster yet"))

	g.Expect(cl.Create(ctx, keySecret(key))).To(Succeed())
	g.Expect(b.Protect(ctx, pvcContext(vrg)).IsDone()).To(BeTrue())
	rs := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, rs)).To(Succeed())
	g.Expect(rs.Labels).To(Equal(GroupLabels(vrg)))
	g.Expect(rs.Spec.SourcePVC).To(Equal("data"))
	g.Expect(rs.Spec.Trigger.Schedule).To(HaveValue(Equal("*/1 * * * *")))
	g.Expect(rs.Spec.RsyncTLS.Address).To(HaveValue(Equal("volsync-data.app.lab")))
	g.Expect(rs.Spec.RsyncTLS.KeySecret).To(HaveValue(Equal(key)))
	g.Expect(rs.Spec.RsyncTLS.CopyMethod).To(Equal(volsyncv1alpha1.CopyMethodSnapshot))
	g.Expect(rs.Spec.RsyncTLS.VolumeSnapshotClassName).To(HaveValue(Equal("lab-file-snapshot")))

	pc := pvcContext(vrg)
	pc.Interval = 10 * time.Second
	g.Expect(b.Protect(ctx, pc).IsDone()).To(BeTrue())
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rs), rs)).To(Succeed())
	g.Expect(rs.Spec.Trigger).To(BeNil(), "below a minute the source syncs continuously")

	pc.Interval = 90 * time.Second
	res = b.Protect(ctx, pc)
	g.Expect(res.Outcome).To(Equal(replication.OutcomeFailed))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonInvalidSpec))
	g.Expect(res.Message).To(ContainSubstring("whole minutes"))
}

// protectedSource gives vrg a destination for PVC app/data and protects it: its source exists.
func protectedSource(g Gomega, vrg *v1alpha1.VolumeReplicationGroup) (*Backend, client.Client) {
	key := KeySecretName(vrg.Name, "data")
	vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{Destinations: []v1alpha1.VolSyncDestination{{
		PVCNamespace: "app", PVCName: "data", Address: "volsync-data.app.lab", KeySecretName: key,
	}}}
	cl := newClient(g, ptr.To(snapshotClass("lab-file-snapshot", driver, false)), keySecret(key))
	b := New(cl, cl)
	g.Expect(b.Protect(context.Background(), pvcContext(vrg)).IsDone()).To(BeTrue())
	return b, cl
}

func TestAReplicationSourceOfAnotherGroupIsAConflict(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	key := KeySecretName("db", "data")
	vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{Destinations: []v1alpha1.VolSyncDestination{{PVCNamespace: "app", PVCName: "data", Address: "a.lab", KeySecretName: key}}}
	foreign := &volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data",
		Labels: map[string]string{LabelVRGName: "other", LabelVRGNamespace: "app"}}}
	cl := newClient(g, ptr.To(snapshotClass("c", driver, false)), keySecret(key), foreign)
	b := New(cl, cl)
	res := b.Protect(ctx, pvcContext(vrg))
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonReplicationConflict))
	g.Expect(b.Demote(ctx, pvcContext(vrg), true).IsDone()).To(BeTrue(), "another group's source is left alone")
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(foreign), &volsyncv1alpha1.ReplicationSource{})).To(Succeed())
}

func TestFinalSyncStopsTheScheduleAndIsDoneOnlyAfterASyncThatStartedLater(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	vrg.Spec.FinalSyncRequest = "relocate-1"
	rs := &volsyncv1alpha1.ReplicationSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", Labels: GroupLabels(vrg)},
		Spec: volsyncv1alpha1.ReplicationSourceSpec{SourcePVC: "data", Trigger: &volsyncv1alpha1.TriggerSpec{Schedule: ptr.To("*/1 * * * *")},
			RsyncTLS: &volsyncv1alpha1.ReplicationSourceRsyncTLSSpec{Address: ptr.To("a.lab")}},
	}
	cl := newClient(g, rs)
	b := New(cl, cl)
	// completes records a completed sync as VolSync does: lastManualSync is the trigger now.
	completes := func() {
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rs), rs)).To(Succeed())
		rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: rs.Spec.Trigger.Manual}
		g.Expect(cl.Status().Update(ctx, rs)).To(Succeed())
	}

	// A DR-owned PVC stands for the deleted PVC "data": it syncs through its source.
	pc := pvcContext(vrg)
	pc.PVC = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: FinalSyncPVCName("data"),
		Annotations: map[string]string{AnnotationFinalSyncOf: "data"}}}
	res := b.FinalSync(ctx, pc)
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
	g.Expect(res.Message).To(ContainSubstring("step 1 of 3"))
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rs), rs)).To(Succeed())
	g.Expect(rs.Spec.Trigger).To(Equal(&volsyncv1alpha1.TriggerSpec{Manual: "relocate-1-drain"}), "the schedule stops, the running sync is drained")
	g.Expect(rs.Spec.SourcePVC).To(Equal(FinalSyncPVCName("data")))
	g.Expect(b.FinalSync(ctx, pc).IsDone()).To(BeFalse(), "nothing completed yet")

	// The sync that was running when the drain trigger was set completes: it may have begun
	// before the workload stopped, so it does not count.
	completes()
	res = b.FinalSync(ctx, pc)
	g.Expect(res.IsDone()).To(BeFalse(), "the sync that satisfied the drain trigger may have started before the stop")
	g.Expect(res.Message).To(ContainSubstring("step 2 of 3"))
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rs), rs)).To(Succeed())
	g.Expect(rs.Spec.Trigger).To(Equal(&volsyncv1alpha1.TriggerSpec{Manual: "relocate-1-final"}))
	g.Expect(b.FinalSync(ctx, pc).IsDone()).To(BeFalse(), "the final sync runs")
	completes()
	res = b.FinalSync(ctx, pc)
	g.Expect(res.IsDone()).To(BeFalse(), "the source of the final sync completes before the destination took its image")
	g.Expect(res.Message).To(ContainSubstring("step 3 of 3"))
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rs), rs)).To(Succeed())
	g.Expect(rs.Spec.Trigger).To(Equal(&volsyncv1alpha1.TriggerSpec{Manual: "relocate-1-confirm"}))
	g.Expect(b.FinalSync(ctx, pc).IsDone()).To(BeFalse(), "the confirming sync runs")
	completes()
	g.Expect(b.FinalSync(ctx, pc).IsDone()).To(BeTrue(), "a sync after the final one reached the destination, so the destination took the final one's image")

	missing := pvcContext(vrg)
	missing.PVC = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "never-protected"}}
	g.Expect(b.FinalSync(ctx, missing).Outcome).To(Equal(replication.OutcomeFailed), "a PVC without a source or a destination cannot carry its writes")

	// A source removed behind the relocation's back is recreated for the final sync when the
	// destination is known.
	g.Expect(cl.Create(ctx, ptr.To(snapshotClass("lab-file-snapshot", driver, false)))).To(Succeed())
	vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{Destinations: []v1alpha1.VolSyncDestination{{
		PVCNamespace: "app", PVCName: "gone", Address: "volsync-gone.app.lab", KeySecretName: KeySecretName("db", "gone"),
	}}}
	gone := pvcContext(vrg)
	gone.PVC = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: FinalSyncPVCName("gone"),
		Annotations: map[string]string{AnnotationFinalSyncOf: "gone"}}}
	g.Expect(b.FinalSync(ctx, gone).Outcome).To(Equal(replication.OutcomeRetry))
	recreated := &volsyncv1alpha1.ReplicationSource{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "gone"}, recreated)).To(Succeed())
	g.Expect(recreated.Spec.Trigger).To(Equal(&volsyncv1alpha1.TriggerSpec{Manual: "relocate-1-drain"}))
	g.Expect(recreated.Spec.SourcePVC).To(Equal(FinalSyncPVCName("gone")))
}

// The final sync's step is recomputed from the source at every pass, so a restart or a stale
// read anywhere never takes a sync that may have begun before the stop for the final one.
func TestFinalSyncStepIsRecomputedFromTheSource(t *testing.T) {
	schedule := &volsyncv1alpha1.TriggerSpec{Schedule: ptr.To("*/1 * * * *")}
	manual := func(m string) *volsyncv1alpha1.TriggerSpec { return &volsyncv1alpha1.TriggerSpec{Manual: m} }
	for _, tc := range []struct {
		name      string
		sourcePVC string
		trigger   *volsyncv1alpha1.TriggerSpec
		last      string
		want      string
		done      bool
	}{
		{"a scheduled source is drained first", "data", schedule, "", "r-drain", false},
		{"a continuous source is drained first", "data", nil, "", "r-drain", false},
		{"an earlier relocation's final trigger does not count", "data", manual("old-final"), "old-final", "r-drain", false},
		{"the drain waits for the running sync", "data", manual("r-drain"), "old", "r-drain", false},
		{"once drained the final sync is asked", "data", manual("r-drain"), "r-drain", "r-final", false},
		{"the final sync runs", "data", manual("r-final"), "r-drain", "r-final", false},
		{"the final sync completed: one more is asked, to prove its image exists", "data", manual("r-final"), "r-final", "r-confirm", false},
		{"the confirming sync runs", "data", manual("r-confirm"), "r-final", "r-confirm", false},
		{"the confirming sync completed", "data", manual("r-confirm"), "r-confirm", "r-confirm", true},
		{"a confirmation recorded from another PVC starts again", "other", manual("r-confirm"), "r-confirm", "r-drain", false},
		{"a drain recorded from another PVC starts again", "other", manual("r-drain"), "r-drain", "r-drain", false},
		{"a final sync recorded from another PVC starts again", "other", manual("r-final"), "r-final", "r-drain", false},
		{"a schedule beside the final trigger is not a final sync", "data",
			&volsyncv1alpha1.TriggerSpec{Manual: "r-final", Schedule: ptr.To("*/1 * * * *")}, "r-final", "r-drain", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rs := &volsyncv1alpha1.ReplicationSource{
				Spec:   volsyncv1alpha1.ReplicationSourceSpec{SourcePVC: tc.sourcePVC, Trigger: tc.trigger},
				Status: &volsyncv1alpha1.ReplicationSourceStatus{LastManualSync: tc.last},
			}
			got, done := finalSyncStep(rs, "data", "r")
			g.Expect(got).To(Equal(tc.want))
			g.Expect(done).To(Equal(tc.done))
		})
	}
}

// A sync's point in time is the start of the last COMPLETED sync: VolSync clears
// lastSyncStartTime when a sync completes and sets it again when the next one starts.
func TestRecoveryPointIsTheStartOfTheLastCompletedSync(t *testing.T) {
	end := time.Date(2026, 12, 3, 12, 0, 30, 0, time.UTC)
	running := metav1.NewTime(end.Add(5 * time.Second))
	for _, tc := range []struct {
		name   string
		status *volsyncv1alpha1.ReplicationSourceStatus
		want   *time.Time
	}{
		{"completion minus duration", &volsyncv1alpha1.ReplicationSourceStatus{
			LastSyncTime: &metav1.Time{Time: end}, LastSyncDuration: &metav1.Duration{Duration: 20 * time.Second}},
			ptr.To(end.Add(-20 * time.Second))},
		{"a duration measured from the start as stored (to the second) gives that start back", &volsyncv1alpha1.ReplicationSourceStatus{
			LastSyncTime: &metav1.Time{Time: end}, LastSyncDuration: &metav1.Duration{Duration: 20*time.Second + 400*time.Millisecond}},
			ptr.To(end.Add(-20 * time.Second))},
		{"a sync running now is not the recovery point", &volsyncv1alpha1.ReplicationSourceStatus{
			LastSyncTime: &metav1.Time{Time: end}, LastSyncDuration: &metav1.Duration{Duration: 20 * time.Second}, LastSyncStartTime: &running},
			ptr.To(end.Add(-20 * time.Second))},
		{"without a duration, the completion", &volsyncv1alpha1.ReplicationSourceStatus{LastSyncTime: &metav1.Time{Time: end}}, ptr.To(end)},
		{"a first sync running has no recovery point", &volsyncv1alpha1.ReplicationSourceStatus{LastSyncStartTime: &running}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := recoveryPoint(tc.status)
			if tc.want == nil {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.Time).To(BeTemporally("==", *tc.want))
		})
	}
}

// The destination takes the image of a sync after the source recorded it, so Status reports
// the sync before the source's last completion: the newest one whose image is proven to exist.
func TestStatusReportsTheSyncBeforeTheSourcesLastCompletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	b, cl := protectedSource(g, vrg)
	complete := func(start time.Time) {
		rs := &volsyncv1alpha1.ReplicationSource{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, rs)).To(Succeed())
		rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{LastSyncTime: &metav1.Time{Time: start.Add(3 * time.Second)},
			LastSyncDuration: &metav1.Duration{Duration: 3 * time.Second}}
		g.Expect(cl.Status().Update(ctx, rs)).To(Succeed())
		g.Expect(b.Protect(ctx, pvcContext(vrg)).IsDone()).To(BeTrue())
	}
	point := func() *metav1.Time {
		st, err := b.Status(ctx, pvcContext(vrg))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.RefreshInterval).To(Equal(pvcContext(vrg).Interval), "the recovery point advances a sync late")
		return st.LastSyncTime
	}
	first := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	complete(first)
	g.Expect(point()).To(BeNil(), "after the first completion the destination may hold no image yet")
	complete(first.Add(10 * time.Second))
	g.Expect(point().Time).To(BeTemporally("==", first), "the second completion proves the first image")
	complete(first.Add(20 * time.Second))
	g.Expect(point().Time).To(BeTemporally("==", first.Add(10*time.Second)))
	// A pass that saw no new completion changes nothing, and a stale read never moves it back.
	complete(first.Add(20 * time.Second))
	complete(first.Add(10 * time.Second))
	g.Expect(point().Time).To(BeTemporally("==", first.Add(10*time.Second)))
}

// A relocation's final and confirming syncs may start within one second: the confirming
// sync's completion still proves the final sync's image, so the final sync's start becomes the
// recovery point (the agent records the final sync only once the point reaches the demotion).
func TestTheConfirmingSyncMakesTheFinalSyncTheRecoveryPointWithinOneSecond(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	b, cl := protectedSource(g, vrg)
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	complete := func(completed time.Duration, took time.Duration, manual string) {
		rs := &volsyncv1alpha1.ReplicationSource{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, rs)).To(Succeed())
		rs.Status = &volsyncv1alpha1.ReplicationSourceStatus{LastSyncTime: &metav1.Time{Time: at.Add(completed)},
			LastSyncDuration: &metav1.Duration{Duration: took}, LastManualSync: manual}
		g.Expect(cl.Status().Update(ctx, rs)).To(Succeed())
		g.Expect(b.Protect(ctx, pvcContext(vrg)).IsDone()).To(BeTrue())
	}
	complete(5*time.Second, 2500*time.Millisecond, "r-drain")  // started 12:00:02.5, stored 12:00:03
	complete(6*time.Second, 700*time.Millisecond, "r-final")   // started 12:00:05.3, stored 12:00:06
	complete(6*time.Second, 300*time.Millisecond, "r-confirm") // started 12:00:05.7, stored 12:00:06
	st, err := b.Status(ctx, pvcContext(vrg))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.LastSyncTime).NotTo(BeNil())
	g.Expect(st.LastSyncTime.Time).To(BeTemporally("==", at.Add(6*time.Second)), "the final sync's start, proven by the confirming sync")
}

func TestEnsureDestinationMakesTheKeyOnceAndReportsTheAddress(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-file"}, Provisioner: driver}
	kept := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}}
	cl := newClient(g, class, ptr.To(snapshotClass("lab-file-snapshot", driver, false)), kept)
	b := New(cl, cl)
	rp := v1alpha1.VolSyncReceivePVC{PVCNamespace: "app", PVCName: "data", StorageClassName: "lab-file",
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: resource.MustParse("1Gi"),
		MoverSecurityContext: appUser()}

	d, res := b.EnsureDestination(ctx, vrg, rp, "")
	g.Expect(d).To(BeNil())
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry), "waiting for the address")
	key := &corev1.Secret{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: KeySecretName("db", "data")}, key)).To(Succeed())
	g.Expect(string(key.Data[PSKKey])).To(MatchRegexp("^volsync:[0-9a-f]{64}$"))
	g.Expect(key.OwnerReferences).To(BeEmpty(), "the key outlives the destination: the peer's agent uses it through the stores")
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.KeySecret).To(HaveValue(Equal(KeySecretName("db", "data"))))
	g.Expect(rd.Spec.RsyncTLS.CopyMethod).To(Equal(volsyncv1alpha1.CopyMethodSnapshot))
	g.Expect(rd.Spec.RsyncTLS.ServiceType).To(HaveValue(Equal(corev1.ServiceTypeLoadBalancer)), "the peer cannot reach a ClusterIP address")
	g.Expect(rd.Spec.RsyncTLS.VolumeSnapshotClassName).To(HaveValue(Equal("lab-file-snapshot")))
	g.Expect(rd.Spec.RsyncTLS.Capacity.String()).To(Equal("1Gi"))
	g.Expect(rd.Spec.RsyncTLS.DestinationPVC).To(BeNil())

	rd.Status = &volsyncv1alpha1.ReplicationDestinationStatus{RsyncTLS: &volsyncv1alpha1.ReplicationDestinationRsyncTLSStatus{Address: ptr.To("volsync-data.app.lab")}}
	g.Expect(cl.Status().Update(ctx, rd)).To(Succeed())
	d, res = b.EnsureDestination(ctx, vrg, rp, "data")
	g.Expect(res.IsDone()).To(BeTrue())
	g.Expect(d).To(Equal(&v1alpha1.VolSyncDestination{PVCNamespace: "app", PVCName: "data", Address: "volsync-data.app.lab", KeySecretName: KeySecretName("db", "data")}))
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rd), rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.DestinationPVC).To(HaveValue(Equal("data")), "a kept PVC becomes the destination's volume")
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(kept), kept)).To(Succeed())
	g.Expect(kept.Annotations).To(HaveKeyWithValue(AnnotationReceivedBy, "app/db"), "the kept PVC is marked as VolSync's replica before it is named")
	before := key.Data[PSKKey]
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(key), key)).To(Succeed())
	g.Expect(key.Data[PSKKey]).To(Equal(before), "an existing key is kept")

	rp.StorageClassName = "missing"
	_, res = b.EnsureDestination(ctx, vrg, rp, "")
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonNotFound))
}

func TestDemoteRemovesTheSourceAndCleanupTheDestination(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	cl := newClient(g,
		&volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", Labels: GroupLabels(vrg)}},
		&volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", Labels: GroupLabels(vrg)}})
	b := New(cl, cl)
	g.Expect(b.Demote(ctx, pvcContext(vrg), true).Outcome).To(Equal(replication.OutcomeRetry), "waiting for the deletion")
	g.Expect(b.Demote(ctx, pvcContext(vrg), true).IsDone()).To(BeTrue())
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, &volsyncv1alpha1.ReplicationDestination{})).To(Succeed(), "demoting keeps the destination")
	g.Expect(b.Cleanup(ctx, pvcContext(vrg)).Outcome).To(Equal(replication.OutcomeRetry))
	g.Expect(b.Cleanup(ctx, pvcContext(vrg)).IsDone()).To(BeTrue())
}

func TestCleanupKeepsTheDestinationTheGroupStillReceives(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{ReceivePVCs: []v1alpha1.VolSyncReceivePVC{{PVCNamespace: "app", PVCName: "data"}}}
	cl := newClient(g,
		&volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", Labels: GroupLabels(vrg)}},
		&volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", Labels: GroupLabels(vrg)}})
	b := New(cl, cl)
	g.Expect(b.Cleanup(ctx, pvcContext(vrg)).Outcome).To(Equal(replication.OutcomeRetry), "waiting for the source's deletion")
	g.Expect(b.Cleanup(ctx, pvcContext(vrg)).IsDone()).To(BeTrue())
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, &volsyncv1alpha1.ReplicationSource{})).NotTo(Succeed(), "the source is removed")
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, &volsyncv1alpha1.ReplicationDestination{})).To(Succeed(),
		"the destination receiving the peer's PVC of that name stays")
}

func TestEnsureDestinationReceivesABlockPVCAsBlock(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-file"}, Provisioner: driver}
	cl := newClient(g, class, ptr.To(snapshotClass("lab-file-snapshot", driver, false)))
	b := New(cl, cl)
	for _, c := range []struct {
		name string
		mode *corev1.PersistentVolumeMode
	}{{"data", ptr.To(corev1.PersistentVolumeBlock)}, {"files", nil}} {
		rp := v1alpha1.VolSyncReceivePVC{PVCNamespace: "app", PVCName: c.name, StorageClassName: "lab-file",
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: resource.MustParse("1Gi"), VolumeMode: c.mode,
			MoverSecurityContext: appUser()}
		b.EnsureDestination(ctx, group(), rp, "")
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: c.name}, rd)).To(Succeed())
		g.Expect(rd.Spec.RsyncTLS.VolumeMode).To(Equal(c.mode), "PVC %s", c.name)
	}
}

// VolSync retries a failing mover with Synchronizing still SyncInProgress and reports the
// failure only in status.latestMoverStatus: drover quotes it.
func TestAFailingMoverIsReportedWithItsLog(t *testing.T) {
	inProgress := []metav1.Condition{{Type: volsyncv1alpha1.ConditionSynchronizing, Status: metav1.ConditionTrue,
		Reason: volsyncv1alpha1.SynchronizingReasonSync, Message: "Synchronization in-progress"}}
	for _, tc := range []struct {
		name   string
		mover  *volsyncv1alpha1.MoverStatus
		reason string
		quotes string
	}{
		{"a failed mover", &volsyncv1alpha1.MoverStatus{Result: volsyncv1alpha1.MoverResultFailed,
			Logs: "rsync: [sender] opendir \"/data/x\" failed: Permission denied (13)\nrsync error: some files could not be transferred"},
			v1alpha1.ReasonMoverFailed, `opendir "/data/x" failed: Permission denied (13) | rsync error`},
		{"a long log is cut to its tail", &volsyncv1alpha1.MoverStatus{Result: volsyncv1alpha1.MoverResultFailed,
			Logs: strings.Repeat("x", 2000) + "the end"}, v1alpha1.ReasonMoverFailed, "xxxthe end"},
		{"a successful mover", &volsyncv1alpha1.MoverStatus{Result: volsyncv1alpha1.MoverResultSuccessful, Logs: "sent 10 bytes"}, "", ""},
		{"no mover yet", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			rs := &volsyncv1alpha1.ReplicationSource{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"},
				Status: &volsyncv1alpha1.ReplicationSourceStatus{Conditions: inProgress, LatestMoverStatus: tc.mover}}
			res := observeSource(rs)
			if tc.reason == "" {
				g.Expect(res.IsDone()).To(BeTrue())
				return
			}
			g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
			g.Expect(res.Reason).To(Equal(tc.reason))
			g.Expect(res.Message).To(ContainSubstring("status.latestMoverStatus"))
			g.Expect(res.Message).To(ContainSubstring(tc.quotes))
			g.Expect(len(res.Message)).To(BeNumerically("<", 700), "a condition quotes the log's tail, not the whole log")
		})
	}
}
