package objectstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/objectstore"
)

func TestFakeStoreSemantics(t *testing.T) {
	ctx := context.Background()
	seed := map[string]string{"vrg-a/pv/1": "one", "vrg-a/pv/2": "two", "vrg-a/pvc/1": "claim", "vrg-ab/pv/1": "other vrg"}
	tests := []struct {
		name string
		run  func(g Gomega, s *objectstore.Fake)
	}{
		{"Get returns what Put stored", func(g Gomega, s *objectstore.Fake) {
			g.Expect(s.Get(ctx, "vrg-a/pv/1")).To(Equal([]byte("one")))
		}},
		{"Put replaces", func(g Gomega, s *objectstore.Fake) {
			g.Expect(s.Put(ctx, "vrg-a/pv/1", []byte("uno"))).To(Succeed())
			g.Expect(s.Get(ctx, "vrg-a/pv/1")).To(Equal([]byte("uno")))
		}},
		{"an empty body round-trips as empty", func(g Gomega, s *objectstore.Fake) {
			g.Expect(s.Put(ctx, "empty", nil)).To(Succeed())
			g.Expect(s.Get(ctx, "empty")).To(BeEmpty())
			g.Expect(s.List(ctx, "empty")).To(Equal([]string{"empty"}))
		}},
		{"stored bodies are copies", func(g Gomega, s *objectstore.Fake) {
			body := []byte("abc")
			g.Expect(s.Put(ctx, "k", body)).To(Succeed())
			body[0] = 'X'
			got, err := s.Get(ctx, "k")
			g.Expect(err).NotTo(HaveOccurred())
			got[1] = 'Y'
			g.Expect(s.Get(ctx, "k")).To(Equal([]byte("abc")))
		}},
		{"Get of a missing key is ErrNotFound", func(g Gomega, s *objectstore.Fake) {
			_, err := s.Get(ctx, "vrg-a/pv/9")
			g.Expect(errors.Is(err, objectstore.ErrNotFound)).To(BeTrue())
			g.Expect(objectstore.ReasonOf(err)).To(Equal("StoreObjectNotFound"))
			g.Expect(err).To(MatchError(ContainSubstring(`S3 profile s3-fake has no object "vrg-a/pv/9"`)))
		}},
		{"List is by prefix, sorted", func(g Gomega, s *objectstore.Fake) {
			g.Expect(s.List(ctx, "vrg-a/")).To(Equal([]string{"vrg-a/pv/1", "vrg-a/pv/2", "vrg-a/pvc/1"}))
			g.Expect(s.List(ctx, "vrg-a/pv/")).To(Equal([]string{"vrg-a/pv/1", "vrg-a/pv/2"}))
			g.Expect(s.List(ctx, "")).To(HaveLen(4))
			g.Expect(s.List(ctx, "nothing/")).To(BeEmpty())
		}},
		{"Delete removes, and deleting again is no error", func(g Gomega, s *objectstore.Fake) {
			g.Expect(s.Delete(ctx, "vrg-a/pv/1")).To(Succeed())
			g.Expect(s.Delete(ctx, "vrg-a/pv/1")).To(Succeed())
			_, err := s.Get(ctx, "vrg-a/pv/1")
			g.Expect(err).To(MatchError(objectstore.ErrNotFound))
		}},
		{"DeletePrefix removes only the prefix, idempotently", func(g Gomega, s *objectstore.Fake) {
			g.Expect(s.DeletePrefix(ctx, "vrg-a/")).To(Succeed())
			g.Expect(s.DeletePrefix(ctx, "vrg-a/")).To(Succeed())
			g.Expect(s.List(ctx, "")).To(Equal([]string{"vrg-ab/pv/1"}))
		}},
		{"empty keys and an empty DeletePrefix are refused", func(g Gomega, s *objectstore.Fake) {
			g.Expect(s.Put(ctx, "", []byte("x"))).To(MatchError(ContainSubstring("the key is empty")))
			_, err := s.Get(ctx, "")
			g.Expect(err).To(HaveOccurred())
			g.Expect(s.Delete(ctx, "")).NotTo(Succeed())
			g.Expect(s.DeletePrefix(ctx, "")).To(MatchError(ContainSubstring("refusing to delete every object")))
			g.Expect(s.List(ctx, "")).To(HaveLen(4))
		}},
		{"a done context fails the call", func(g Gomega, s *objectstore.Fake) {
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			g.Expect(s.Put(cancelled, "k", nil)).To(MatchError(context.Canceled))
			_, err := s.List(cancelled, "")
			g.Expect(err).To(MatchError(context.Canceled))
		}},
		{"an injected unreachable store fails every call and keeps its objects", func(g Gomega, s *objectstore.Fake) {
			s.SetError(objectstore.ErrUnreachable)
			calls := map[string]error{
				"put":           s.Put(ctx, "k", nil),
				"delete":        s.Delete(ctx, "vrg-a/pv/1"),
				"delete-prefix": s.DeletePrefix(ctx, "vrg-a/"),
			}
			_, calls["get"] = s.Get(ctx, "vrg-a/pv/1")
			_, calls["list"] = s.List(ctx, "")
			for op, err := range calls {
				g.Expect(errors.Is(err, objectstore.ErrUnreachable)).To(BeTrue(), op)
				g.Expect(objectstore.ReasonOf(err)).To(Equal("StoreUnreachable"), op)
				g.Expect(err).To(MatchError(ContainSubstring("S3 profile s3-fake is unreachable")), op)
			}
			s.SetError(nil)
			g.Expect(s.List(ctx, "")).To(HaveLen(4))
		}},
		{"an injected *Error is returned as it is", func(g Gomega, s *objectstore.Fake) {
			injected := &objectstore.Error{Kind: objectstore.KindUnauthorized, Profile: "s3-fake", Secret: "ns/creds"}
			s.SetError(injected)
			g.Expect(s.Put(ctx, "k", nil)).To(BeIdenticalTo(injected))
		}},
		{"an injected plain error is a StoreError", func(g Gomega, s *objectstore.Fake) {
			boom := errors.New("boom")
			s.SetError(boom)
			err := s.Put(ctx, "k", nil)
			g.Expect(err).To(MatchError(boom))
			g.Expect(objectstore.KindOf(err)).To(Equal(objectstore.KindOther))
			g.Expect(err).To(MatchError(`S3 profile s3-fake: put "k" failed: boom`))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := objectstore.NewFake("s3-fake")
			g.Expect(s.Name()).To(Equal("s3-fake"))
			for k, v := range seed {
				g.Expect(s.Put(ctx, k, []byte(v))).To(Succeed())
			}
			tt.run(g, s)
		})
	}
}

func TestFakeStoreIsSafeForConcurrentUse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := objectstore.NewFake("s3-fake")
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("w%02d/%03d", w, i)
				if err := s.Put(ctx, key, []byte(key)); err != nil {
					t.Error(err)
				}
				if got, err := s.Get(ctx, key); err != nil || string(got) != key {
					t.Errorf("Get(%s) = %q, %v", key, got, err)
				}
				if _, err := s.List(ctx, fmt.Sprintf("w%02d/", w)); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					if err := s.Delete(ctx, key); err != nil {
						t.Error(err)
					}
				}
			}
			if w%4 == 0 {
				s.SetError(nil)
			}
		})
	}
	wg.Wait()
	g.Expect(s.List(ctx, "")).To(HaveLen(16 * 25))
	g.Expect(s.DeletePrefix(ctx, "w0")).To(Succeed())
	g.Expect(s.List(ctx, "")).To(HaveLen(6 * 25))
}
