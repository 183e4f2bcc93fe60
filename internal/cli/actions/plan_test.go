package actions

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/clitest"
)

func TestPlanRelocateOfAProtectedApplication(t *testing.T) {
	e := clitest.NewEnv(t, "plan-relocate")
	db := e.NewApp(t, "db")
	clitest.SetStatus(t, db, e.Deployed(e.East, e.West))
	var out bytes.Buffer
	if err := Plan(t.Context(), clitest.Hub, &out, PlanOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionRelocate, To: e.West, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("plan failed: %v", err)
	}
	clitest.MustContain(t, out.String(),
		"Plan: relocate plan-relocate/db from plan-relocate-east to plan-relocate-west (DRPolicy plan-relocate, every 10s)",
		"  [ok] reachability of primary plan-relocate-east: Reachable True: the probe succeeds",
		"  [ok] PeerReady of plan-relocate-west: PeerReady True (Succeeded)",
		"  [ok] DataProtected of primary plan-relocate-east's group: every PVC completed a sync",
		"  1. stop the application on plan-relocate-east: its agent deletes the workloads of db (PVCs stay) (StoppingApplication)",
		"  2. demote plan-relocate-east with a final sync (DemotingForFinalSync)",
		"  3. promote plan-relocate-west's group once the final sync is confirmed (PromotingTarget)",
		"Expected data loss: none",
		"Verdict: relocate can start: drover relocate db -n plan-relocate --to plan-relocate-west",
	)
	if strings.Contains(out.String(), "[NO]") || strings.Contains(out.String(), "[warn]") {
		t.Errorf("a protected application's relocation has a precondition not met:\n%s", out.String())
	}
	if d := clitest.Get(t, db); d.Spec.Action != v1alpha1.ActionNone {
		t.Errorf("plan changed the spec: action %q", d.Spec.Action)
	}
}

func TestPlanFailoverWithThePrimaryLost(t *testing.T) {
	e := clitest.NewEnv(t, "plan-failover")
	db := e.NewApp(t, "db")
	e.SetReachable(t, e.East, false)
	clitest.SetStatus(t, db, e.Deployed(e.East, e.West), func(d *v1alpha1.DRPlacementControl) {
		clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionAvailable, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, "plan-failover-east, where the application runs, is unreachable"))
		clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionProtected, metav1.ConditionUnknown, v1alpha1.ReasonUnknown, "plan-failover-east is unreachable"))
		d.Status.LastGroupSyncTime = clitest.Ago(42 * time.Second)
	})
	var out bytes.Buffer
	if err := Plan(t.Context(), clitest.Hub, &out, PlanOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionFailover, To: e.West, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("plan failed: %v", err)
	}
	clitest.MustContain(t, out.String(),
		"  [ok] reachability of target plan-failover-west: Reachable True: the probe succeeds",
		"  [warn] age of the last group sync: 42s ago, more than twice the interval 10s: the target holds the data of 12:03:48 UTC (the last group sync)",
		"  1. plan-failover-east is unreachable since 12:04:10 UTC: its group is demoted the moment it is reachable again",
		"  2. promote plan-failover-west's group (PromotingTarget): restore the PVs and PVCs from the S3 store and make the volumes primary (the storage force-promotes while plan-failover-east is away)",
		"  3. start the application on plan-failover-west: its agent restores the captured Kubernetes objects once the PVCs are bound, workloads last (PlacingApplication)",
		"Expected data loss: up to 42s of writes: those made after the last group sync at 12:03:48 UTC (the policy syncs every 10s)",
		"Verdict: failover can start",
	)
	out.Reset()
	if err := Plan(t.Context(), clitest.Hub, &out, PlanOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionRelocate, To: e.West, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("plan failed: %v", err)
	}
	clitest.MustContain(t, out.String(),
		"  [NO] reachability of primary plan-failover-east: primary plan-failover-east unreachable since 12:04:10 UTC; a relocation needs both clusters: use failover (drover failover db -n plan-failover --to plan-failover-west)",
		"Verdict: relocate would be refused now: primary plan-failover-east unreachable since 12:04:10 UTC",
	)
}

