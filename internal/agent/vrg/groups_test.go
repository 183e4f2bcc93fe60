package vrg

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

func TestGroupLabelIsAValidLabelValueUniqueToTheGroup(t *testing.T) {
	long := strings.Repeat("application", 10)
	tests := []struct {
		name, vrg, group, want string
	}{
		{name: "a short name is the group's name after its VolumeReplicationGroup's", vrg: "db", group: "wal", want: "db.wal"},
		{name: "a long name is shortened with a hash of the VolumeReplicationGroup's name", vrg: long, group: "wal"},
		{name: "the longest group name still fits", vrg: long, group: strings.Repeat("g", 63)},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GroupLabel(tt.vrg, tt.group)
			if tt.want != "" && got != tt.want {
				t.Errorf("GroupLabel(%q, %q) = %q, want %q", tt.vrg, tt.group, got, tt.want)
			}
			if len(got) > 63 || strings.Trim(got, "-.") != got || !strings.HasSuffix(got, tt.group[max(0, len(tt.group)-50):]) {
				t.Errorf("GroupLabel(%q, %q) = %q: not a label value ending with the group", tt.vrg, tt.group, got)
			}
			if seen[got] {
				t.Errorf("GroupLabel(%q, %q) = %q, as another group's", tt.vrg, tt.group, got)
			}
			seen[got] = true
		})
	}
	if GroupLabel(long+"x", "wal") == GroupLabel(long+"y", "wal") {
		t.Error("two long VolumeReplicationGroup names that differ at their end give one label")
	}
}

func TestTheGroupsStatusListsEachGroupsMembersAndItsPoint(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC))
	vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Name: "db", Generation: 3}, Spec: v1alpha1.VolumeReplicationGroupSpec{
		ReplicationState:  v1alpha1.ReplicationStatePrimary,
		ConsistencyGroups: []v1alpha1.VRGConsistencyGroup{{Name: "wal"}, {Name: "empty"}},
	}}
	member := func(name string, res replication.Result, sync *metav1.Time) *pvcState {
		return &pvcState{pvc: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name}},
			backend: v1alpha1.BackendVolRep, group: &replication.GroupContext{Name: "wal", Label: "db.wal"}, result: res,
			sync: replication.SyncStatus{LastSyncTime: sync}}
	}
	alone := &pvcState{pvc: &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "cache"}}, result: replication.Done()}
	pvcs := []*pvcState{member("data", replication.Done(), &at), member("log", replication.Done(), &at), alone}

	st := groupsStatus(vrg, pvcs, nil)
	if len(st) != 2 || st[0].Name != "wal" || st[1].Name != "empty" {
		t.Fatalf("want the groups wal and empty in spec order, got %+v", st)
	}
	if got := strings.Join(st[0].Members, ","); got != "data,log" || st[0].Namespace != "app" || st[0].Backend != v1alpha1.BackendVolRep {
		t.Errorf("group wal: members %q, namespace %q, backend %q", got, st[0].Namespace, st[0].Backend)
	}
	if st[0].LastSyncTime == nil || !st[0].LastSyncTime.Equal(&at) {
		t.Errorf("group wal's point: got %v, want %v", st[0].LastSyncTime, at)
	}
	for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected} {
		if !apimeta.IsStatusConditionTrue(st[0].Conditions, ct) {
			t.Errorf("group wal: %s not True: %+v", ct, st[0].Conditions)
		}
	}
	if len(st[1].Members) != 0 {
		t.Errorf("group empty has members %v", st[1].Members)
	}

	refused := replication.Failed(v1alpha1.ReasonConsistencyGroupUnsupported, "no VolumeGroupReplicationClass has provisioner x")
	st = groupsStatus(vrg, []*pvcState{member("data", refused, nil), member("log", replication.Done(), &at)}, st)
	c := apimeta.FindStatusCondition(st[0].Conditions, v1alpha1.ConditionDataReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonConsistencyGroupUnsupported {
		t.Errorf("a refused member makes its group's DataReady False with its reason: %+v", c)
	}
	if st[0].LastSyncTime != nil {
		t.Errorf("a group whose member has no point has none: %v", st[0].LastSyncTime)
	}
}
