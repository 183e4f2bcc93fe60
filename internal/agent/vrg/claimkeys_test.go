package vrg

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/objectstore"
)

// fixtureData is where a store's marker names the fixture group's data: what a restore reads.
func fixtureData(g Gomega, store objectstore.Store) string {
	m, err := ReadMarker(context.Background(), store, "app/db/")
	g.Expect(err).NotTo(HaveOccurred())
	return ClaimPrefix("app/db/", m)
}

// dataKeys lists the keys of the fixture group's data in a store that start with rest.
func dataKeys(g Gomega, store objectstore.Store, rest string) []string {
	keys, err := store.List(context.Background(), fixtureData(g, store)+rest)
	g.Expect(err).NotTo(HaveOccurred())
	return keys
}

func TestAMarkerNamesWhereTheGroupsDataIs(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ClaimPrefix("app/db/", nil)).To(Equal("app/db/"), "no marker: the group's prefix")
	g.Expect(ClaimPrefix("app/db/", &PrimaryMarker{Cluster: "east", Epoch: 4})).To(Equal("app/db/"), "data from before keys per claim")
	g.Expect(ClaimPrefix("app/db/", &PrimaryMarker{Cluster: "west", Epoch: 5, Data: "claims/4-east/"})).To(Equal("app/db/claims/4-east/"))
	g.Expect(claimDir(PrimaryMarker{Cluster: "west", Epoch: 5})).To(Equal("claims/5-west/"))
}

func TestOnlyOlderClaimsAndDataFromBeforeKeysPerClaimAreRemoved(t *testing.T) {
	own := PrimaryMarker{Cluster: "west", Epoch: 5}
	for key, older := range map[string]bool{
		"app/db/primary.json":                      false,
		"app/db/claims/5-west/pvs/pv-1.json":       false,
		"app/db/claims/5-east/pvs/pv-1.json":       false, // the same epoch, another cluster: a race's loser or a split brain
		"app/db/claims/6-east/capture.json":        false, // a newer primary writing before it moves the marker
		"app/db/claims/12-east/pvcs/app/data.json": false,
		"app/db/claims/4-east/pvs/pv-1.json":       true,
		"app/db/claims/1-west/capture.json":        true,
		"app/db/pvs/pv-1.json":                     true, // from before keys per claim
		"app/db/capture.json":                      true,
		"app/db-2/pvs/pv-1.json":                   false, // another group
		"app/db/claims/not-a-claim":                false,
		"app/db/claims/x-east/pvcs/app/data.json":  false,
		"app/db/volsync-keys/app/data-db-0.json":   false, // the group's VolSync keys belong to no claim
	} {
		if got := olderData("app/db/", key, own); got != older {
			t.Errorf("olderData(%q) = %v, want %v", key, got, older)
		}
	}
}

func TestAMarkerNoDroverWroteIsRefused(t *testing.T) {
	g := NewWithT(t)
	g.Expect(checkMarker(&PrimaryMarker{Cluster: "east", Epoch: 3})).To(Succeed())
	g.Expect(checkMarker(&PrimaryMarker{Cluster: "east", Epoch: 3, Data: "claims/3-east/"})).To(Succeed())
	g.Expect(checkMarker(&PrimaryMarker{Cluster: "east", Epoch: 3, Data: "claims/2-west/"})).To(Succeed())
	g.Expect(checkMarker(&PrimaryMarker{Cluster: "east", Epoch: MaxEpoch})).To(MatchError(ContainSubstring("outside")))
	g.Expect(checkMarker(&PrimaryMarker{Cluster: "../../kube-system", Epoch: 3})).To(MatchError(ContainSubstring("not a cluster's name")))
	for _, data := range []string{"claims/4-east/", "../other/", "claims/3-east/../../x/", "claims/3-East/", "claims/03-east/", "pvs/"} {
		g.Expect(checkMarker(&PrimaryMarker{Cluster: "east", Epoch: 3, Data: data})).To(MatchError(ContainSubstring("not the directory of a claim")), data)
	}
}
