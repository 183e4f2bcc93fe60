package status

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli/clitest"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// expiringWatches reads through the test's API server; its first watch ends at once with 410
// Gone, as the API server ends one whose resource version etcd compacted away, and its later
// watches deliver nothing until their context ends.
type expiringWatches struct {
	client.Client
	mu      sync.Mutex
	watches int
	expired chan struct{}
}

func (e *expiringWatches) Watch(ctx context.Context, _ client.ObjectList, _ ...client.ListOption) (watch.Interface, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.watches++
	w := watch.NewFake()
	go func() { <-ctx.Done(); w.Stop() }() // as a real watch ends with its context
	if e.watches == 1 {
		go func() {
			<-e.expired
			w.Error(&apierrors.NewResourceExpired("too old resource version").ErrStatus)
		}()
	}
	return w, nil
}

var _ client.WithWatch = &expiringWatches{}

// TestStatusWatchListsAgainWhenItsWatchExpires expects status -w whose watch the API server
// ends with 410 Gone to list again, print the application that changed while it was not
// watched, and go on watching instead of exiting.
func TestStatusWatchListsAgainWhenItsWatchExpires(t *testing.T) {
	e := clitest.NewEnv(t, "watch-expiry")
	db := e.NewApp(t, "db")
	clitest.SetStatus(t, db, e.Deployed(e.East, e.West))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c := &expiringWatches{Client: clitest.Hub, expired: make(chan struct{})}
	out := &labtest.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, c, out, Options{Namespace: e.NS, Now: clitest.ClockAt}) }()
	clitest.WaitFor(t, "the first table", func() bool { return strings.Contains(out.String(), "Completed") })

	clitest.UpdateStatus(t, client.ObjectKeyFromObject(db), db, func() { db.Status.Progression = "ChangedUnwatched" })
	close(c.expired)
	clitest.WaitFor(t, "the row of the change made while the watch had expired", func() bool {
		return regexp.MustCompile(`(?m)^db +Deployed .*ChangedUnwatched`).MatchString(out.String())
	})
	clitest.WaitFor(t, "a new watch", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.watches >= 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("status -w ended with %v, want nil once interrupted:\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), "\ndb "); n != 2 {
		t.Errorf("status -w printed %d rows of db, want 2 (the table's, then the change once):\n%s", n, out.String())
	}
}
