package drill

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/clitest"
	"github.com/drover-io/drover/internal/lab/labtest"
)

func TestDrillCreatesTheDRDrillAsked(t *testing.T) {
	e := clitest.NewEnv(t, "drill-create")
	clitest.SetStatus(t, e.NewApp(t, "db"), e.Deployed(e.East, e.West))
	check, err := ReadCheckJob(writeFile(t, "check.yaml", checkJobYAML))
	if err != nil {
		t.Fatalf("reading a Job as kubectl prints it failed: %v", err)
	}
	var out bytes.Buffer
	err = Run(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, App: "db", To: e.West, KeepFor: 10 * time.Minute,
		Check: check, CheckSource: "check.yaml", CheckNamespace: "db"})
	if err != nil {
		t.Fatalf("drill failed: %v\n%s", err, out.String())
	}
	drills := drillsOf(t, e, "db")
	if len(drills) != 1 {
		t.Fatalf("drill created %d DRDrills, want 1", len(drills))
	}
	d := drills[0]
	clitest.MustContain(t, out.String(), "Asked the hub for a drill of drill-create/db: DRDrill drill-create/"+d.Name+", on drill-create-west, check: the Job of check.yaml, "+
		"sandbox kept 10m0s after the result, timeout 30m0s.", "Follow it with `drover drill report db "+d.Name+" -n drill-create`.")
	s := d.Spec
	if !strings.HasPrefix(d.Name, "db-") || s.DRPCName != "db" || s.TargetCluster != e.West || s.CheckNamespace != "db" ||
		s.KeepFor == nil || s.KeepFor.Duration != 10*time.Minute || s.Timeout == nil || s.Timeout.Duration != DefaultTimeout {
		t.Errorf("drill created %s with spec %+v", d.Name, s)
	}
	if s.Check == nil || len(s.Check.Template.Spec.Containers) != 1 || s.Check.Template.Spec.Containers[0].Image != "postgres:17" ||
		s.Check.BackoffLimit == nil || *s.Check.BackoffLimit != 2 {
		t.Fatalf("the DRDrill's check is %+v, want the Job's spec", s.Check)
	}
	if s.Check.Selector != nil || len(s.Check.Template.Labels) != 1 || s.Check.Template.Labels["role"] != "check" {
		t.Errorf("the check kept the Job controller's selector %v or labels %v; the sandbox's Job needs its own", s.Check.Selector, s.Check.Template.Labels)
	}

	// A JobSpec file, no --to, no --keep, -o name: the hub chooses the peer and tears down at once.
	setDrillStatus(t, &d, func(st *v1alpha1.DRDrillStatus) { passedDrill(e)(st) })
	spec := "template:\n  spec:\n    restartPolicy: Never\n    containers:\n    - name: c\n      image: busybox\n      command: [\"true\"]\n"
	if check, err = ReadCheckJob(writeFile(t, "spec.yaml", spec)); err != nil {
		t.Fatalf("reading a JobSpec failed: %v", err)
	}
	out.Reset()
	if err := Run(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, App: "db", Check: check, Output: cli.OutputName}); err != nil {
		t.Fatalf("drill -o name failed: %v", err)
	}
	drills = drillsOf(t, e, "db")
	if len(drills) != 2 {
		t.Fatalf("%d drills, want 2", len(drills))
	}
	second := drills[0]
	if second.Name == d.Name {
		second = drills[1]
	}
	if out.String() != "drdrill.drover.io/"+second.Name+"\n" {
		t.Errorf("-o name printed %q", out.String())
	}
	if second.Spec.TargetCluster != "" || second.Spec.KeepFor != nil || second.Spec.Check.Template.Spec.Containers[0].Image != "busybox" {
		t.Errorf("the second drill's spec is %+v", second.Spec)
	}
}

