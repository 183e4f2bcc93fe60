package drill

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
)

// errKilled is the hub killed at a write: the write is not made and the reconcile ends there.
var errKilled = errors.New("the hub was killed at this write")

// crash counts the reconciler's writes (to the hub and the clusters) and kills the hub at the
// n-th: that write and every later one of the same reconcile fail, as nothing is written by a
// killed process; the next reconcile is the hub started again.
type crash struct {
	n, writes int
	dead      bool
}

// crashAt wraps the reconciler's clients in a crash at the n-th write (0: never).
func (w *world) crashAt(n int) *crash {
	cr := &crash{n: n}
	fail := func() error {
		if cr.dead {
			return errKilled
		}
		cr.writes++
		if cr.writes == cr.n {
			cr.dead = true
			return errKilled
		}
		return nil
	}
	funcs := interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}
	wrap := func(c client.Client) client.Client { return interceptor.NewClient(c.(client.WithWatch), funcs) }
	clusters := map[string]client.Client{}
	for name, c := range w.clusters {
		clusters[name] = wrap(c)
	}
	w.r = &Reconciler{Client: wrap(w.hub), Gateway: gateway.NewFake(clusters), Now: w.r.Now}
	return cr
}

// drive reconciles the drill and plays west's agent, a second a pass, until the drill is final
// and let go, or 60 passes; it returns the writes the crash counted.
func (w *world) drive(key client.ObjectKey, cr *crash) int {
	w.t.Helper()
	ctx := context.Background()
	for range 60 {
		_, _ = w.r.Reconcile(ctx, reconcileRequest(key))
		cr.dead = false
		d := w.drill(key)
		if final(d.Status.Phase) && !controllerutil.ContainsFinalizer(d, Finalizer) {
			return cr.writes
		}
		if box := w.sandbox(key); box != nil {
			switch {
			case !box.DeletionTimestamp.IsZero():
				w.agentRemoves(key)
			case box.Status.Result == "":
				w.agentReports(key, w.passedStatus(d.Status.StartTime.Time, time.Second))
			}
		}
		w.tick(time.Second)
	}
	w.t.Fatalf("drill %s did not end: %+v", key.Name, w.drill(key).Status)
	return 0
}

// A hub killed at any one of its writes during a drill, and started again, ends the drill as
// one never killed: Passed, torn down, one sandbox asked for, recorded once.
func TestAHubKilledAtAnyWriteOfADrillEndsItTheSame(t *testing.T) {
	clean := newWorld(t)
	key := clean.create("d", nil)
	total := clean.drive(key, clean.crashAt(0))
	t.Logf("a drill without a crash makes %d writes", total)
	NewWithT(t).Expect(total).To(BeNumerically(">=", 6))
	for n := 1; n <= total; n++ {
		w := newWorld(t)
		key := w.create("d", nil)
		w.drive(key, w.crashAt(n))
		d := w.drill(key)
		w.g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillPassed), "killed at write %d", n)
		w.g.Expect(d.Status.RTOSeconds).NotTo(BeNil(), "killed at write %d", n)
		w.g.Expect(d.Status.Teardown).NotTo(BeNil(), "killed at write %d", n)
		w.g.Expect(stepNames(d)).To(Equal([]string{stepAccepted, "CopyingVolumes", "StartingWorkloads", stepTearingDown}), "killed at write %d", n)
		w.g.Expect(w.sandbox(key)).To(BeNil(), "killed at write %d: no sandbox left", n)
	}
}

func reconcileRequest(key client.ObjectKey) ctrl.Request { return ctrl.Request{NamespacedName: key} }
