package ocm

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"
)

func TestChoose(t *testing.T) {
	clusters := []string{"west", "east"}
	for _, tc := range []struct {
		name     string
		number   *int32
		existing []string
		load     map[string]int
		want     []string
	}{
		{"with nothing decided yet it takes the first clusters by name", ptr.To(int32(1)), nil, nil, []string{"east"}},
		{"it keeps a cluster already decided", ptr.To(int32(1)), []string{"west"}, nil, []string{"west"}},
		{"between two clusters decided it keeps the first by name", ptr.To(int32(1)), []string{"west", "east"}, nil, []string{"east"}},
		{"a cluster it does not know is dropped", ptr.To(int32(1)), []string{"north"}, nil, []string{"east"}},
		{"without numberOfClusters it takes every cluster", nil, []string{"west"}, nil, []string{"east", "west"}},
		{"numberOfClusters beyond the clusters takes them all", ptr.To(int32(5)), nil, nil, []string{"east", "west"}},
		{"numberOfClusters zero takes none", ptr.To(int32(0)), []string{"east"}, nil, []string{}},
		// Balance: the busiest cluster scores -100, a cluster no other placement uses 100.
		{"a new placement goes to the cluster other placements use least", ptr.To(int32(1)), nil, map[string]int{"east": 1}, []string{"west"}},
		{"a placement on the busiest cluster moves to an unused one: Balance cancels Steady", ptr.To(int32(1)), []string{"east"}, map[string]int{"east": 3}, []string{"west"}},
		{"it stays when the other cluster is as busy", ptr.To(int32(1)), []string{"west"}, map[string]int{"east": 2, "west": 2}, []string{"west"}},
		{"it stays when the other cluster is used half as much (a tie, by name)", ptr.To(int32(1)), []string{"east"}, map[string]int{"east": 4, "west": 2}, []string{"east"}},
		{"it moves when the other cluster is used less than half as much", ptr.To(int32(1)), []string{"east"}, map[string]int{"east": 4, "west": 1}, []string{"west"}},
		{"a tie by name can move it too", ptr.To(int32(1)), []string{"west"}, map[string]int{"west": 4, "east": 2}, []string{"east"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := choose(tc.number, clusters, tc.existing, tc.load); !slices.Equal(got, tc.want) {
				t.Fatalf("choose(%v, %v, %v, %v) = %v, want %v", tc.number, clusters, tc.existing, tc.load, got, tc.want)
			}
		})
	}
}