func TestDrillRefusesBadInputAndCreatesNothing(t *testing.T) {
	e := clitest.NewEnv(t, "drill-bad")
	clitest.SetStatus(t, e.NewApp(t, "db"), e.Deployed(e.East, e.West))
	clitest.SetStatus(t, e.NewApp(t, "web"), e.Deployed(e.East, e.West))
	running := createDrill(t, e, "web", "web-running")
	setDrillStatus(t, running, func(st *v1alpha1.DRDrillStatus) { st.Phase = v1alpha1.DrillRunning })
	cases := []struct {
		name string
		o    Options
		code int
		want string
	}{
		{"an unknown application", Options{App: "dbb"}, cli.ExitFailed, `no DRPlacementControl "dbb" in namespace "drill-bad"; it has: db, web`},
		{"a keep past a day", Options{App: "db", KeepFor: 25 * time.Hour}, cli.ExitUsage,
			"--keep 25h0m0s is out of range: the sandbox is kept from 0 (torn down at once) to 24h0m0s after the result"},
		{"a target outside the policy", Options{App: "db", To: "north"}, cli.ExitRefused,
			"--to north is not a cluster of drill-bad/db's policy drill-bad (drill-bad-east, drill-bad-west): name its peer, or leave --to out"},
		{"the primary as target", Options{App: "db", To: e.East}, cli.ExitRefused,
			"--to drill-bad-east is where drill-bad/db runs now: a drill starts a copy beside the replicated data, on the peer; leave --to out or name drill-bad-west"},
		{"another drill running", Options{App: "web"}, cli.ExitRefused,
			"drill web-running of drill-bad/web is Running: one drill of an application runs at a time; wait for it (`drover drill report web web-running -n drill-bad`) " +
				"or delete it (the hub then tears its sandbox down)"},
		{"an unknown output", Options{App: "db", Output: "table"}, cli.ExitUsage, `unknown output format "table"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Namespace = e.NS
			var out bytes.Buffer
			err := Run(t.Context(), clitest.Hub, &out, tc.o)
			if err == nil || cli.ExitCodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("drill returned %v (exit %d), want exit %d and %q", err, cli.ExitCodeOf(err), tc.code, tc.want)
			}
		})
	}
	if n := len(drillsOf(t, e, "db")) + len(drillsOf(t, e, "web")); n != 1 {
		t.Errorf("the refused drills left %d DRDrills, want only web-running", n)
	}
}

func TestReadCheckJobSaysWhatIsWrong(t *testing.T) {
	cases := []struct{ name, content, want string }{
		{"a Pod", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n", "holds a Pod: give a Job, or a Job's spec"},
		{"a misspelt field", "template:\n  spec:\n    containerz: []\n", `unknown field "containerz"`},
		{"no container", "template:\n  spec:\n    restartPolicy: Never\n", "has no container in its pod template"},
		{"not YAML", "kind: [Job\n", "is not YAML or JSON"},
		{"a privileged check", "template:\n  spec:\n    hostPID: true\n    containers:\n    - name: c\n      image: x\n      securityContext:\n        privileged: true\n",
			`the check Job cannot run in the sandbox (Pod Security level baseline): its pod template violates PodSecurity "baseline:latest": host namespaces (hostPID=true), privileged`},
		{"a check of 100 pods", "parallelism: 100\ntemplate:\n  spec:\n    containers:\n    - name: c\n      image: x\n", "parallelism 100 is out of range: at most 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCheckJob(writeFile(t, "check.yaml", tc.content))
			if err == nil || cli.ExitCodeOf(err) != cli.ExitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadCheckJob returned %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
	_, err := ReadCheckJob("/nonexistent/check.yaml")
	if err == nil || cli.ExitCodeOf(err) != cli.ExitUsage || !strings.Contains(err.Error(), "failed to read the check Job: open /nonexistent/check.yaml: no such file or directory") {
		t.Errorf("an unreadable file: %v", err)
	}
}

// playDrillHub waits for the command's DRDrill, then writes each status in turn, each once the
// command printed the line the previous one makes, so that every step is observed.
func playDrillHub(t *testing.T, e clitest.Env, out *labtest.SyncBuffer, statuses []func(*v1alpha1.DRDrillStatus), lines []string) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var drills []v1alpha1.DRDrill
		clitest.WaitFor(t, "the command to create the DRDrill", func() bool { drills = drillsOf(t, e, "db"); return len(drills) == 1 })
		if len(drills) != 1 {
			return
		}
		for i, mutate := range statuses {
			setDrillStatus(t, &drills[0], mutate)
			if i < len(statuses)-1 {
				clitest.WaitFor(t, "the line "+lines[i], func() bool { return strings.Contains(out.String(), lines[i]) })
			}
		}
	}()
	return done
}

func TestDrillWaitPrintsEachStepThenTheReport(t *testing.T) {
	e := clitest.NewEnv(t, "drill-wait")
	clitest.SetStatus(t, e.NewApp(t, "db"), e.Deployed(e.East, e.West))
	full := v1alpha1.DRDrillStatus{}
	passedDrill(e)(&full)
	upTo := func(phase v1alpha1.DrillPhase, steps int, running *v1alpha1.DrillStep) func(*v1alpha1.DRDrillStatus) {
		return func(st *v1alpha1.DRDrillStatus) {
			st.Phase, st.TargetCluster, st.PrimaryCluster, st.StartTime = phase, e.West, e.East, clitest.Ago(0)
			st.Steps = append([]v1alpha1.DrillStep{}, full.Steps[:steps]...)
			if running != nil {
				st.Steps = append(st.Steps, *running)
			}
		}
	}
	copying := step("CopyingVolumes", 0, -1, "", "copying 2 volumes")
	out := &labtest.SyncBuffer{}
	hub := playDrillHub(t, e, out, []func(*v1alpha1.DRDrillStatus){
		upTo(v1alpha1.DrillRunning, 1, &copying),
		upTo(v1alpha1.DrillRunning, 5, nil),
		func(st *v1alpha1.DRDrillStatus) {
			upTo(v1alpha1.DrillTearingDown, 5, nil)(st)
			st.Result = v1alpha1.DrillResultPassed
		},
		passedDrill(e),
	}, []string{"CopyingVolumes        running", "Checking              Passed       12s  job/check succeeded", "TearingDown: the result is Passed"})
	err := Run(t.Context(), clitest.Hub, out, Options{Namespace: e.NS, App: "db", Wait: true, PollInterval: 20 * time.Millisecond,
		WaitTimeout: 20 * time.Second, Now: clitest.ClockAt})
	<-hub
	if err != nil {
		t.Fatalf("drill --wait failed: %v\n%s", err, out.String())
	}
	want := []string{
		"Pending: waiting for the hub to accept the drill",
		"Accepted Passed 0s target drill-wait-west",
		"CopyingVolumes running - copying 2 volumes",
		"Running: sandbox on drill-wait-west, from the data replicated from drill-wait-east (untouched)",
		"CopyingVolumes Passed 21s 2 volumes copied from their latest snapshots",
		"RestoringObjects Passed 4s 14 objects restored",
		"StartingWorkloads Passed 35s statefulset/db Ready",
		"Checking Passed 12s job/check succeeded",
		"TearingDown: the result is Passed; removing the sandbox",
		"TearingDown Passed 23s sandbox removed",
		"Passed: the drill ended",
	}
	if got := clitest.ProgressLines(out.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("--wait printed\n%s\nwant\n%s\nfull output:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out.String())
	}
	clitest.MustContain(t, out.String(), "DR drill of drill-wait/db: Passed", "RTO:              1m12s", "Teardown:\n  Result: Passed.",
		"Primary replication during the drill:\n  Result: Passed. every group sync kept within 20s (twice 10s)")
}

func TestDrillWaitFailsWithTheHubsReason(t *testing.T) {
	cases := []struct {
		name   string
		status func(e clitest.Env) func(*v1alpha1.DRDrillStatus)
		code   int
		want   string
	}{
		{"a failed check", func(e clitest.Env) func(*v1alpha1.DRDrillStatus) {
			return func(st *v1alpha1.DRDrillStatus) {
				passedDrill(e)(st)
				st.Phase, st.Result, st.RTOSeconds = v1alpha1.DrillFailed, v1alpha1.DrillResultFailed, nil
				st.Steps[4].Result, st.Steps[4].Message = v1alpha1.DrillResultFailed, "job/check failed: BackoffLimitExceeded"
				st.Check = &v1alpha1.DrillCheckJob{Result: v1alpha1.DrillResultFailed, Message: "BackoffLimitExceeded", LogTail: "rows in orders: 0"}
			}
		}, cli.ExitFailed, "drill drill-fail-0/db-"},
		{"a refusal", func(e clitest.Env) func(*v1alpha1.DRDrillStatus) {
			return func(st *v1alpha1.DRDrillStatus) {
				st.Phase = v1alpha1.DrillRefused
				st.Conditions = []metav1.Condition{clitest.Cond(v1alpha1.ConditionDrillAccepted, metav1.ConditionFalse, v1alpha1.ReasonNotProtected,
					"db is not Protected: its last sync is stale; drill it once it replicates")}
			}
		}, cli.ExitRefused, " of db (NotProtected): db is not Protected: its last sync is stale; drill it once it replicates"},
		{"an abort", func(e clitest.Env) func(*v1alpha1.DRDrillStatus) {
			return func(st *v1alpha1.DRDrillStatus) {
				st.Phase, st.Result = v1alpha1.DrillAborted, v1alpha1.DrillResultSkipped
				st.Conditions = []metav1.Condition{clitest.Cond(v1alpha1.ConditionDrillAccepted, metav1.ConditionFalse, v1alpha1.ReasonActionOvertook,
					"a failover to drill-fail-2-west was asked for")}
			}
		}, cli.ExitFailed, " of db was aborted (ActionOvertook): a failover to drill-fail-2-west was asked for; its sandbox was torn down"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := clitest.NewEnv(t, "drill-fail-"+string(rune('0'+i)))
			clitest.SetStatus(t, e.NewApp(t, "db"), e.Deployed(e.East, e.West))
			out := &labtest.SyncBuffer{}
			hub := playDrillHub(t, e, out, []func(*v1alpha1.DRDrillStatus){tc.status(e)}, nil)
			err := Run(t.Context(), clitest.Hub, out, Options{Namespace: e.NS, App: "db", Wait: true, PollInterval: 20 * time.Millisecond,
				WaitTimeout: 20 * time.Second, Now: clitest.ClockAt})
			<-hub
			if err == nil || cli.ExitCodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("drill --wait returned %v (exit %d), want exit %d and %q\n%s", err, cli.ExitCodeOf(err), tc.code, tc.want, out.String())
			}
			if tc.code == cli.ExitFailed && i == 0 {
				clitest.MustContain(t, err.Error(), "failed: step Checking failed: job/check failed: BackoffLimitExceeded")
				clitest.MustContain(t, out.String(), "DR drill of drill-fail-0/db: Failed", "rows in orders: 0")
			}
		})
	}
}

func TestDrillWaitNoticesThatNoHubRuns(t *testing.T) {
	e := clitest.NewEnv(t, "drill-stall")
	clitest.SetStatus(t, e.NewApp(t, "db"), e.Deployed(e.East, e.West))
	out := &labtest.SyncBuffer{}
	err := Run(t.Context(), clitest.Hub, out, Options{Namespace: e.NS, App: "db", Wait: true, PollInterval: 20 * time.Millisecond,
		StallAfter: 300 * time.Millisecond})
	if err == nil || cli.ExitCodeOf(err) != cli.ExitTimedOut || !strings.Contains(err.Error(), "the hub has written nothing on DRDrill drill-stall/db-") ||
		!strings.Contains(err.Error(), cli.HubHint) {
		t.Errorf("drill --wait without a hub returned %v (exit %d)", err, cli.ExitCodeOf(err))
	}
}

func TestDrillHistoryListsNewestFirst(t *testing.T) {
	e := clitest.NewEnv(t, "drill-history")
	clitest.SetStatus(t, e.NewApp(t, "db"), e.Deployed(e.East, e.West))
	e.NewApp(t, "web")
	createDrill(t, e, "web", "web-other")
	// Creation times have a resolution of a second: one apart, the order is the drills'.
	oldest := createDrill(t, e, "db", "db-aaaaa")
	setDrillStatus(t, oldest, passedDrill(e))
	time.Sleep(1100 * time.Millisecond)
	failed := createDrill(t, e, "db", "db-bbbbb")
	setDrillStatus(t, failed, func(st *v1alpha1.DRDrillStatus) {
		passedDrill(e)(st)
		st.Phase, st.Result, st.Mode, st.RTOSeconds, st.RPOSeconds = v1alpha1.DrillFailed, v1alpha1.DrillResultFailed, v1alpha1.DrillModeReadiness, nil, int64p(75)
	})
	time.Sleep(1100 * time.Millisecond)
	createDrill(t, e, "db", "db-ccccc")

	var out bytes.Buffer
	if err := History(t.Context(), clitest.Hub, &out, HistoryOptions{Namespace: e.NS, App: "db"}); err != nil {
		t.Fatalf("drill history failed: %v", err)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		rows = append(rows, strings.Join(f[:len(f)-1], " ")) // the age depends on the clock
	}
	want := []string{
		"DRILL PHASE RESULT MODE TARGET RTO RPO",
		"db-ccccc Pending - - - - -",
		"db-bbbbb Failed Failed Readiness drill-history-west - 1m15s",
		"db-aaaaa Passed Passed Full drill-history-west 1m12s 20s",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("drill history printed\n%s\nwant (without AGE)\n%s", out.String(), strings.Join(want, "\n"))
	}

	out.Reset()
	if err := History(t.Context(), clitest.Hub, &out, HistoryOptions{Namespace: e.NS, App: "db", Output: cli.OutputJSON}); err != nil {
		t.Fatalf("drill history -o json failed: %v", err)
	}
	var list struct {
		APIVersion, Kind string
		Items            []v1alpha1.DRDrill
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("-o json printed no List: %v\n%s", err, out.String())
	}
	if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != 3 || list.Items[0].Name != "db-ccccc" || list.Items[0].Kind != "DRDrill" ||
		list.Items[0].APIVersion != "drover.io/v1alpha1" || list.Items[2].Status.RTOSeconds == nil || *list.Items[2].Status.RTOSeconds != 72 {
		t.Errorf("-o json printed %s %s %+v", list.APIVersion, list.Kind, list.Items)
	}

	out.Reset()
	if err := History(t.Context(), clitest.Hub, &out, HistoryOptions{Namespace: e.NS, App: "web", Output: cli.OutputName}); err != nil || out.String() != "drdrill.drover.io/web-other\n" {
		t.Errorf("drill history web -o name: %v, %q", err, out.String())
	}
	err := History(t.Context(), clitest.Hub, &out, HistoryOptions{Namespace: e.NS, App: "dbb"})
	if err == nil || err.Error() != `no DRPlacementControl "dbb" in namespace "drill-history"; it has: db, web` {
		t.Errorf("drill history of an unknown application: %v", err)
	}
}

func TestDrillReportRendersTheRecordForAnAuditor(t *testing.T) {
	e := clitest.NewEnv(t, "drill-report")
	clitest.SetStatus(t, e.NewApp(t, "db"), e.Deployed(e.East, e.West))
	e.NewApp(t, "web")
	other := createDrill(t, e, "web", "web-aaaaa")
	d := createDrill(t, e, "db", "db-aaaaa")
	setDrillStatus(t, d, passedDrill(e))

	var out bytes.Buffer
	if err := Report(t.Context(), clitest.Hub, &out, ReportOptions{Namespace: e.NS, App: "db", Format: ReportMarkdown, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("drill report failed: %v", err)
	}
	clitest.MustContain(t, out.String(),
		"# DR drill of drill-report/db: Passed\n",
		"| Application | drill-report/db (DRPlacementControl) |",
		"| Drill | drill-report/db-aaaaa |",
		"| Primary cluster | drill-report-east (its application and replication are not touched by a drill) |",
		"| Target cluster | drill-report-west (the sandbox) |",
		"| Mode | Full: the workloads started in the sandbox from point-in-time copies of the replicated volumes |",
		"| Started | 2026-11-30 12:04:30 UTC |",
		"| Ended | 2026-11-30 12:06:05 UTC |",
		"| Duration | 1m35s |",
		"| RTO | 1m12s (from the drill's start to every workload of the sandbox Ready and the check passed) |",
		"| RPO | 20s (the worst of 2 volume(s)",
		"| PVC | POINT | POINT TIME | RPO | SANDBOX PVC |",
		"| db/data-db-0 | volsync-db-0-dst-20261130120422 | 2026-11-30 12:04:22 UTC | 8s | db-drill-a1b2c3/data-db-0 |",
		"| db/wal-db-0 | volsync-wal-db-0-dst-20261130120410 | 2026-11-30 12:04:10 UTC | 20s | db-drill-a1b2c3/wal-db-0 |",
		"| db | db-drill-a1b2c3 |",
		"| StartingWorkloads | 2026-11-30 12:04:55 UTC | 35s | Passed | statefulset/db Ready |",
		"| TearingDown | 2026-11-30 12:05:42 UTC | 23s | Passed | sandbox removed |",
		"## Check\n\nResult: Passed. the Job succeeded\n",
		"The log tail: the check container's termination message, as its node reported it",
		"```text\nFrom container check of pod drover-drill-check-x7k2p (exit code 0):\nrows in orders: 1042\nlast order at 2026-11-30T12:04:21Z\n```",
		"## Teardown\n\nResult: Passed. 1 namespace, 2 snapshot contents and 2 holds removed\n",
		"## Primary replication during the drill\n\nResult: Passed. every group sync kept within 20s (twice 10s)\n",
		"Generated by drover at 2026-11-30T12:04:30Z from DRDrill drill-report/db-aaaaa (uid ",
	)

	out.Reset()
	if err := Report(t.Context(), clitest.Hub, &out, ReportOptions{Namespace: e.NS, App: "db", Drill: "db-aaaaa", Now: clitest.ClockAt}); err != nil {
		t.Fatalf("drill report --format text failed: %v", err)
	}
	clitest.MustContain(t, out.String(), "DR drill of drill-report/db: Passed\n", "RTO:              1m12s", "  db/wal-db-0   volsync-wal-db-0-dst-20261130120410",
		"    rows in orders: 1042\n")

	err := Report(t.Context(), clitest.Hub, &out, ReportOptions{Namespace: e.NS, App: "db", Drill: other.Name})
	if err == nil || !strings.Contains(err.Error(), "DRDrill drill-report/web-aaaaa is a drill of web, not of db") {
		t.Errorf("a report of another application's drill: %v", err)
	}
	err = Report(t.Context(), clitest.Hub, &out, ReportOptions{Namespace: e.NS, App: "db", Format: "html"})
	if err == nil || cli.ExitCodeOf(err) != cli.ExitUsage {
		t.Errorf("--format html: %v", err)
	}
}
