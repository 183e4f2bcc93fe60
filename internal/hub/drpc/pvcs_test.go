package drpc

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

var syncEpoch = time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)

// pvcAt is a primary's PVC in status.protectedPVCs: synced at second sec after syncEpoch (never
// when sec < 0), its DataReady True and DataProtected True once synced.
func pvcAt(name string, sec int) v1alpha1.ProtectedPVC {
	p := v1alpha1.ProtectedPVC{Namespace: "app", Name: name, Conditions: []metav1.Condition{
		{Type: v1alpha1.ConditionDataReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded},
		{Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonProgressing},
	}}
	if sec >= 0 {
		p.LastSyncTime = ptrTime(syncEpoch.Add(time.Duration(sec) * time.Second))
		p.LastSyncDuration = &metav1.Duration{Duration: 800 * time.Millisecond}
		p.Conditions[1] = metav1.Condition{Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded}
	}
	return p
}

// secondaryPVC is a secondary's PVC: DataReady with dataReadyReason (True when it is
// Secondary), DataProtected deferred to the primary.
func secondaryPVC(name, dataReadyReason string) v1alpha1.ProtectedPVC {
	ready := metav1.ConditionFalse
	if dataReadyReason == v1alpha1.ReasonSecondary {
		ready = metav1.ConditionTrue
	}
	return v1alpha1.ProtectedPVC{Namespace: "app", Name: name, Conditions: []metav1.Condition{
		{Type: v1alpha1.ConditionDataReady, Status: ready, Reason: dataReadyReason},
		{Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonSecondary},
	}}
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func groupOf(pvcs ...v1alpha1.ProtectedPVC) *v1alpha1.VolumeReplicationGroup {
	return &v1alpha1.VolumeReplicationGroup{Status: v1alpha1.VolumeReplicationGroupStatus{ProtectedPVCs: pvcs}}
}

// listed renders a summary's PVCs as "name dataProtected reason synced-second" lines.
func listed(pvcs []v1alpha1.PVCSyncSummary) []string {
	var out []string
	for _, p := range pvcs {
		synced := "never"
		if p.LastSyncTime != nil {
			synced = fmt.Sprintf("%ds", int(p.LastSyncTime.Sub(syncEpoch).Seconds()))
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", p.Name, p.DataProtected, p.Reason, synced))
	}
	return out
}

func TestAGroupsPVCsAreListedWithTheirLastSyncAndWhatHoldsThemBack(t *testing.T) {
	many := make([]v1alpha1.ProtectedPVC, 0, 20)
	for i := range 20 {
		many = append(many, pvcAt(fmt.Sprintf("data-%02d", i), 100-i)) // data-19 is the least recently synced
	}
	many[3] = pvcAt("data-03", -1) // never synced
	for _, c := range []struct {
		name string
		vrg  *v1alpha1.VolumeReplicationGroup
		want []string
	}{
		{"a primary's synced PVCs are listed by name with their syncs",
			groupOf(pvcAt("db-1", 7), pvcAt("db-0", 5)), []string{"db-0 True  5s", "db-1 True  7s"}},
		{"a primary's PVC that never synced is listed as not protected with its reason",
			groupOf(pvcAt("db-0", 5), pvcAt("db-1", -1)), []string{"db-0 True  5s", "db-1 False Progressing never"}},
		{"a PVC that is not ready shows DataReady's reason",
			groupOf(func() v1alpha1.ProtectedPVC {
				p := pvcAt("db-0", 5)
				p.Conditions[0] = metav1.Condition{Type: v1alpha1.ConditionDataReady, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoBackend}
				return p
			}()), []string{"db-0 True NoBackend 5s"}},
		{"a healthy secondary's PVCs, which receive the peer's syncs, are not listed",
			groupOf(secondaryPVC("db-0", v1alpha1.ReasonSecondary), secondaryPVC("db-1", v1alpha1.ReasonSecondary)), nil},
		{"a secondary's PVC that something holds back is listed with the reason",
			groupOf(secondaryPVC("db-0", v1alpha1.ReasonSecondary), secondaryPVC("db-1", v1alpha1.ReasonPVCInUse)),
			[]string{"db-1 Unknown PVCInUse never"}},
		{"a group without PVCs lists none", groupOf(), nil},
		{"past the bound, the PVCs held back and then the least recently synced are kept, by name",
			groupOf(many...), []string{"data-03 False Progressing never",
				"data-05 True  95s", "data-06 True  94s", "data-07 True  93s", "data-08 True  92s", "data-09 True  91s",
				"data-10 True  90s", "data-11 True  89s", "data-12 True  88s", "data-13 True  87s", "data-14 True  86s",
				"data-15 True  85s", "data-16 True  84s", "data-17 True  83s", "data-18 True  82s", "data-19 True  81s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := listed(pvcSummaries(c.vrg))
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("listed\n  %q\nwant\n  %q", got, c.want)
			}
			if s := summary("east", c.vrg); *s.ProtectedPVCs != int32(len(c.vrg.Status.ProtectedPVCs)) { //nolint:gosec // a test's few PVCs
				t.Errorf("protectedPVCs = %d, want the total %d", *s.ProtectedPVCs, len(c.vrg.Status.ProtectedPVCs))
			}
		})
	}
}

func TestTheListOfPVCsChangesOnlyWithTheRestOfTheGroupsSummary(t *testing.T) {
	before := groupOf(pvcAt("db-0", 0), pvcAt("db-1", 3), pvcAt("db-2", 6))
	before.Status.LastGroupSyncTime = ptrTime(syncEpoch)
	prev := summary("east", before)
	for _, c := range []struct {
		name   string
		change func(*v1alpha1.VolumeReplicationGroup)
		fresh  bool
	}{
		{"a PVC that is not the least recently synced syncs: the previous list stays", func(v *v1alpha1.VolumeReplicationGroup) {
			v.Status.ProtectedPVCs[1] = pvcAt("db-1", 13)
		}, false},
		{"the least recently synced PVC syncs, moving the group's last sync: the list is refreshed", func(v *v1alpha1.VolumeReplicationGroup) {
			v.Status.ProtectedPVCs[0] = pvcAt("db-0", 10)
			v.Status.LastGroupSyncTime = ptrTime(syncEpoch.Add(3 * time.Second))
		}, true},
		{"a PVC stops being protected, and the group says so: the list is refreshed", func(v *v1alpha1.VolumeReplicationGroup) {
			v.Status.ProtectedPVCs[2].Conditions[1] = metav1.Condition{Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSyncFailed}
			v.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSyncFailed}}
		}, true},
		{"a PVC joins the group: the list is refreshed", func(v *v1alpha1.VolumeReplicationGroup) {
			v.Status.ProtectedPVCs = append(v.Status.ProtectedPVCs, pvcAt("db-3", -1))
			v.Status.LastGroupSyncTime = nil
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := before.DeepCopy()
			c.change(now)
			next := summary("east", now)
			got := withPVCsOf(prev, next)
			want := prev.PVCs
			if c.fresh {
				want = next.PVCs
			}
			if !equality.Semantic.DeepEqual(got.PVCs, want) {
				t.Errorf("pvcs = %q, want %q", listed(got.PVCs), listed(want))
			}
		})
	}
}

