package crash

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drover-io/drover/internal/objectstore"
)

// server counts the requests that reached it.
func server(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func do(t *testing.T, c *http.Client, method, url string) error {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	return err
}

func TestAnInstanceDiesAtItsPointAndDoesNothingMore(t *testing.T) {
	for _, when := range []When{Before, After} {
		t.Run(string(when), func(t *testing.T) {
			s, reached := server(t)
			i := New("hub")
			c := &http.Client{Transport: i.Wrap(http.DefaultTransport)}
			pods := s.URL + "/api/v1/namespaces/app/pods"
			for _, m := range []string{http.MethodPost, http.MethodGet} {
				if err := do(t, c, m, pods); err != nil {
					t.Fatal(err)
				}
			}
			i.Arm(Point{Write: 2, When: when})
			if err := do(t, c, http.MethodPatch, pods+"/db-0"); err != nil {
				t.Fatalf("the first write after arming: %v", err)
			}
			err := do(t, c, http.MethodDelete, pods+"/db-0")
			if !errors.Is(err, ErrCrashed) {
				t.Fatalf("the second write after arming: %v, want ErrCrashed", err)
			}
			want := int32(3) // POST, GET, PATCH
			if when == After {
				want = 4 // and the DELETE, applied
			}
			if got := reached.Load(); got != want {
				t.Fatalf("%d requests reached the server, want %d", got, want)
			}
			select {
			case <-i.Crashed():
			default:
				t.Fatal("Crashed is not closed")
			}
			if err := do(t, c, http.MethodGet, pods); !errors.Is(err, ErrCrashed) {
				t.Fatalf("a read of the killed instance: %v, want ErrCrashed", err)
			}
			if got := reached.Load(); got != want {
				t.Fatal("a killed instance reached the server")
			}
			if !strings.Contains(i.Killed(), "DELETE /api/v1/namespaces/app/pods/db-0") || i.Writes() != 3 || !i.Disarm() {
				t.Fatalf("killed %q after %d writes", i.Killed(), i.Writes())
			}
		})
	}
}

func TestOnlyRequestsThatChangeStateAreWrites(t *testing.T) {
	s, _ := server(t)
	i := New("agent")
	c := &http.Client{Transport: i.Wrap(http.DefaultTransport)}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/apis/drover.io/v1alpha1/namespaces/app/volumereplicationgroups"},
		{http.MethodPost, "/api/v1/namespaces/app/pods?dryRun=All"},
		{http.MethodPost, "/apis/events.k8s.io/v1/namespaces/app/events"},
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/drover-system/leases/drover-agent"},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews"},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/namespaces/app/localsubjectaccessreviews"},
	} {
		if err := do(t, c, r.method, s.URL+r.path); err != nil {
			t.Fatal(err)
		}
	}
	if n := i.Writes(); n != 0 {
		t.Fatalf("%d writes counted: %v", n, i.Since(0))
	}
	for _, path := range []string{"/api/v1/namespaces", "/api/v1/namespaces/events", "/apis/drover.io/v1alpha1/namespaces/events/volumereplicationgroups/db/status"} {
		if err := do(t, c, http.MethodPatch, s.URL+path); err != nil {
			t.Fatal(err)
		}
	}
	if n := i.Writes(); n != 3 {
		t.Fatalf("%d writes counted, want 3 (a namespace named events is not an event): %v", n, i.Since(0))
	}
}

func TestAKilledInstancesStoreWritesAndReadsNothing(t *testing.T) {
	ctx := context.Background()
	fake := objectstore.NewFake("s3-east")
	i := New("east")
	s := i.Store(fake)
	i.Arm(Point{Write: 2, When: After})
	if err := s.Put(ctx, "app/db/a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "app/db/a"); !errors.Is(err, ErrCrashed) {
		t.Fatalf("the crash point: %v", err)
	}
	if _, err := fake.Get(ctx, "app/db/a"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("the delete was applied before the crash: %v", err)
	}
	if _, err := s.List(ctx, "app/"); !errors.Is(err, ErrCrashed) {
		t.Fatalf("a read of the killed instance: %v", err)
	}
}
