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
		want     []string
	}{
		{"with nothing decided yet it takes the first clusters by name", ptr.To(int32(1)), nil, []string{"east"}},
		{"it keeps a cluster already decided", ptr.To(int32(1)), []string{"west"}, []string{"west"}},
		{"between two clusters decided it keeps the first by name", ptr.To(int32(1)), []string{"west", "east"}, []string{"east"}},
		{"a cluster it does not know is dropped", ptr.To(int32(1)), []string{"north"}, []string{"east"}},
		{"without numberOfClusters it takes every cluster", nil, []string{"west"}, []string{"east", "west"}},
		{"numberOfClusters beyond the clusters takes them all", ptr.To(int32(5)), nil, []string{"east", "west"}},
		{"numberOfClusters zero takes none", ptr.To(int32(0)), []string{"east"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := choose(tc.number, clusters, tc.existing); !slices.Equal(got, tc.want) {
				t.Fatalf("choose(%v, %v, %v) = %v, want %v", tc.number, clusters, tc.existing, got, tc.want)
			}
		})
	}
}
