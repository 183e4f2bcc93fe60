package v1alpha1_test

import (
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

const (
	msgGroupsFixed   = "consistencyGroups is immutable: delete and recreate the DRPlacementControl to group its PVCs otherwise; a PVC joins or leaves a group by its labels"
	msgGroupName     = "a consistency group's name must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or a digit"
	msgGroupSelector = "a consistency group's selector may hold at most 32 matchLabels and 16 matchExpressions of at most 64 values each"
)

// group is a consistency group of the PVCs labelled role in roles.
func group(name string, roles ...string) v1alpha1.ConsistencyGroup {
	return v1alpha1.ConsistencyGroup{Name: name, Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "role", Operator: metav1.LabelSelectorOpIn, Values: roles},
	}}}
}

// withGroups sets the DRPlacementControl's consistency groups.
func withGroups(groups ...v1alpha1.ConsistencyGroup) func(*v1alpha1.DRPlacementControlSpec) {
	return func(s *v1alpha1.DRPlacementControlSpec) { s.ConsistencyGroups = groups }
}

func TestConsistencyGroupsValidation(t *testing.T) {
	nine := make([]v1alpha1.ConsistencyGroup, 9)
	for i := range nine {
		nine[i] = group("g"+strconv.Itoa(i), "r"+strconv.Itoa(i))
	}
	runCreateCases(t, []createCase{
		{name: "a group of the data and log PVCs is accepted", obj: drpc(withGroups(group("db", "data", "log")))},
		{name: "a group with an empty selector (every PVC of the application) is accepted", obj: drpc(withGroups(v1alpha1.ConsistencyGroup{Name: "all"}))},
		{name: "eight groups are accepted", obj: drpc(withGroups(nine[:8]...))},
		{name: "nine groups are rejected", obj: drpc(withGroups(nine...)), wantErr: "spec.consistencyGroups: Too many: 9: must have at most 8 items"},
		{name: "two groups of one name are rejected", obj: drpc(withGroups(group("db", "data"), group("db", "log"))), wantErr: `spec.consistencyGroups[1]: Duplicate value: {"name":"db"}`},
		{name: "a group without a name is rejected", obj: drpc(withGroups(group("", "data"))), wantErr: "spec.consistencyGroups[0].name: Required value"},
		{name: "a group named with capitals is rejected", obj: drpc(withGroups(group("DB", "data"))), wantErr: msgGroupName},
		{name: "a group named with a dot is rejected", obj: drpc(withGroups(group("db.wal", "data"))), wantErr: msgGroupName},
		{name: "a group named with a trailing dash is rejected", obj: drpc(withGroups(group("db-", "data"))), wantErr: msgGroupName},
		{name: "a group name of 64 characters is rejected", obj: drpc(withGroups(group(strings.Repeat("a", 64), "data"))), wantErr: "spec.consistencyGroups[0].name: Too long"},
		{name: "a group selecting by 33 labels is rejected", obj: drpc(withGroups(v1alpha1.ConsistencyGroup{Name: "db", Selector: bigSelector(33)})), wantErr: msgGroupSelector},
	})
}

func TestConsistencyGroupsCannotChange(t *testing.T) {
	runUpdateCases(t, []updateCase[*v1alpha1.DRPlacementControl]{
		{
			name:    "changing a group's selector is rejected",
			obj:     drpc(withGroups(group("db", "data", "log"))),
			update:  func(d *v1alpha1.DRPlacementControl) { d.Spec.ConsistencyGroups[0] = group("db", "data") },
			wantErr: msgGroupsFixed,
		},
		{
			name: "adding a group is rejected",
			obj:  drpc(withGroups(group("db", "data", "log"))),
			update: func(d *v1alpha1.DRPlacementControl) {
				withGroups(group("db", "data", "log"), group("cache", "cache"))(&d.Spec)
			},
			wantErr: msgGroupsFixed,
		},
		{
			name:    "giving groups to a DRPlacementControl created without is rejected",
			obj:     drpc(),
			update:  func(d *v1alpha1.DRPlacementControl) { withGroups(group("db", "data", "log"))(&d.Spec) },
			wantErr: msgGroupsFixed,
		},
		{
			name:    "removing the groups is rejected",
			obj:     drpc(withGroups(group("db", "data", "log"))),
			update:  func(d *v1alpha1.DRPlacementControl) { d.Spec.ConsistencyGroups = nil },
			wantErr: msgGroupsFixed,
		},
		{
			name: "a failover of a DRPlacementControl with groups is accepted",
			obj:  drpc(withGroups(group("db", "data", "log"))),
			update: func(d *v1alpha1.DRPlacementControl) {
				d.Spec.Action, d.Spec.FailoverCluster = v1alpha1.ActionFailover, "west"
			},
		},
	})
}