func TestRelocateRefusalsSayWhatToDo(t *testing.T) {
	cases := []struct {
		name    string
		arrange func(t *testing.T, e clitest.Env, d *v1alpha1.DRPlacementControl)
		want    string
	}{
		{
			name: "the peer is unreachable",
			arrange: func(t *testing.T, e clitest.Env, d *v1alpha1.DRPlacementControl) {
				e.SetReachable(t, e.West, false)
				clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
			},
			want: "relocate refused: peer refuse-0-west unreachable since 12:04:10 UTC; the relocation needs it: wait until it is reachable (`kubectl get drcluster refuse-0-west`)",
		},
		{
			name: "PeerReady is False",
			arrange: func(t *testing.T, e clitest.Env, d *v1alpha1.DRPlacementControl) {
				clitest.SetStatus(t, d, e.Deployed(e.East, e.West), func(d *v1alpha1.DRPlacementControl) {
					clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "waiting for the peer to be Secondary: PVCInUse"))
				})
			},
			want: "relocate refused: the peer is not ready (PeerReady False (Progressing): waiting for the peer to be Secondary: PVCInUse); wait until PeerReady is True (drover status db -n refuse-1), or use failover",
		},
		{
			name: "the primary's data is not protected",
			arrange: func(t *testing.T, e clitest.Env, d *v1alpha1.DRPlacementControl) {
				clitest.SetStatus(t, d, e.Deployed(e.East, e.West), func(d *v1alpha1.DRPlacementControl) {
					clitest.Unprotected(d, v1alpha1.ReasonProgressing, "1 of 3 PVCs has not synced yet")
				})
			},
			want: "relocate refused: refuse-2-east's data is not protected (DataProtected False, Progressing: 1 of 3 PVCs has not synced yet); wait for it (drover status db -n refuse-2), or use failover and lose the writes since the last sync",
		},
		{
			name: "a failover is in progress",
			arrange: func(t *testing.T, e clitest.Env, d *v1alpha1.DRPlacementControl) {
				clitest.SetStatus(t, d, e.Deployed(e.East, e.West), func(d *v1alpha1.DRPlacementControl) {
					d.Status.Phase, d.Status.Progression, d.Status.ActionTarget = v1alpha1.PhaseFailingOver, "PromotingTarget", e.East
				})
			},
			want: "relocate refused: a failover to refuse-3-east is in progress (step PromotingTarget) and finishes first: follow it with `drover status db -n refuse-3`",
		},
		{
			name:    "the hub never reported",
			arrange: func(*testing.T, clitest.Env, *v1alpha1.DRPlacementControl) {},
			want:    "relocate refused: the hub has not reported on refuse-4/db (its status is empty): is `drover hub` running against this cluster?",
		},
		{
			name: "the hub does not act on the DRPlacementControl",
			arrange: func(t *testing.T, _ clitest.Env, d *v1alpha1.DRPlacementControl) {
				clitest.SetStatus(t, d, v1alpha1.DRPlacementControlStatus{Conditions: []metav1.Condition{clitest.Cond(v1alpha1.ConditionValidated, metav1.ConditionFalse,
					v1alpha1.ReasonNotFound, "DRPolicy missing does not exist: create it, or delete this DRPlacementControl")}})
			},
			want: "relocate refused: the hub does not accept the DRPlacementControl (NotFound): DRPolicy missing does not exist: create it, or delete this DRPlacementControl",
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := clitest.NewEnv(t, "refuse-"+string(rune('0'+i)))
			d := e.NewApp(t, "db")
			tc.arrange(t, e, d)
			var out bytes.Buffer
			err := Act(t.Context(), clitest.Hub, &out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionRelocate, To: e.West, Now: clitest.ClockAt})
			if err == nil || err.Error() != tc.want {
				t.Errorf("relocate returned %v\nwant: %s", err, tc.want)
			}
			if got := clitest.Get(t, d); got.Spec.Action != v1alpha1.ActionNone || got.Spec.PreferredCluster != e.East {
				t.Errorf("a refused relocation changed the spec: %+v", got.Spec)
			}
		})
	}
}

func TestFailoverToAClusterOutsideThePolicyIsRefused(t *testing.T) {
	e := clitest.NewEnv(t, "failover-outside")
	d := e.NewApp(t, "db")
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	var out bytes.Buffer
	err := Act(t.Context(), clitest.Hub, &out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionFailover, To: "north"})
	want := "failover refused: north is not a cluster of DRPolicy failover-outside, which pairs failover-outside-east and failover-outside-west: name one of those with --to"
	if err == nil || err.Error() != want {
		t.Errorf("failover returned %v\nwant: %s", err, want)
	}
}

func TestFailoverPatchesTheSpec(t *testing.T) {
	e := clitest.NewEnv(t, "failover-patch")
	d := e.NewApp(t, "db")
	e.SetReachable(t, e.East, false)
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	var out bytes.Buffer
	if err := Act(t.Context(), clitest.Hub, &out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionFailover, To: e.West, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("failover failed: %v", err)
	}
	got := clitest.Get(t, d)
	if got.Spec.Action != v1alpha1.ActionFailover || got.Spec.FailoverCluster != e.West || got.Spec.PreferredCluster != e.East {
		t.Errorf("failover left the spec %+v, want action Failover to %s with preferredCluster kept", got.Spec, e.West)
	}
	clitest.MustContain(t, out.String(),
		"Asked the hub to failover failover-patch/db from failover-patch-east to failover-patch-west (spec.action Failover, spec.failoverCluster failover-patch-west). Expected data loss: up to 8s of writes",
		"Follow it with `drover status db -n failover-patch`.")

	// Asking again changes nothing while the hub fails over.
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West), func(d *v1alpha1.DRPlacementControl) {
		d.Status.Phase, d.Status.ActionTarget = v1alpha1.PhaseFailingOver, e.West
	})
	out.Reset()
	if err := Act(t.Context(), clitest.Hub, &out, ActionOptions{Namespace: e.NS, App: "db", Action: v1alpha1.ActionFailover, To: e.West}); err != nil {
		t.Fatalf("failover again failed: %v", err)
	}
	clitest.MustContain(t, out.String(), "Nothing to ask: a failover to failover-patch-west is already in progress")
	if again := clitest.Get(t, d); again.Generation != got.Generation {
		t.Errorf("asking again wrote the spec: generation %d, was %d", again.Generation, got.Generation)
	}
}
