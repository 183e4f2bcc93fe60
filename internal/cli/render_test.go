package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/clitest"
)

// Pure tests of what the verbs compute and print, without an API server.

func TestRPOLag(t *testing.T) {
	cases := []struct {
		name     string
		lag      time.Duration
		interval time.Duration
		refresh  *metav1.Duration
		want     string
	}{
		{"within the interval", 8 * time.Second, 10 * time.Second, nil, "8s/10s"},
		{"late but within twice the interval", 19 * time.Second, 10 * time.Second, nil, "19s/10s"},
		{"past twice the interval is stale, as the hub's Protected says", 21 * time.Second, 10 * time.Second, nil, "21s/10s STALE"},
		{"within twice the interval plus the storage's status refresh", 29 * time.Second, 10 * time.Second, &metav1.Duration{Duration: 10 * time.Second}, "29s/10s"},
		{"past twice the interval plus the storage's status refresh", 31 * time.Second, 10 * time.Second, &metav1.Duration{Duration: 10 * time.Second}, "31s/10s STALE"},
		{"minutes", 150 * time.Second, 5 * time.Minute, nil, "2m30s/5m"},
		{"an unknown interval", 8 * time.Second, 0, nil, "8s/?"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rpoLag(tc.lag, tc.interval, tc.refresh); got != tc.want {
				t.Errorf("rpoLag(%s, %s) = %q, want %q", tc.lag, tc.interval, got, tc.want)
			}
		})
	}
}

