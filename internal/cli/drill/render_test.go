package drill

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/clitest"
)

// Pure tests of what the drill verbs compute and print, without an API server.

func TestDrillFollowerPrintsEachStepAndPhaseOnce(t *testing.T) {
	e := clitest.Env{NS: "app", East: "east", West: "west"}
	d := &v1alpha1.DRDrill{}
	f := &drillFollower{seen: map[string]bool{}}
	got := func() []string {
		var out []string
		for _, l := range f.lines(d) {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
		return out
	}
	expect := func(what string, want ...string) {
		t.Helper()
		if g := got(); strings.Join(g, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: printed\n%s\nwant\n%s", what, strings.Join(g, "\n"), strings.Join(want, "\n"))
		}
	}
	expect("no status yet", "Pending: waiting for the hub to accept the drill")
	expect("nothing changed")
	d.Status = v1alpha1.DRDrillStatus{Phase: v1alpha1.DrillRunning, TargetCluster: "west", PrimaryCluster: "east",
		Steps: []v1alpha1.DrillStep{step("Accepted", 0, 0, v1alpha1.DrillResultPassed, "ok"), step("CopyingVolumes", 0, -1, "", "copying")}}
	expect("the drill runs", "Accepted Passed 0s ok", "CopyingVolumes running - copying",
		"Running: sandbox on west, from the data replicated from east (untouched)")
	d.Status.Steps[1].Message = "copying, 1 of 2 done"
	expect("a running step's message changed: not printed again")
	full := v1alpha1.DRDrillStatus{}
	passedDrill(e)(&full)
	d.Status.Steps = full.Steps[:4]
	expect("steps that started and ended between two reads print their end only",
		"CopyingVolumes Passed 21s 2 volumes copied from their latest snapshots", "RestoringObjects Passed 4s 14 objects restored",
		"StartingWorkloads Passed 35s statefulset/db Ready")
	d.Status.Phase = v1alpha1.DrillFailed
	expect("the end", "Failed: the drill ended")
}

func TestDrillOutcomeSaysWhyAndExitsAsTheOtherVerbs(t *testing.T) {
	failed := func(mutate func(st *v1alpha1.DRDrillStatus)) *v1alpha1.DRDrill {
		d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Name: "db-x", Namespace: "app"}, Spec: v1alpha1.DRDrillSpec{DRPCName: "db"}}
		d.Status.Phase = v1alpha1.DrillFailed
		mutate(&d.Status)
		return d
	}
	cases := []struct {
		name string
		d    *v1alpha1.DRDrill
		code int
		want string
	}{
		{"passed", failed(func(st *v1alpha1.DRDrillStatus) { st.Phase = v1alpha1.DrillPassed }), cli.ExitOK, ""},
		{"timed out", failed(func(st *v1alpha1.DRDrillStatus) {
			st.Conditions = []metav1.Condition{clitest.Cond(v1alpha1.ConditionDrillAccepted, metav1.ConditionFalse, v1alpha1.ReasonDrillTimedOut, "no result in 30m")}
		}), cli.ExitFailed, "drill app/db-x of db failed: TimedOut: no result in 30m"},
		{"a readiness check failed", failed(func(st *v1alpha1.DRDrillStatus) {
			st.Readiness = []v1alpha1.DrillCheck{{Name: "StorageClass lab-block", Result: v1alpha1.DrillResultFailed, Message: "absent on west"}}
		}), cli.ExitFailed, "drill app/db-x of db failed: readiness check StorageClass lab-block failed: absent on west"},
		{"no reason given", failed(func(*v1alpha1.DRDrillStatus) {}), cli.ExitFailed, "the hub gave no reason; read the report (`drover drill report`)"},
		{"refused", failed(func(st *v1alpha1.DRDrillStatus) {
			st.Phase = v1alpha1.DrillRefused
			st.Conditions = []metav1.Condition{clitest.Cond(v1alpha1.ConditionDrillAccepted, metav1.ConditionFalse, v1alpha1.ReasonDrillRunning, "db-w runs")}
		}), cli.ExitRefused, "the hub refused drill app/db-x of db (DrillRunning): db-w runs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := drillOutcome(tc.d)
			if cli.ExitCodeOf(err) != tc.code || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("drillOutcome = %v (exit %d), want exit %d and %q", err, cli.ExitCodeOf(err), tc.code, tc.want)
			}
		})
	}
}

func TestDrillReportOfAReadinessDrillInProgress(t *testing.T) {
	d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Name: "db-x", Namespace: "app"}, Spec: v1alpha1.DRDrillSpec{DRPCName: "db", TargetCluster: "west",
		KeepFor: &metav1.Duration{Duration: 10 * time.Minute}}}
	d.Status = v1alpha1.DRDrillStatus{Phase: v1alpha1.DrillRunning, Mode: v1alpha1.DrillModeReadiness, TargetCluster: "west", PrimaryCluster: "east",
		StartTime: clitest.Ago(0),
		Readiness: []v1alpha1.DrillCheck{
			{Name: "objects dry-run applied", Result: v1alpha1.DrillResultPassed, Message: "14 objects | 0 refused"},
			{Name: "volume copies", Result: v1alpha1.DrillResultSkipped, Message: "ceph-csi cannot snapshot a mirrored\nsecondary image"},
		}}
	var out bytes.Buffer
	if err := renderDrillReport(&out, d, ReportMarkdown, clitest.TestNow); err != nil {
		t.Fatal(err)
	}
	clitest.MustContain(t, out.String(),
		"# DR drill of app/db: Running (in progress, not final)",
		"| Mode | Readiness: no copy of some volume could be made without stopping replication, so nothing was started;",
		"| RTO | not measured: the sandbox was not Ready and checked |",
		"| Ended | - |",
		"| Asked | target west; no check Job (passes when the workloads are Ready); sandbox kept 10m0s after the result |",
		"No point-in-time copy was reported (a readiness-mode drill copies none).",
		"## Readiness",
		`| objects dry-run applied | Passed | 14 objects \| 0 refused |`,
		"| volume copies | Skipped | ceph-csi cannot snapshot a mirrored secondary image |",
		"## Check\n\nNot reported yet.",
		"## Teardown\n\nThe sandbox has not been torn down yet.",
	)
}

func TestMarkdownFenceOutgrowsTheLog(t *testing.T) {
	cases := map[string]string{"plain": "```", "a fence in the log": "````", "five": "``````"}
	logs := map[string]string{"plain": "ok", "a fence in the log": "```\nsql\n```", "five": "a`````b"}
	for name, want := range cases {
		if got := mdFence(logs[name]); got != want {
			t.Errorf("%s: mdFence = %q, want %q", name, got, want)
		}
	}
}

func TestDrillNamePrefixLeavesRoomForTheSuffix(t *testing.T) {
	if got := drillNamePrefix("db"); got != "db-" {
		t.Errorf("drillNamePrefix(db) = %q", got)
	}
	long := strings.Repeat("a", 250) + "-b"
	if got := drillNamePrefix(long); len(got)+5 > 253 || !strings.HasSuffix(got, "a-") {
		t.Errorf("drillNamePrefix of 252 characters = %q (%d)", got, len(got))
	}
}
