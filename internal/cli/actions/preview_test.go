package actions

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/clitest"
)

// offlineApp is an application deployed on east, as the hub reports it, with its policy and
// both clusters reachable.
func offlineApp() *cli.App {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	reachable := func(name string) *v1alpha1.DRCluster {
		return &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.DRClusterStatus{Conditions: []metav1.Condition{
			clitest.Cond(v1alpha1.ConditionReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the probe succeeds")}}}
	}
	return &cli.App{
		DRPC: &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"},
			Spec: v1alpha1.DRPlacementControlSpec{DRPolicyRef: v1alpha1.PolicyReference{Name: "p"}, PreferredCluster: "east",
				PlacementRef: &v1alpha1.PlacementReference{Kind: "Placement", Name: "db-placement"}},
			Status: e.Deployed("east", "west")},
		Policy:   &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1alpha1.DRPolicySpec{DRClusters: []string{"east", "west"}, SchedulingInterval: "10s"}},
		Interval: 10 * time.Second,
		Clusters: map[string]*v1alpha1.DRCluster{"east": reachable("east"), "west": reachable("west")},
	}
}

func TestPreview(t *testing.T) {
	cases := []struct {
		name    string
		action  v1alpha1.DRAction
		to      string
		arrange func(a *cli.App)
		refusal string
		warns   []string
		noop    string
	}{
		{name: "a relocation of a protected application may start", action: v1alpha1.ActionRelocate, to: "west"},
		{name: "a failover may overtake a relocation", action: v1alpha1.ActionFailover, to: "west",
			arrange: func(a *cli.App) { a.DRPC.Status.Phase, a.DRPC.Status.ActionTarget = v1alpha1.PhaseRelocating, "west" },
		},
		{name: "a relocation may not overtake a failover", action: v1alpha1.ActionRelocate, to: "west",
			arrange: func(a *cli.App) { a.DRPC.Status.Phase, a.DRPC.Status.ActionTarget = v1alpha1.PhaseFailingOver, "west" },
			refusal: "relocate refused: a failover to west is in progress",
		},
		{name: "nothing to do where the application runs", action: v1alpha1.ActionFailover, to: "east",
			noop: "the application already runs on east (phase Deployed)"},
		{name: "the action already in progress", action: v1alpha1.ActionRelocate, to: "west",
			arrange: func(a *cli.App) {
				a.DRPC.Status.Phase, a.DRPC.Status.ActionTarget, a.DRPC.Status.Progression = v1alpha1.PhaseRelocating, "west", "DemotingForFinalSync"
			},
			noop: "a relocate to west is already in progress (step DemotingForFinalSync)"},
		{name: "a failover while the peer is not ready warns", action: v1alpha1.ActionFailover, to: "west",
			arrange: func(a *cli.App) {
				clitest.SetCond(a.DRPC, clitest.Cond(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "west is demoting"))
			},
			warns: []string{"PeerReady False (Progressing): west is demoting; west may not hold the latest data"},
		},
		{name: "a failover to an unreachable target is refused", action: v1alpha1.ActionFailover, to: "west",
			arrange: func(a *cli.App) { a.Clusters["west"].Status.Conditions[0].Status = metav1.ConditionFalse },
			refusal: "failover refused: peer west unreachable since 12:03:30 UTC; the failover needs it",
		},
		{name: "a relocation while the primary's probe fails is refused", action: v1alpha1.ActionRelocate, to: "west",
			arrange: func(a *cli.App) {
				a.Clusters["east"].Status.Conditions[0].Reason = v1alpha1.ReasonProbeFailing
				a.Clusters["east"].Status.Conditions[0].Message = "the probe has failed since 12:04:20 (grace period 15s): timeout"
			},
			refusal: "relocate refused: primary east not answering the hub's probe (the probe has failed since 12:04:20 (grace period 15s): timeout); a relocation needs both clusters: use failover (drover failover db -n app --to west)",
		},
		{name: "an invalid DRPlacementControl is refused", action: v1alpha1.ActionFailover, to: "west",
			arrange: func(a *cli.App) {
				clitest.SetCond(a.DRPC, clitest.Cond(v1alpha1.ConditionValidated, metav1.ConditionFalse, v1alpha1.ReasonNamespaceConflict, "web protects db already"))
			},
			refusal: "failover refused: the hub does not accept the DRPlacementControl (NamespaceConflict): web protects db already",
		},
		{name: "a DRPolicy that does not exist is named", action: v1alpha1.ActionRelocate, to: "west",
			arrange: func(a *cli.App) { a.Policy = nil },
			refusal: "relocate refused: DRPolicy p does not exist on the hub",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := offlineApp()
			if tc.arrange != nil {
				tc.arrange(a)
			}
			p := preview(a, tc.action, tc.to, clitest.TestNow)
			if p.Noop != (tc.noop != "") || p.NoopReason != tc.noop {
				t.Errorf("noop %v %q, want %q", p.Noop, p.NoopReason, tc.noop)
			}
			err := p.Refusal()
			switch {
			case tc.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusal != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.refusal)):
				t.Errorf("refusal %v, want it to start with %q", err, tc.refusal)
			}
			var warns []string
			for _, c := range p.Warnings() {
				warns = append(warns, c.Detail)
			}
			if strings.Join(warns, "|") != strings.Join(tc.warns, "|") {
				t.Errorf("warnings %q, want %q", warns, tc.warns)
			}
		})
	}
}

