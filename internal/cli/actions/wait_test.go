package actions

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/clitest"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// The --wait tests play the hub in a goroutine: it waits for the command's patch, then advances
// the status one step at a time, each time only after the command printed the previous step,
// so every step is observed and the printed lines are exact.

// hubStep is a status the fake hub writes, and the progress line the command must print for it.
type hubStep struct {
	mutate func(d *v1alpha1.DRPlacementControl)
	line   string
}

// playHub writes each step once the spec asks for action and the previous step's line is printed.
func playHub(t *testing.T, e clitest.Env, d *v1alpha1.DRPlacementControl, out *labtest.SyncBuffer, action v1alpha1.DRAction, steps []hubStep) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		clitest.WaitFor(t, "the command to patch the spec", func() bool { return clitest.Get(t, d).Spec.Action == action })
		for i, s := range steps {
			cur := clitest.Get(t, d)
			clitest.SetStatus(t, d, cur.Status, func(d *v1alpha1.DRPlacementControl) { s.mutate(d) })
			if i < len(steps)-1 {
				clitest.WaitFor(t, "the line "+s.line, func() bool {
					return strings.Contains(strings.Join(clitest.ProgressLines(out.String()), "\n"), s.line)
				})
			}
		}
	}()
	return done
}

func TestFailoverWaitPrintsEachStepUntilAvailable(t *testing.T) {
	e := clitest.NewEnv(t, "wait-failover")
	d := e.NewApp(t, "db")
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	out := &labtest.SyncBuffer{}
	hub := playHub(t, e, d, out, v1alpha1.ActionFailover, []hubStep{
		{clitest.InProgress(v1alpha1.PhaseFailingOver, e.West, "PromotingTarget", "wait-failover-west's VolumeReplicationGroup is not DataReady yet"),
			"FailingOver PromotingTarget waiting: wait-failover-west's VolumeReplicationGroup is not DataReady yet"},
		{clitest.InProgress(v1alpha1.PhaseFailingOver, e.West, "PlacingApplication", "placing the application"),
			"FailingOver PlacingApplication waiting: placing the application"},
		{func(d *v1alpha1.DRPlacementControl) {
			d.Status.Phase, d.Status.CurrentPrimary, d.Status.Progression = v1alpha1.PhaseFailedOver, e.West, "DemotingOldPrimary"
			d.Status.ActionDuration = &metav1.Duration{Duration: 1200 * time.Millisecond}
			clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the application runs on wait-failover-west"))
		}, "FailedOver DemotingOldPrimary the application runs on wait-failover-west"},
	})
	err := Act(t.Context(), clitest.Hub, out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionFailover, To: e.West,
		Wait: true, Timeout: 20 * time.Second, PollInterval: 20 * time.Millisecond})
	<-hub
	if err != nil {
		t.Fatalf("failover --wait failed: %v\n%s", err, out.String())
	}
	want := []string{
		"Deployed Completed the application runs on wait-failover-east",
		"FailingOver PromotingTarget waiting: wait-failover-west's VolumeReplicationGroup is not DataReady yet",
		"FailingOver PlacingApplication waiting: placing the application",
		"FailedOver DemotingOldPrimary the application runs on wait-failover-west",
	}
	got := clitest.ProgressLines(out.String())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("--wait printed the steps\n%s\nwant\n%s\nfull output:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out.String())
	}
	clitest.MustContain(t, out.String(), "Done: wait-failover/db runs on wait-failover-west, phase FailedOver (the hub took 1.2s).")
}

func TestRelocateWaitFailsWhenTheHubRefuses(t *testing.T) {
	e := clitest.NewEnv(t, "wait-refused")
	d := e.NewApp(t, "db")
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	out := &labtest.SyncBuffer{}
	refusal := "relocate refused: wait-refused-west is unreachable (timeout); a relocation needs both clusters; use failover"
	hub := playHub(t, e, d, out, v1alpha1.ActionRelocate, []hubStep{{func(d *v1alpha1.DRPlacementControl) {
		clitest.SetCond(d, metav1.Condition{Type: v1alpha1.ConditionActionAccepted, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPeerUnreachable,
			Message: refusal, ObservedGeneration: d.Generation, LastTransitionTime: *clitest.Ago(0)})
	}, ""}})
	err := Act(t.Context(), clitest.Hub, out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionRelocate, To: e.West,
		Wait: true, Timeout: 20 * time.Second, PollInterval: 20 * time.Millisecond})
	<-hub
	want := "the hub refused the relocate (PeerUnreachable): " + refusal
	if err == nil || err.Error() != want {
		t.Errorf("relocate --wait returned %v\nwant: %s\noutput:\n%s", err, want, out.String())
	}
}

