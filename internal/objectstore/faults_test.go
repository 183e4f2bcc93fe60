package objectstore_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/s3fault"
	"github.com/drover-io/drover/internal/objectstore"
)

// The faults of a real object store, injected by the lab's proxy in front of east's S3 server:
// each failure is classified with a message naming the profile, nothing half-done reads as
// success, and the store works again the moment the fault heals.
func TestS3StoreThroughInjectedFaults(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	direct := labProfile(g, lab.East)
	proxy, err := s3fault.Start(direct.Endpoint)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = proxy.Close() }()
	viaProxy := direct
	viaProxy.Endpoint = proxy.URL()
	s, truth := newStore(g, viaProxy), newStore(g, direct)
	prefix := "faults-" + strings.ToLower(rand.Text()[:8]) + "/"
	defer func() { g.Expect(truth.DeletePrefix(ctx, prefix)).To(Succeed()) }()
	g.Expect(s.Put(ctx, prefix+"a", []byte("healthy"))).To(Succeed(), "the proxy forwards")

	t.Run("refused connections", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(proxy.Set(s3fault.Refuse, 0)).To(Succeed())
		start := time.Now()
		err := s.Put(ctx, prefix+"a", []byte("refused"))
		g.Expect(time.Since(start)).To(BeNumerically("<", deadStoreBudget))
		g.Expect(errors.Is(err, objectstore.ErrUnreachable)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("S3 profile s3-east at " + proxy.URL() + " is unreachable")))
		g.Expect(err).To(MatchError(ContainSubstring("check that the store is running")))
	})
	t.Run("503 SlowDown", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(proxy.Set(s3fault.SlowDown, 0)).To(Succeed())
		_, err := s.Get(ctx, prefix+"a")
		g.Expect(objectstore.ReasonOf(err)).To(Equal(objectstore.ReasonStoreError), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("S3 profile s3-east at " + proxy.URL())))
		g.Expect(err).To(MatchError(ContainSubstring("SlowDown: Please reduce your request rate")))
	})
	t.Run("latency within the request timeout", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(proxy.Set(s3fault.Latency, 2*time.Second)).To(Succeed())
		start := time.Now()
		g.Expect(s.Put(ctx, prefix+"a", []byte("slow"))).To(Succeed())
		g.Expect(time.Since(start)).To(BeNumerically(">=", 2*time.Second))
	})
	t.Run("a PUT applied whose response is lost", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(proxy.Set(s3fault.None, 0)).To(Succeed())
		_, version, err := s.GetVersion(ctx, prefix+"a")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(proxy.Set(s3fault.LoseResponse, 0)).To(Succeed())
		err = s.PutIf(ctx, prefix+"a", []byte("applied, answer lost"), version)
		g.Expect(proxy.LostResponses()).To(BeNumerically(">=", 1))
		// The SDK retries the lost answer; the retry finds the write done and the version
		// changed: a conditional write reports a lost race, which its caller resolves by
		// reading again (the store marker's claim does), or the store as unreachable.
		g.Expect(errors.Is(err, objectstore.ErrPreconditionFailed) || errors.Is(err, objectstore.ErrUnreachable)).To(BeTrue(), "%v", err)
		g.Expect(truth.Get(ctx, prefix+"a")).To(Equal([]byte("applied, answer lost")), "the store applied the write")
		t.Logf("a conditional PUT whose answer was lost: %v", err)
	})
	t.Run("a truncated body", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(truth.Put(ctx, prefix+"big", randomBytes(64<<10))).To(Succeed())
		g.Expect(proxy.Set(s3fault.TruncateBody, 0)).To(Succeed())
		body, err := s.Get(ctx, prefix+"big")
		g.Expect(body).To(BeNil(), "half an object never reads as the object")
		g.Expect(errors.Is(err, objectstore.ErrUnreachable)).To(BeTrue(), "%v", err)
		g.Expect(err).To(MatchError(ContainSubstring("S3 profile s3-east at " + proxy.URL() + " is unreachable")))
	})
	t.Run("writes acknowledged at once and applied late", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(proxy.Set(s3fault.DelayWrites, 0)).To(Succeed())
		g.Expect(s.Put(ctx, prefix+"late", []byte("written late"))).To(Succeed(), "the writer is told it is done")
		g.Expect(s.Delete(ctx, prefix+"big")).To(Succeed())
		g.Expect(proxy.Delayed()).To(Equal(2))
		_, err := truth.Get(ctx, prefix+"late")
		g.Expect(errors.Is(err, objectstore.ErrNotFound)).To(BeTrue(), "not applied yet: %v", err)
		g.Expect(s.Get(ctx, prefix+"big")).NotTo(BeEmpty(), "reads are forwarded, and the delete is not applied yet")
		g.Expect(proxy.Set(s3fault.None, 0)).To(Succeed())
		g.Expect(proxy.Delayed()).To(BeZero())
		g.Expect(truth.Get(ctx, prefix+"late")).To(Equal([]byte("written late")), "applied when the fault is switched off")
		_, err = truth.Get(ctx, prefix+"big")
		g.Expect(errors.Is(err, objectstore.ErrNotFound)).To(BeTrue(), "the delete applied after the put: %v", err)
		g.Expect(truth.Put(ctx, prefix+"big", randomBytes(64<<10))).To(Succeed())
	})
	t.Run("healed", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(proxy.Set(s3fault.None, 0)).To(Succeed())
		want, err := truth.Get(ctx, prefix+"big")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.Get(ctx, prefix+"big")).To(Equal(want))
		g.Expect(s.Put(ctx, prefix+"a", []byte("healed"))).To(Succeed())
	})
}