func TestStepsFollowTheStateMachine(t *testing.T) {
	a := offlineApp()
	relocate := strings.Join(steps(a, v1alpha1.ActionRelocate, "west"), "\n")
	for i, want := range []string{
		"stop the application on east: the PlacementDecision of db-placement names no cluster",
		"demote east with a final sync (DemotingForFinalSync)",
		"promote west's group once the final sync is confirmed (PromotingTarget)",
		"place the application on west: the PlacementDecision of db-placement names west",
	} {
		if !strings.Contains(relocate, want) {
			t.Errorf("relocation step %d lacks %q:\n%s", i+1, want, relocate)
		}
	}
	failover := strings.Join(steps(a, v1alpha1.ActionFailover, "west"), "\n")
	if !strings.Contains(failover, "promote west's group (PromotingTarget)") || strings.Contains(failover, "final sync") {
		t.Errorf("failover steps:\n%s", failover)
	}
}

func TestLoss(t *testing.T) {
	a := offlineApp()
	if got := loss(a, v1alpha1.ActionRelocate, clitest.TestNow); !strings.HasPrefix(got, "none:") {
		t.Errorf("relocation loss %q, want none", got)
	}
	if got, want := loss(a, v1alpha1.ActionFailover, clitest.TestNow), "up to 8s of writes: those made after the last group sync at 12:04:22 UTC (the policy syncs every 10s)"; got != want {
		t.Errorf("failover loss %q, want %q", got, want)
	}
	a.DRPC.Status.LastGroupSyncTime, a.DRPC.Status.VRGs = nil, nil
	if got := loss(a, v1alpha1.ActionFailover, clitest.TestNow); !strings.HasPrefix(got, "unknown: no group sync is recorded") {
		t.Errorf("failover loss without a sync %q", got)
	}
}

