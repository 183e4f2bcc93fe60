package drpc

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/drover-io/drover/api/v1alpha1"
)

func TestTheGroupsCarryTheConsistencyGroupsNarrowedToThePVCSelector(t *testing.T) {
	drpc := &v1alpha1.DRPlacementControl{Spec: v1alpha1.DRPlacementControlSpec{
		PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		ConsistencyGroups: []v1alpha1.ConsistencyGroup{
			{Name: "db", Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "role", Operator: metav1.LabelSelectorOpIn, Values: []string{"data", "log"}},
			}}},
			{Name: "other", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			{Name: "all"},
		},
	}}
	spec := groupSpec(drpc, &v1alpha1.DRPolicy{}, v1alpha1.ReplicationStatePrimary, "", "")
	matches := func(i int, l map[string]string) bool {
		sel, err := metav1.LabelSelectorAsSelector(&spec.ConsistencyGroups[i].Selector)
		if err != nil {
			t.Fatalf("group %d's selector: %v", i, err)
		}
		return sel.Matches(labels.Set(l))
	}
	cases := []struct {
		name   string
		group  int
		labels map[string]string
		want   bool
	}{
		{"the data PVC of the application is in group db", 0, map[string]string{"app": "db", "role": "data"}, true},
		{"the log PVC of the application is in group db", 0, map[string]string{"app": "db", "role": "log"}, true},
		{"a data PVC the pvcSelector does not select is not in group db", 0, map[string]string{"app": "web", "role": "data"}, false},
		{"a cache PVC of the application is not in group db", 0, map[string]string{"app": "db", "role": "cache"}, false},
		{"a group asking another app's label selects nothing", 1, map[string]string{"app": "web"}, false},
		{"nor the application's PVCs", 1, map[string]string{"app": "db"}, false},
		{"an empty group selector selects every PVC of the application", 2, map[string]string{"app": "db", "x": "y"}, true},
		{"and no PVC of another application", 2, map[string]string{"app": "web"}, false},
	}
	g := NewWithT(t)
	g.Expect(spec.ConsistencyGroups).To(HaveLen(3))
	g.Expect(spec.ConsistencyGroups[0].Name).To(Equal("db"))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := matches(c.group, c.labels); got != c.want {
				t.Errorf("group %s matches %v: got %t, want %t", spec.ConsistencyGroups[c.group].Name, c.labels, got, c.want)
			}
		})
	}
	g.Expect(groupSpec(&v1alpha1.DRPlacementControl{}, &v1alpha1.DRPolicy{}, v1alpha1.ReplicationStatePrimary, "", "").ConsistencyGroups).
		To(BeNil(), "a DRPlacementControl without groups gives its groups none")
}
