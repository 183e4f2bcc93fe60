package hub_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/drover-io/drover/api/v1alpha1"
)

// fakeDrillAgent plays the agent's side of a drill on both managed clusters, for the hub's tests
// only: it holds each DrillSandbox of the application's namespace with a finalizer, reports it
// Ready and Passed, and lets it go when the hub deletes it. It builds nothing: the real agent's
// reconciler (internal/agent/drill) makes the sandbox namespaces and copies, and replaces this
// once the suite's agents run it.
type fakeDrillAgent struct {
	a *app
}

// fakeDrillAgentFinalizer stands for the agent's finalizer.
const fakeDrillAgentFinalizer = "drover.io/test-fake-drill-agent"

// startFakeDrillAgent plays the agents until the test ends.
func startFakeDrillAgent(t *testing.T, a *app) *fakeDrillAgent {
	f := &fakeDrillAgent{a: a}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for _, cl := range a.clusters {
				f.pass(ctx, cl)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return f
}

// pass serves every sandbox of a cluster once; a failed write is retried at the next pass.
func (f *fakeDrillAgent) pass(ctx context.Context, cl client.Client) {
	list := &v1alpha1.DrillSandboxList{}
	if err := cl.List(ctx, list, client.InNamespace(f.a.ns)); err != nil {
		return
	}
	for i := range list.Items {
		box := &list.Items[i]
		switch {
		case !box.DeletionTimestamp.IsZero():
			if controllerutil.RemoveFinalizer(box, fakeDrillAgentFinalizer) {
				_ = cl.Update(ctx, box)
			}
		case controllerutil.AddFinalizer(box, fakeDrillAgentFinalizer):
			_ = cl.Update(ctx, box)
		case box.Status.Result == "":
			f.report(ctx, cl, box)
		}
	}
}

// report writes the sandbox's status, Ready and Passed, with one volume whose point is the
// application's last group sync as the hub saw it.
func (f *fakeDrillAgent) report(ctx context.Context, cl client.Client, box *v1alpha1.DrillSandbox) {
	now := metav1.Now()
	st := &box.Status
	st.Mode = v1alpha1.DrillModeFull
	st.Namespaces = []v1alpha1.DrillSandboxNamespace{{Source: f.a.ns, Sandbox: f.a.ns + "-drill-" + box.Spec.DrillID}}
	drpc := &v1alpha1.DRPlacementControl{}
	if err := f.a.hub.Get(ctx, f.a.key, drpc); err != nil || drpc.Status.LastGroupSyncTime == nil {
		return
	}
	st.Steps = []v1alpha1.DrillStep{{Name: "RestoringObjects", Started: &box.CreationTimestamp, Finished: &now, Result: v1alpha1.DrillResultPassed}}
	st.Volumes = []v1alpha1.DrillVolume{{PVCNamespace: f.a.ns, PVCName: "data-db-0", PointTime: drpc.Status.LastGroupSyncTime}}
	st.Check = &v1alpha1.DrillCheckJob{Result: v1alpha1.DrillResultSkipped, Message: "no check asked for"}
	st.Result, st.ReadyTime = v1alpha1.DrillResultPassed, &now
	_ = cl.Status().Update(ctx, box)
}