func TestOutcome(t *testing.T) {
	base := offlineApp().DRPC
	base.Generation = 3
	base.Spec.Action, base.Spec.FailoverCluster = v1alpha1.ActionFailover, "west"
	o := &ActionOptions{Action: v1alpha1.ActionFailover, To: "west"}
	cases := []struct {
		name    string
		mutate  func(d *v1alpha1.DRPlacementControl)
		done    bool
		wantErr string
	}{
		{name: "not started yet", mutate: func(*v1alpha1.DRPlacementControl) {}},
		{name: "an old refusal is not this action's", mutate: func(d *v1alpha1.DRPlacementControl) {
			c := clitest.Cond(v1alpha1.ConditionActionAccepted, metav1.ConditionFalse, v1alpha1.ReasonActionInProgress, "old")
			c.ObservedGeneration = 2
			clitest.SetCond(d, c)
		}},
		{name: "the hub refuses this action", mutate: func(d *v1alpha1.DRPlacementControl) {
			c := clitest.Cond(v1alpha1.ConditionActionAccepted, metav1.ConditionFalse, v1alpha1.ReasonActionInProgress, "a relocation runs")
			c.ObservedGeneration = 3
			clitest.SetCond(d, c)
		}, wantErr: "the hub refused the failover (ActionInProgress): a relocation runs"},
		{name: "failed over but not available yet", mutate: func(d *v1alpha1.DRPlacementControl) {
			d.Status.Phase, d.Status.CurrentPrimary = v1alpha1.PhaseFailedOver, "west"
			clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "west not DataReady"))
		}},
		{name: "failed over and available", mutate: func(d *v1alpha1.DRPlacementControl) {
			d.Status.Phase, d.Status.CurrentPrimary = v1alpha1.PhaseFailedOver, "west"
		}, done: true},
		{name: "someone asks for something else", mutate: func(d *v1alpha1.DRPlacementControl) {
			d.Spec.Action = v1alpha1.ActionRelocate
		}, wantErr: "the DRPlacementControl's spec changed while waiting: it now asks for Relocate to east; stopped waiting for the failover to west"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := base.DeepCopy()
			tc.mutate(d)
			done, err := outcome(d, o, 3)
			if done != tc.done || (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
				t.Errorf("outcome = %v, %v; want %v, %q", done, err, tc.done, tc.wantErr)
			}
		})
	}
}

// objectsOnlyApp is offlineApp in self-contained mode with no PVC selected: its primary's
// group protects none, and its lastGroupSyncTime is the last capture of its objects.
func objectsOnlyApp() *cli.App {
	a := offlineApp()
	a.DRPC.Spec.PlacementRef, a.DRPC.Spec.ProtectedNamespaces = nil, []string{"app"}
	none := int32(0)
	a.DRPC.Status.VRGs[0].ProtectedPVCs = &none
	return a
}

// lastCheck is the last precondition of action to west: for a failover the age of the last
// sync, for a relocation the DataProtected of the primary's group.
func lastCheck(a *cli.App, action v1alpha1.DRAction) cli.Check {
	cs := cli.Checks(a, action, "west", clitest.TestNow)
	return cs[len(cs)-1]
}

func TestAPlanOfAnApplicationWithNoPVCJudgesItsLastCapture(t *testing.T) {
	a := objectsOnlyApp()
	c := lastCheck(a, v1alpha1.ActionFailover)
	if want := "age of the last capture of the objects (no PVCs selected)"; c.Name != want || !c.Met || c.Detail != "8s ago, within twice the interval 10s" {
		t.Errorf("check %+v, want %q met", c, want)
	}
	if got, want := loss(a, v1alpha1.ActionFailover, clitest.TestNow), "objects changed since the last capture (8s): no PVCs selected, the target restores the objects as captured at 12:04:22 UTC"; got != want {
		t.Errorf("loss %q, want %q", got, want)
	}
	a.DRPC.Status.LastGroupSyncTime = clitest.Ago(42 * time.Second)
	if c := lastCheck(a, v1alpha1.ActionFailover); c.Met || c.Detail != "42s ago, more than twice the interval 10s: the target holds the objects of 12:03:48 UTC (the last capture)" {
		t.Errorf("stale check %+v", c)
	}
	a.DRPC.Status.LastGroupSyncTime, a.DRPC.Status.VRGs[0].LastGroupSyncTime = nil, nil
	if got := loss(a, v1alpha1.ActionFailover, clitest.TestNow); !strings.HasPrefix(got, "unknown: no capture of the objects in every S3 profile is recorded") {
		t.Errorf("loss without a capture %q", got)
	}
	if c := lastCheck(objectsOnlyApp(), v1alpha1.ActionRelocate); !c.Met || !strings.HasPrefix(c.Detail, "no PVCs selected") {
		t.Errorf("DataProtected check of a group with no PVC %+v", c)
	}
	failover := strings.Join(steps(objectsOnlyApp(), v1alpha1.ActionFailover, "west"), "\n")
	for _, want := range []string{"promote west's group (PromotingTarget): no PVCs selected, it has no volume to restore",
		"start the application on west: its agent restores the captured Kubernetes objects, workloads last (PlacingApplication)"} {
		if !strings.Contains(failover, want) {
			t.Errorf("failover steps lack %q:\n%s", want, failover)
		}
	}
	e := entry{p: preview(objectsOnlyApp(), v1alpha1.ActionFailover, "west", clitest.TestNow)}
	if v, detail := e.verdict(); v != "can start" || detail != "data loss: objects changed since the last capture (8s)" {
		t.Errorf("plan table verdict %q %q", v, detail)
	}
}

