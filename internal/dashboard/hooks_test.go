package dashboard

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A relocation whose source ran a CHECKPOINT before its final sync, continued past a failed
// drain of its clients, and failed to stop the database: the page shows each run judged, the
// failed one's output and exit code, and how to retry or continue it.
func TestAnApplicationsPageShowsEachHookRunWithItsOutputAndWhatToDoAboutAFailure(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "hooked", Name: "pg"}
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := createProtected(ctx, key, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	d := drpc(t, key.Namespace, key.Name)
	d.Spec.RecipeRef = &v1alpha1.RecipeReference{Name: "postgres"}
	if err := k8sClient.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	d = drpc(t, key.Namespace, key.Name)
	began := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	run := func(name string, point v1alpha1.HookPoint, result v1alpha1.HookResult, took time.Duration) v1alpha1.HookRun {
		return v1alpha1.HookRun{Name: name, Point: point, Cluster: "east", Attempt: 1, Result: result, StartTime: &began,
			Duration: &metav1.Duration{Duration: took}}
	}
	stop := run("stop-db", v1alpha1.HookBeforeStop, v1alpha1.HookFailed, 2*time.Second)
	stop.Attempt, stop.ExitCode = 2, ptr.To[int32](1)
	stop.Output = "pg_ctl: could not send stop signal (PID: 42): Operation not permitted\n"
	stop.Message = "pg_ctl stop -m fast -W exited with code 1 in pod hooked/db-0, container postgres"
	drain := run("drain-clients", v1alpha1.HookBeforeStop, v1alpha1.HookContinued, 30*time.Second)
	drain.Message = "Deployment hooked/pgbench has 1 of 0 replicas after 30s"
	d.Status.Phase = v1alpha1.PhaseRelocating
	d.Status.Hooks = []v1alpha1.HookRun{run("checkpoint", v1alpha1.HookBeforeSync, v1alpha1.HookSucceeded, 300*time.Millisecond), drain, stop}
	if err := k8sClient.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}

	b := open(t, Options{Namespace: key.Namespace})
	code, page := b.get("/apps/hooked/pg")
	if code != http.StatusOK {
		t.Fatalf("the application's page answered %d:\n%s", code, page)
	}
	contains(t, page, "the application's page", "Hooks of the recipe postgres",
		"pg_ctl: could not send stop signal (PID: 42): Operation not permitted",
		"stop-db failed on east at attempt 2: fix the cause, then drover relocate pg -n hooked --retry, or --continue to go on past it")
	contains(t, rowOf(t, page, "checkpoint"), "the checkpoint's row", "<td>BeforeSync</td>", `class="state s-ok"`, "<td>300ms</td>")
	contains(t, rowOf(t, page, "drain-clients"), "the drain's row", `class="state s-warn"`, "Continued", "has 1 of 0 replicas")
	contains(t, rowOf(t, page, "stop-db"), "the stop's row", `class="state s-critical"`, "Failed", "<td>2</td>", "<td>1</td>", "exited with code 1")
	lacks(t, page, "the application's page", "checkpoint failed")
}