func TestRowOf(t *testing.T) {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	deployed := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Status: e.Deployed("east", "west")}
	failing := deployed.DeepCopy()
	failing.Status.Phase, failing.Status.Progression, failing.Status.LastGroupSyncTime = v1alpha1.PhaseFailingOver, "PromotingTarget", nil
	failing.Status.VRGs[0].LastGroupSyncTime = clitest.Ago(25 * time.Second)
	never := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "app"}}
	invalid := never.DeepCopy()
	clitest.SetCond(invalid, clitest.Cond(v1alpha1.ConditionValidated, metav1.ConditionFalse, v1alpha1.ReasonNotFound, "DRPolicy missing does not exist"))
	refused := deployed.DeepCopy()
	clitest.SetCond(refused, clitest.Cond(v1alpha1.ConditionActionAccepted, metav1.ConditionFalse, v1alpha1.ReasonPeerNotReady, "relocate refused"))
	cases := []struct {
		name string
		d    *v1alpha1.DRPlacementControl
		want StatusRow
	}{
		{"a deployed, protected application", deployed,
			StatusRow{"app", "db", "Deployed", "east", "True", "True", "8s ago", "8s/10s", "Completed", "-", "-", "no action"}},
		{"during a failover the primary's group tells the last sync", failing,
			StatusRow{"app", "db", "FailingOver", "east", "True", "True", "25s ago", "25s/10s STALE", "PromotingTarget", "-", "-", "no action"}},
		{"an application the hub never reported", never,
			StatusRow{"app", "new", "-", "-", "-", "-", "-", "-", "-", "-", "-", "no action"}},
		{"an application the hub does not act on says why", invalid,
			StatusRow{"app", "new", "-", "-", "-", "-", "-", "-", "-", "Validated: NotFound", "-", "no action"}},
		{"an action the hub refuses says why", refused,
			StatusRow{"app", "db", "Deployed", "east", "True", "True", "8s ago", "8s/10s", "Completed", "ActionAccepted: PeerNotReady", "-", "no action"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rowOf(tc.d, 10*time.Second, clitest.TestNow); got != tc.want {
				t.Errorf("rowOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// offlineApp is an application deployed on east, as the hub reports it, with its policy and
// both clusters reachable.
func offlineApp() *App {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	reachable := func(name string) *v1alpha1.DRCluster {
		return &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.DRClusterStatus{Conditions: []metav1.Condition{
			clitest.Cond(v1alpha1.ConditionReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the probe succeeds")}}}
	}
	return &App{
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
		arrange func(a *App)
		refusal string
		warns   []string
		noop    string
	}{
		{name: "a relocation of a protected application may start", action: v1alpha1.ActionRelocate, to: "west"},
		{name: "a failover may overtake a relocation", action: v1alpha1.ActionFailover, to: "west",
			arrange: func(a *App) { a.DRPC.Status.Phase, a.DRPC.Status.ActionTarget = v1alpha1.PhaseRelocating, "west" },
		},
		{name: "a relocation may not overtake a failover", action: v1alpha1.ActionRelocate, to: "west",
			arrange: func(a *App) { a.DRPC.Status.Phase, a.DRPC.Status.ActionTarget = v1alpha1.PhaseFailingOver, "west" },
			refusal: "relocate refused: a failover to west is in progress",
		},
		{name: "nothing to do where the application runs", action: v1alpha1.ActionFailover, to: "east",
			noop: "the application already runs on east (phase Deployed)"},
		{name: "the action already in progress", action: v1alpha1.ActionRelocate, to: "west",
			arrange: func(a *App) {
				a.DRPC.Status.Phase, a.DRPC.Status.ActionTarget, a.DRPC.Status.Progression = v1alpha1.PhaseRelocating, "west", "DemotingForFinalSync"
			},
			noop: "a relocate to west is already in progress (step DemotingForFinalSync)"},
		{name: "a failover while the peer is not ready warns", action: v1alpha1.ActionFailover, to: "west",
			arrange: func(a *App) {
				clitest.SetCond(a.DRPC, clitest.Cond(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "west is demoting"))
			},
			warns: []string{"PeerReady False (Progressing): west is demoting; west may not hold the latest data"},
		},
		{name: "a failover to an unreachable target is refused", action: v1alpha1.ActionFailover, to: "west",
			arrange: func(a *App) { a.Clusters["west"].Status.Conditions[0].Status = metav1.ConditionFalse },
			refusal: "failover refused: peer west unreachable since 12:03:30 UTC; the failover needs it",
		},
		{name: "a relocation while the primary's probe fails is refused", action: v1alpha1.ActionRelocate, to: "west",
			arrange: func(a *App) {
				a.Clusters["east"].Status.Conditions[0].Reason = v1alpha1.ReasonProbeFailing
				a.Clusters["east"].Status.Conditions[0].Message = "the probe has failed since 12:04:20 (grace period 15s): timeout"
			},
			refusal: "relocate refused: primary east not answering the hub's probe (the probe has failed since 12:04:20 (grace period 15s): timeout); a relocation needs both clusters: use failover (drover failover db -n app --to west)",
		},
		{name: "an invalid DRPlacementControl is refused", action: v1alpha1.ActionFailover, to: "west",
			arrange: func(a *App) {
				clitest.SetCond(a.DRPC, clitest.Cond(v1alpha1.ConditionValidated, metav1.ConditionFalse, v1alpha1.ReasonNamespaceConflict, "web protects db already"))
			},
			refusal: "failover refused: the hub does not accept the DRPlacementControl (NamespaceConflict): web protects db already",
		},
		{name: "a DRPolicy that does not exist is named", action: v1alpha1.ActionRelocate, to: "west",
			arrange: func(a *App) { a.Policy = nil },
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

func TestOptionsAreValidatedBeforeAnyRead(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"an unknown output", (&StatusOptions{Output: "table"}).Validate(), `unknown output format "table": use wide, name, json, yaml or jsonpath=TEMPLATE, or leave -o out for a table`},
		{"a JSONPath that does not parse", (&PlanOptions{Output: "jsonpath={.items[", Action: v1alpha1.ActionFailover, App: "db", To: "west"}).Validate(), `-o jsonpath: the template "{.items[" does not parse: unterminated array`},
		{"APP with -A", (&StatusOptions{App: "db", AllNamespaces: true}).Validate(), "APP names one DRPlacementControl: drop -A and name its namespace with -n"},
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

func TestTheClustersTableTellsEachGroupsDataStatusesAndWhatIsWrongWithIt(t *testing.T) {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Status: e.Deployed("east", "west")}
	clitest.Unprotected(d, v1alpha1.ReasonProgressing, "1 of 3 PVCs has not synced yet")
	var out bytes.Buffer
	printGroups(&out, &App{DRPC: d}, clitest.ClockAt())
	clitest.MustContain(t, out.String(),
		"east     -          primary    Primary    True        False           8s ago",
		"west     -          secondary  Secondary  True        Unknown         -",
		"east: DataProtected False (Progressing): 1 of 3 PVCs has not synced yet")
	if strings.Contains(out.String(), "west:") {
		t.Errorf("a healthy secondary has no problem to tell:\n%s", out.String())
	}
}

func TestTheStatusOfAnApplicationListsItsPVCsWithTheirLastSyncAgainstTheInterval(t *testing.T) {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Status: e.Deployed("east", "west")}
	var out bytes.Buffer
	printGroups(&out, &App{DRPC: d, Interval: 10 * time.Second}, clitest.ClockAt())
	if strings.Contains(out.String(), "PVCs:") {
		t.Errorf("a status whose groups list no PVC prints a PVC table:\n%s", out.String())
	}

	clitest.Unprotected(d, v1alpha1.ReasonProgressing, "waiting for the first sync of PVC app/data-db-2")
	total := int32(17)
	d.Status.VRGs[0].ProtectedPVCs = &total
	d.Status.VRGs[0].PVCs = []v1alpha1.PVCSyncSummary{
		{Namespace: "app", Name: "data-db-0", DataProtected: metav1.ConditionTrue, LastSyncTime: clitest.Ago(8 * time.Second),
			LastSyncDuration: &metav1.Duration{Duration: 1200 * time.Millisecond}},
		{Namespace: "app", Name: "data-db-1", DataProtected: metav1.ConditionTrue, LastSyncTime: clitest.Ago(25 * time.Second)},
		{Namespace: "app", Name: "data-db-2", DataProtected: metav1.ConditionFalse, Reason: v1alpha1.ReasonProgressing},
	}
	for i := 3; i < v1alpha1.MaxPVCSummaries; i++ {
		d.Status.VRGs[0].PVCs = append(d.Status.VRGs[0].PVCs, v1alpha1.PVCSyncSummary{Namespace: "app", Name: fmt.Sprintf("data-db-%d", i),
			DataProtected: metav1.ConditionTrue, LastSyncTime: clitest.Ago(8 * time.Second)})
	}
	out.Reset()
	printGroups(&out, &App{DRPC: d, Interval: 10 * time.Second}, clitest.ClockAt())
	clitest.MustContain(t, out.String(),
		"PVC             CLUSTER  LAST SYNC / INTERVAL          TOOK  DATA PROTECTED  REASON",
		"app/data-db-0   east     8s/10s (12:04:22 UTC)         1.2s  True            -",
		"app/data-db-1   east     25s/10s STALE (12:04:05 UTC)  -     True            -",
		"app/data-db-2   east     not synced yet                -     False           Progressing",
		"east: 16 of its 17 PVCs listed (not protected first, then the least recently synced)")
}

// objectsOnlyApp is offlineApp in self-contained mode with no PVC selected: its primary's
// group protects none, and its lastGroupSyncTime is the last capture of its objects.
func objectsOnlyApp() *App {
	a := offlineApp()
	a.DRPC.Spec.PlacementRef, a.DRPC.Spec.ProtectedNamespaces = nil, []string{"app"}
	none := int32(0)
	a.DRPC.Status.VRGs[0].ProtectedPVCs = &none
	return a
}

func TestAPlanOfAnApplicationWithNoPVCJudgesItsLastCapture(t *testing.T) {
	a := objectsOnlyApp()
	c := recentSyncCheck(a, clitest.TestNow)
	if want := "age of the last capture of the objects (no PVCs selected)"; c.Name != want || !c.Met || c.Detail != "8s ago, within twice the interval 10s" {
		t.Errorf("check %+v, want %q met", c, want)
	}
	if got, want := loss(a, v1alpha1.ActionFailover, clitest.TestNow), "objects changed since the last capture (8s): no PVCs selected, the target restores the objects as captured at 12:04:22 UTC"; got != want {
		t.Errorf("loss %q, want %q", got, want)
	}
	a.DRPC.Status.LastGroupSyncTime = clitest.Ago(42 * time.Second)
	if c := recentSyncCheck(a, clitest.TestNow); c.Met || c.Detail != "42s ago, more than twice the interval 10s: the target holds the objects of 12:03:48 UTC (the last capture)" {
		t.Errorf("stale check %+v", c)
	}
	a.DRPC.Status.LastGroupSyncTime, a.DRPC.Status.VRGs[0].LastGroupSyncTime = nil, nil
	if got := loss(a, v1alpha1.ActionFailover, clitest.TestNow); !strings.HasPrefix(got, "unknown: no capture of the objects in every S3 profile is recorded") {
		t.Errorf("loss without a capture %q", got)
	}
	if c := protectedCheck(objectsOnlyApp().DRPC, "east", "drover status db"); !c.Met || !strings.HasPrefix(c.Detail, "no PVCs selected") {
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
	broken := []func(a *App){
		func(a *App) { a.Clusters["east"].Status.Conditions[0].Status = metav1.ConditionFalse },
		func(a *App) { a.Clusters["west"].Status.Conditions[0].Status = metav1.ConditionFalse },
		func(a *App) { a.DRPC.Status.Conditions[3].Status = metav1.ConditionFalse },
		func(a *App) { a.DRPC.Status.LastGroupSyncTime = clitest.Ago(time.Minute) },
		func(a *App) { a.DRPC.Status.LastGroupSyncTime, a.DRPC.Status.VRGs[0].LastGroupSyncTime = nil, nil },
		func(a *App) {
			clitest.Unprotected(a.DRPC, v1alpha1.ReasonProgressing, "1 of 3 PVCs has not synced yet")
		},
		func(a *App) { a.DRPC.Status.Phase, a.DRPC.Status.ActionTarget = v1alpha1.PhaseFailingOver, "east" },
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