// A check's name says what is checked, so it reads the same whatever the outcome; the outcome
// is in its mark and its detail.
func TestAPlanCheckIsNamedTheSameMetOrNot(t *testing.T) {
	broken := []func(a *cli.App){
		func(a *cli.App) { a.Clusters["east"].Status.Conditions[0].Status = metav1.ConditionFalse },
		func(a *cli.App) { a.Clusters["west"].Status.Conditions[0].Status = metav1.ConditionFalse },
		func(a *cli.App) { a.DRPC.Status.Conditions[3].Status = metav1.ConditionFalse },
		func(a *cli.App) { a.DRPC.Status.LastGroupSyncTime = clitest.Ago(time.Minute) },
		func(a *cli.App) { a.DRPC.Status.LastGroupSyncTime, a.DRPC.Status.VRGs[0].LastGroupSyncTime = nil, nil },
		func(a *cli.App) {
			clitest.Unprotected(a.DRPC, v1alpha1.ReasonProgressing, "1 of 3 PVCs has not synced yet")
		},
		func(a *cli.App) { a.DRPC.Status.Phase, a.DRPC.Status.ActionTarget = v1alpha1.PhaseFailingOver, "east" },
	}
	for _, action := range []v1alpha1.DRAction{v1alpha1.ActionFailover, v1alpha1.ActionRelocate} {
		healthy := preview(offlineApp(), action, "west", clitest.TestNow)
		for i, breakIt := range broken {
			a := offlineApp()
			breakIt(a)
			p := preview(a, action, "west", clitest.TestNow)
			for j, c := range p.Checks {
				if j >= len(healthy.Checks) || c.Name != healthy.Checks[j].Name {
					t.Errorf("%s, case %d: check %d is named %q, %q when it holds", action, i, j, c.Name, healthy.Checks[j].Name)
				}
				if !c.Met && c.Detail == healthy.Checks[j].Detail {
					t.Errorf("%s, case %d: check %q is not met but says what it says when met: %q", action, i, c.Name, c.Detail)
				}
			}
		}
	}
}

func TestActionOptionsAreValidatedBeforeAnyRead(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"a JSONPath that does not parse", (&PlanOptions{Output: "jsonpath={.items[", Action: v1alpha1.ActionFailover, App: "db", To: "west"}).Validate(), `-o jsonpath: the template "{.items[" does not parse: unterminated array`},
		{"no --to", (&ActionOptions{Action: v1alpha1.ActionFailover, App: "db"}).Validate(), "name the cluster to move the application to with --to"},
		{"an unknown action", (&PlanOptions{Action: "Evacuate", App: "db", To: "west"}).Validate(), `unknown action "Evacuate": use failover or relocate`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || tc.err.Error() != tc.want {
				t.Errorf("got %v, want %q", tc.err, tc.want)
			}
		})
	}
}
