package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/clitest"
)

func TestTheStatusOfAnApplicationListsItsHooksRunsAndWhatToDoWithAFailedOne(t *testing.T) {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Status: e.Deployed("east", "west")}
	var out bytes.Buffer
	printHooks(&out, d)
	if out.Len() != 0 {
		t.Errorf("an application without hooks' runs prints no hooks table:\n%s", out.String())
	}

	d.Status.Phase = v1alpha1.PhaseRelocating
	took := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	d.Status.Hooks = []v1alpha1.HookRun{
		{Cluster: "east", Name: "checkpoint", Point: v1alpha1.HookBeforeSync, Attempt: 1, Result: v1alpha1.HookSucceeded,
			Duration: took(300 * time.Millisecond), ExitCode: ptr.To[int32](0), Output: "CHECKPOINT"},
		{Cluster: "east", Name: "stop-db", Point: v1alpha1.HookBeforeStop, Attempt: 2, Result: v1alpha1.HookFailed,
			Duration: took(2 * time.Second), ExitCode: ptr.To[int32](1),
			Output: "waiting for server to shut down....\npg_ctl: server does not shut down\n"},
		{Cluster: "west", Name: "migrate", Point: v1alpha1.HookAfterReady, Attempt: 1, Result: v1alpha1.HookRunning},
	}
	printHooks(&out, d)
	clitest.MustContain(t, out.String(),
		"CLUSTER  HOOK        POINT       ATTEMPT  RESULT     TOOK   OUTPUT",
		"east     checkpoint  BeforeSync  1        Succeeded  300ms  -",
		"east     stop-db     BeforeStop  2        Failed     2s     exit 1: waiting for server to shut down.... pg_ctl: server does not shut down",
		"west     migrate     AfterReady  1        Running    -      -",
		"stop-db failed on east at attempt 2: fix the cause, then drover relocate db -n app --retry, or --continue to go on past it")
	if strings.Count(out.String(), "--retry") != 1 {
		t.Errorf("only the failed run says what to do:\n%s", out.String())
	}
}
