package objectstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// conditionalRace fires writers PutIf calls with the same expected version at one key, all
// released at once, and returns the index of every writer that succeeded and the errors of
// the others.
func conditionalRace(ctx context.Context, s objectstore.Store, key, version string, writers int) (won []int, lost []error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = make(chan struct{})
	)
	for w := range writers {
		wg.Go(func() {
			<-start
			err := s.PutIf(ctx, key, raceBody(w, version), version)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won = append(won, w)
			} else {
				lost = append(lost, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return won, lost
}

// raceBody is what writer w writes over version: distinct per round, since an object rewritten
// with the same bytes keeps its ETag.
func raceBody(w int, version string) []byte {
	return fmt.Appendf(nil, "writer %02d over %s", w, version)
}

// TestS3StoreConditionalPutLetsExactlyOneConcurrentWriterWin measures whether the lab's S3 server
// (versitygw) checks a conditional write's precondition and writes as one step: many writers
// race with the same expectation, both kinds (If-None-Match: * on an absent key, If-Match on
// the ETag read before), round after round. Exactly one may win each round, the others must
// fail with ErrPreconditionFailed, and the key must hold the winner's body. The store marker's
// claim (internal/agent/vrg, epoch.go) relies on this.
func TestS3StoreConditionalPutLetsExactlyOneConcurrentWriterWin(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newStore(g, labProfile(g, lab.East))
	prefix := "conditional-" + strings.ToLower(rand.Text()[:8]) + "/"
	defer func() { g.Expect(s.DeletePrefix(ctx, prefix)).To(Succeed()) }()
	const rounds, writers = 40, 16
	start := time.Now()
	for round := range rounds {
		key := fmt.Sprintf("%s%02d", prefix, round)
		version, kind := "", "If-None-Match: *"
		if round%2 == 1 {
			g.Expect(s.Put(ctx, key, []byte("before the race"))).To(Succeed())
			var err error
			_, version, err = s.GetVersion(ctx, key)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(version).NotTo(BeEmpty(), "the store gives an ETag")
			kind = "If-Match: " + version
		}
		won, lost := conditionalRace(ctx, s, key, version, writers)
		g.Expect(won).To(HaveLen(1), "round %d (%s): exactly one of %d concurrent conditional writers wins", round, kind, writers)
		for _, err := range lost {
			g.Expect(errors.Is(err, objectstore.ErrPreconditionFailed)).To(BeTrue(), "round %d (%s): a loser fails with a lost precondition: %v", round, kind, err)
			g.Expect(objectstore.ReasonOf(err)).To(Equal(objectstore.ReasonStoreConflict))
		}
		body, err := s.Get(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(body).To(Equal(raceBody(won[0], version)), "round %d: the key holds the winner's body", round)
	}
	t.Logf("%d rounds of %d concurrent conditional writers: exactly one winner each round (%s)", rounds, writers, time.Since(start).Round(time.Millisecond))

	// A version that is not the object's current one loses, and so does If-None-Match on a
	// present object; both leave the object as it was.
	key := prefix + "stale"
	g.Expect(s.PutIf(ctx, key, []byte("first"), "")).To(Succeed())
	_, v1, err := s.GetVersion(ctx, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.PutIf(ctx, key, []byte("second"), v1)).To(Succeed())
	err = s.PutIf(ctx, key, []byte("third, from a stale read"), v1)
	g.Expect(errors.Is(err, objectstore.ErrPreconditionFailed)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("changed while it was being written (another writer won): read it again")))
	g.Expect(errors.Is(s.PutIf(ctx, key, []byte("fourth"), ""), objectstore.ErrPreconditionFailed)).To(BeTrue())
	g.Expect(s.Get(ctx, key)).To(Equal([]byte("second")))
	err = s.PutIf(ctx, prefix+"absent", []byte("x"), v1)
	g.Expect(errors.Is(err, objectstore.ErrPreconditionFailed)).To(BeTrue(), "If-Match on an absent object fails: %v", err)
}

// The fake store keeps the same contract, for the reconcilers' unit tests.
func TestFakeStoreConditionalPut(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := objectstore.NewFake("s3-fake")
	won, lost := conditionalRace(ctx, f, "k", "", 16)
	g.Expect(won).To(HaveLen(1))
	g.Expect(lost).To(HaveLen(15))
	body, version, err := f.GetVersion(ctx, "k")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(Equal(raceBody(won[0], "")))
	won, _ = conditionalRace(ctx, f, "k", version, 16)
	g.Expect(won).To(HaveLen(1))
	g.Expect(errors.Is(f.PutIf(ctx, "k", []byte("x"), version), objectstore.ErrPreconditionFailed)).To(BeTrue())
	g.Expect(errors.Is(f.PutIf(ctx, "absent", []byte("x"), version), objectstore.ErrPreconditionFailed)).To(BeTrue())
}
