package vrg_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// Before 2596a40 (2026-12-01) the marker's check and write were two steps, so two primaries
// that read the same marker could both write theirs. Here, on each lab store, two primaries read
// the marker of epoch 1 and claim epoch 2 at the same moment, round after round: exactly one
// claim lands, the other fails as a lost race, and the store holds the winner's marker.
func TestTwoConcurrentClaimsOfAStoreCannotBothWin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, stores := vrglab.S3Profiles(g)
	const rounds = 20
	for _, store := range stores {
		wins := map[string]int{}
		for round := range rounds {
			prefix := fmt.Sprintf("claim-race/%d/%s/", time.Now().UnixNano(), store.Name())
			g.Expect(vrg.PutMarker(ctx, store, prefix, vrg.PrimaryMarker{Cluster: lab.East, Epoch: 1}, "")).To(Succeed())
			_, version, err := vrg.ReadMarkerVersion(ctx, store, prefix)
			g.Expect(err).NotTo(HaveOccurred())
			var wg sync.WaitGroup
			start := make(chan struct{})
			results := map[string]error{}
			var mu sync.Mutex
			for _, cluster := range []string{lab.East, lab.West} {
				wg.Go(func() {
					<-start
					err := vrg.PutMarker(ctx, store, prefix, vrg.PrimaryMarker{Cluster: cluster, Epoch: 2}, version)
					mu.Lock()
					results[cluster] = err
					mu.Unlock()
				})
			}
			close(start)
			wg.Wait()
			var winners []string
			for cluster, err := range results {
				if err == nil {
					winners = append(winners, cluster)
					continue
				}
				g.Expect(errors.Is(err, objectstore.ErrPreconditionFailed)).To(BeTrue(), "round %d: the loser's claim fails as a lost race: %v", round, err)
			}
			g.Expect(winners).To(HaveLen(1), "round %d on %s: exactly one of two concurrent claims of epoch 2 wins", round, store.Name())
			m, err := vrg.ReadMarker(ctx, store, prefix)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(*m).To(Equal(vrg.PrimaryMarker{Cluster: winners[0], Epoch: 2}), "the store holds the winner's claim")
			wins[winners[0]]++
			g.Expect(store.DeletePrefix(ctx, prefix)).To(Succeed())
		}
		t.Logf("%s: %d rounds of two concurrent claims, one winner each (east %d, west %d)", store.Name(), rounds, wins[lab.East], wins[lab.West])
	}
}