// Three PVCs whose syncs start together every 10 s (replication sources on one schedule) and
// take 1, 2 and 4 s: each sync's end changes the group's status, but the
// group's last sync moves only once the third has ended. The summary, and so the
// DRPlacementControl's status, changes only then, where a list refreshed at each PVC's sync
// would change it three times per interval.
func TestSyncsOfPVCsAddNoStatusWriteToTheGroupsSummary(t *testing.T) {
	started := map[string]int{"db-0": 0, "db-1": 0, "db-2": 0}
	took := map[string]int{"db-0": 1, "db-1": 2, "db-2": 4}
	group := func() *v1alpha1.VolumeReplicationGroup {
		g := groupOf(pvcAt("db-0", started["db-0"]), pvcAt("db-1", started["db-1"]), pvcAt("db-2", started["db-2"]))
		oldest := min(started["db-0"], started["db-1"], started["db-2"])
		g.Status.LastGroupSyncTime = ptrTime(syncEpoch.Add(time.Duration(oldest) * time.Second))
		return g
	}
	stored, unkept := summary("east", group()), summary("east", group())
	writes, writesUnkept, groupSyncMoves := 0, 0, 0
	for sec := 1; sec <= 60; sec++ {
		ended := false
		for name := range started {
			if start := sec - took[name]; start > 0 && start%10 == 0 {
				started[name], ended = start, true
			}
		}
		if !ended {
			continue
		}
		fresh := summary("east", group())
		next := withPVCsOf(stored, fresh)
		if !next.LastGroupSyncTime.Equal(stored.LastGroupSyncTime) {
			groupSyncMoves++
		}
		if !equality.Semantic.DeepEqual(next, stored) {
			writes, stored = writes+1, next
		}
		if !equality.Semantic.DeepEqual(fresh, unkept) {
			writesUnkept, unkept = writesUnkept+1, fresh
		}
	}
	t.Logf("%d summary changes for %d moves of the group's last sync (%d if the list followed each PVC's sync)", writes, groupSyncMoves, writesUnkept)
	if writes != groupSyncMoves {
		t.Errorf("the summary changed %d times, the group's last sync %d times: the list of PVCs adds status writes", writes, groupSyncMoves)
	}
	if writesUnkept <= writes {
		t.Fatalf("the scenario does not show what it means to: a list following each sync changed the summary %d times", writesUnkept)
	}
	if got := listed(stored.PVCs); fmt.Sprint(got) != fmt.Sprint([]string{"db-0 True  50s", "db-1 True  50s", "db-2 True  50s"}) {
		t.Errorf("after the group's last sync moved the list is %q, want each PVC's last sync", got)
	}
}