func TestWaitTimesOutWhenNoHubAnswers(t *testing.T) {
	e := clitest.NewEnv(t, "wait-timeout")
	d := e.NewApp(t, "db")
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	out := &labtest.SyncBuffer{}
	err := Act(t.Context(), clitest.Hub, out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionFailover, To: e.West,
		Wait: true, Timeout: 300 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	want := "timed out after 300ms waiting for the failover of wait-timeout/db to wait-timeout-west: phase Deployed, step Completed, " +
		"the application runs on wait-timeout-east; the hub has not observed the change: is `drover hub` running against this cluster?; " +
		"the hub goes on: follow it with `drover status db -n wait-timeout`"
	if err == nil || err.Error() != want {
		t.Errorf("failover --wait returned %v\nwant: %s", err, want)
	}
	if got := clitest.ProgressLines(out.String()); len(got) != 1 {
		t.Errorf("an unchanged status printed %d progress lines, want 1:\n%s", len(got), out.String())
	}
}

func TestWaitNoticesAHubThatDoesNotObserveTheChange(t *testing.T) {
	e := clitest.NewEnv(t, "wait-stall")
	d := e.NewApp(t, "db")
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	out := &labtest.SyncBuffer{}
	start := time.Now()
	err := Act(t.Context(), clitest.Hub, out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionFailover, To: e.West,
		Wait: true, Timeout: time.Minute, PollInterval: 20 * time.Millisecond, StallAfter: 300 * time.Millisecond})
	want := "the hub has not observed the failover of wait-stall/db to wait-stall-west in "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "is `drover hub` running against this cluster?") {
		t.Errorf("failover --wait returned %v\nwant: %s...", err, want)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("--wait took %s to notice, not its stall time", took)
	}
}

func TestRelocateWaitFollowsTheFinalSyncUntilRelocated(t *testing.T) {
	e := clitest.NewEnv(t, "wait-relocate")
	d := e.NewApp(t, "db")
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	out := &labtest.SyncBuffer{}
	hub := playHub(t, e, d, out, v1alpha1.ActionRelocate, []hubStep{
		{clitest.InProgress(v1alpha1.PhaseRelocating, e.West, "StoppingApplication", "wait-relocate-east: pod db-0 uses PVC data-db-0"),
			"Relocating StoppingApplication waiting: wait-relocate-east: pod db-0 uses PVC data-db-0"},
		{clitest.InProgress(v1alpha1.PhaseRelocating, e.West, "DemotingForFinalSync", "waiting for the final sync"),
			"Relocating DemotingForFinalSync waiting: waiting for the final sync"},
		// Relocated on the target but not Available yet: the command goes on waiting.
		{func(d *v1alpha1.DRPlacementControl) {
			d.Status.Phase, d.Status.CurrentPrimary, d.Status.Progression = v1alpha1.PhaseRelocated, e.West, "Completed"
			clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "wait-relocate-west is not DataReady"))
		}, "Relocated Completed waiting: wait-relocate-west is not DataReady"},
		{func(d *v1alpha1.DRPlacementControl) {
			clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the application runs on wait-relocate-west"))
		}, "Relocated Completed the application runs on wait-relocate-west"},
	})
	err := Act(t.Context(), clitest.Hub, out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionRelocate, To: e.West,
		Wait: true, Timeout: 20 * time.Second, PollInterval: 20 * time.Millisecond})
	<-hub
	if err != nil {
		t.Fatalf("relocate --wait failed: %v\n%s", err, out.String())
	}
	got := clitest.ProgressLines(out.String())
	if len(got) != 5 || got[4] != "Relocated Completed the application runs on wait-relocate-west" || got[3] != "Relocated Completed waiting: wait-relocate-west is not DataReady" {
		t.Errorf("--wait printed the steps\n%s\nfull output:\n%s", strings.Join(got, "\n"), out.String())
	}
	clitest.MustContain(t, out.String(), "Expected data loss: none", "Done: wait-relocate/db runs on wait-relocate-west, phase Relocated.")
	if cur := clitest.Get(t, d); cur.Spec.Action != v1alpha1.ActionRelocate || cur.Spec.PreferredCluster != e.West {
		t.Errorf("relocate left the spec %+v", cur.Spec)
	}
}
