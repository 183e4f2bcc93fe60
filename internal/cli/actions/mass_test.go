package actions

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/clitest"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// label sets a label on the DRPlacementControl.
func label(t *testing.T, d *v1alpha1.DRPlacementControl, key, value string) {
	t.Helper()
	cur := clitest.Get(t, d)
	before := cur.DeepCopy()
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[key] = value
	if err := clitest.Hub.Patch(t.Context(), cur, client.MergeFrom(before)); err != nil {
		t.Fatalf("failed to label %s: %v", d.Name, err)
	}
}

func TestMassFailoverSelectsTheApplicationsOfTheLostCluster(t *testing.T) {
	e := clitest.NewEnv(t, "mass-select")
	db, web, cache := e.NewApp(t, "db"), e.NewApp(t, "web"), e.NewApp(t, "cache")
	clitest.SetStatus(t, db, e.Deployed(e.East, e.West))
	clitest.SetStatus(t, web, e.Deployed(e.East, e.West))
	clitest.SetStatus(t, cache, e.Deployed(e.West, e.East))
	label(t, web, "tier", "web")
	o := MassOptions{Namespace: e.NS, Action: v1alpha1.ActionFailover, From: e.East, To: e.West, Now: clitest.ClockAt}

	var out bytes.Buffer
	if err := PlanAll(t.Context(), clitest.Hub, &out, o); err != nil {
		t.Fatalf("plan --all failed: %v", err)
	}
	clitest.MustContain(t, out.String(),
		"Plan: failover 2 applications to mass-select-west (namespace mass-select, current primary mass-select-east)",
		"mass-select  db   mass-select-east  mass-select-west  can start  data loss: up to 8s of writes",
		"mass-select  web  mass-select-east  mass-select-west  can start",
		"2 can start, 0 refused, 0 nothing to do.",
		"Verdict: failover --all can start for 2 applications.")
	if strings.Contains(out.String(), "cache") {
		t.Errorf("the plan selected cache, whose primary is west:\n%s", out.String())
	}

	out.Reset()
	sel := o
	sel.Selector = "tier=web"
	if err := PlanAll(t.Context(), clitest.Hub, &out, sel); err != nil {
		t.Fatalf("plan --all -l tier=web failed: %v", err)
	}
	if !strings.Contains(out.String(), "Plan: failover 1 applications") || strings.Contains(out.String(), " db ") {
		t.Errorf("the selector did not narrow the plan to web:\n%s", out.String())
	}

	sel.Selector = "tier=none"
	_, err := ActAll(t.Context(), clitest.Hub, &out, sel)
	want := "no DRPlacementControl matches (namespace mass-select, selector tier=none, current primary mass-select-east): 0 in the scope before the filter; list them with `drover status -A`"
	if err == nil || err.Error() != want {
		t.Errorf("a selector matching nothing returned %v\nwant: %s", err, want)
	}

	out.Reset()
	if _, err := ActAll(t.Context(), clitest.Hub, &out, o); err != nil {
		t.Fatalf("failover --all failed: %v", err)
	}
	for _, d := range []*v1alpha1.DRPlacementControl{db, web} {
		if got := clitest.Get(t, d); got.Spec.Action != v1alpha1.ActionFailover || got.Spec.FailoverCluster != e.West {
			t.Errorf("failover --all left %s's spec %+v", d.Name, got.Spec)
		}
	}
	if got := clitest.Get(t, cache); got.Spec.Action != v1alpha1.ActionNone {
		t.Errorf("failover --all from east changed cache, which runs on west: %+v", got.Spec)
	}
	clitest.MustContain(t, out.String(), "Asked the hub to failover 2 applications to mass-select-west.",
		"mass-select  db   asked", "2 asked of 2 applications")
}

func TestMassActionRefusesTheWholeBatchUnlessSkipRefused(t *testing.T) {
	e := clitest.NewEnv(t, "mass-refuse")
	db, web, home := e.NewApp(t, "db"), e.NewApp(t, "web"), e.NewApp(t, "home")
	clitest.SetStatus(t, db, e.Deployed(e.West, e.East))
	clitest.SetStatus(t, web, e.Deployed(e.West, e.East), func(d *v1alpha1.DRPlacementControl) {
		clitest.Unprotected(d, v1alpha1.ReasonProgressing, "1 of 3 PVCs has not synced yet")
	})
	clitest.SetStatus(t, home, e.Deployed(e.East, e.West))
	o := MassOptions{Namespace: e.NS, Action: v1alpha1.ActionRelocate, To: e.East, Now: clitest.ClockAt}

	var out bytes.Buffer
	_, err := ActAll(t.Context(), clitest.Hub, &out, o)
	want := "relocate refused for the whole batch: 1 of 3 applications would be refused (listed above with the reason and what to do); " +
		"nothing was changed: fix them, narrow the batch with --selector, or add --skip-refused to relocate the 1 that can start"
	if err == nil || err.Error() != want {
		t.Errorf("relocate --all with a refused application returned %v\nwant: %s", err, want)
	}
	clitest.MustContain(t, out.String(),
		"mass-refuse  db    mass-refuse-west  mass-refuse-east  can start      data loss: none",
		"mass-refuse  home  mass-refuse-east  mass-refuse-east  nothing to do  the application already runs on mass-refuse-east (phase Deployed)",
		"mass-refuse  web   mass-refuse-west  mass-refuse-east  refused        mass-refuse-west's data is not protected (DataProtected False, Progressing: 1 of 3 PVCs has not synced yet)")
	for _, d := range []*v1alpha1.DRPlacementControl{db, web, home} {
		if got := clitest.Get(t, d); got.Spec.Action != v1alpha1.ActionNone {
			t.Errorf("a refused batch changed %s: %+v", d.Name, got.Spec)
		}
	}

	out.Reset()
	o.SkipRefused = true
	if _, err := ActAll(t.Context(), clitest.Hub, &out, o); err != nil {
		t.Fatalf("relocate --all --skip-refused failed: %v", err)
	}
	if got := clitest.Get(t, db); got.Spec.Action != v1alpha1.ActionRelocate || got.Spec.PreferredCluster != e.East {
		t.Errorf("--skip-refused did not relocate db: %+v", got.Spec)
	}
	for _, d := range []*v1alpha1.DRPlacementControl{web, home} {
		if got := clitest.Get(t, d); got.Spec.Action != v1alpha1.ActionNone || got.Spec.PreferredCluster != e.East && d == home {
			t.Errorf("--skip-refused changed %s: %+v", d.Name, got.Spec)
		}
	}
	clitest.MustContain(t, out.String(), "mass-refuse  web   refused", "1 asked, 1 refused, 1 nothing to do of 3 applications")
}

func TestMassFailoverWaitPrintsProgressFailuresAndASummary(t *testing.T) {
	e := clitest.NewEnv(t, "mass-wait")
	apps := []*v1alpha1.DRPlacementControl{e.NewApp(t, "a"), e.NewApp(t, "b"), e.NewApp(t, "c")}
	for _, d := range apps {
		clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	}
	e.SetReachable(t, e.East, false)
	out := &labtest.SyncBuffer{}
	failedOver := func(d *v1alpha1.DRPlacementControl) {
		d.Status.Phase, d.Status.CurrentPrimary, d.Status.ActionTarget, d.Status.Progression = v1alpha1.PhaseFailedOver, e.West, e.West, "DemotingOldPrimary"
		clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the application runs on mass-wait-west"))
	}
	hub := make(chan struct{})
	go func() {
		defer close(hub)
		clitest.WaitFor(t, "the command to patch every spec", func() bool {
			for _, d := range apps {
				if clitest.Get(t, d).Spec.Action != v1alpha1.ActionFailover {
					return false
				}
			}
			return true
		})
		clitest.SetStatus(t, apps[0], clitest.Get(t, apps[0]).Status, failedOver)
		clitest.SetStatus(t, apps[1], clitest.Get(t, apps[1]).Status, func(d *v1alpha1.DRPlacementControl) {
			clitest.SetCond(d, metav1.Condition{Type: v1alpha1.ConditionActionAccepted, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPeerUnreachable,
				Message: "mass-wait-west is unreachable: wait for it", ObservedGeneration: d.Generation, LastTransitionTime: *clitest.Ago(0)})
		})
		clitest.SetStatus(t, apps[2], clitest.Get(t, apps[2]).Status, clitest.InProgress(v1alpha1.PhaseFailingOver, e.West, "PromotingTarget", "not DataReady yet"))
		clitest.WaitFor(t, "a progress line naming c as the slowest", func() bool {
			return strings.Contains(out.String(), "1/3 available, 1 failed, 1 running; slowest: mass-wait/c (")
		})
		clitest.SetStatus(t, apps[2], clitest.Get(t, apps[2]).Status, failedOver)
	}()
	began := time.Now()
	res, err := ActAll(t.Context(), clitest.Hub, out, MassOptions{Namespace: e.NS, Action: v1alpha1.ActionFailover, From: e.East, To: e.West,
		Wait: true, Timeout: 30 * time.Second, PollInterval: 20 * time.Millisecond, ProgressInterval: 200 * time.Millisecond})
	elapsed := time.Since(began)
	<-hub
	if err == nil || !strings.HasPrefix(err.Error(), "the failover of 1 of 3 applications did not complete: mass-wait/b") {
		t.Errorf("failover --all --wait returned %v, want the failure of mass-wait/b", err)
	}
	text := out.String()
	clitest.MustContain(t, text,
		"FAILED mass-wait/b: the hub refused the failover (PeerUnreachable): mass-wait-west is unreachable: wait for it",
		"2/3 available, 1 failed, 0 running",
		"2 Available, 1 failed of 3 applications; the slowest took ")
	// a and c became Available; the failed b is not part of the distribution.
	if len(res.Available) != 2 || slices.Min(res.Available) <= 0 {
		t.Fatalf("the result holds %v, want the two durations of a and c", res.Available)
	}
	clitest.MustContain(t, text, fmt.Sprintf("; half were Available within %s, nine in ten within %s.",
		seconds(slices.Min(res.Available)), seconds(slices.Max(res.Available))))
	if n := strings.Count(text, "FAILED mass-wait/b"); n != 1 {
		t.Errorf("the failure of b was printed %d times, want once:\n%s", n, text)
	}
	for _, row := range []string{
		`mass-wait\s+a\s+Available on mass-wait-west\s+\d+\.\ds\s+-`,
		`mass-wait\s+b\s+failed\s+\d+\.\ds\s+the hub refused the failover`,
		`mass-wait\s+c\s+Available on mass-wait-west\s+\d+\.\ds\s+-`,
	} {
		if !regexp.MustCompile(row).MatchString(text) {
			t.Errorf("the summary lacks a row matching %q:\n%s", row, text)
		}
	}
	// One line per progress interval (and the last), not one per poll.
	progressLines := strings.Count(text, " running")
	if limit := int(elapsed/(200*time.Millisecond)) + 2; progressLines > limit {
		t.Errorf("%d progress lines in %s at a 200ms cadence (at most %d):\n%s", progressLines, elapsed, limit, text)
	}
}

// countingReader counts the full DRPlacementControls a reader returns.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A wait reads in full only the DRPlacementControls that changed since its last poll: the list
// it polls carries their metadata only.
func TestMassWaitReadsOnlyTheDRPCsThatChanged(t *testing.T) {
	e := clitest.NewEnv(t, "mass-poll")
	apps := []*v1alpha1.DRPlacementControl{e.NewApp(t, "a"), e.NewApp(t, "b")}
	var ts []*tracked
	failingOver := func(progression string) func(*v1alpha1.DRPlacementControl) {
		return func(d *v1alpha1.DRPlacementControl) {
			d.Status.Phase, d.Status.ActionTarget, d.Status.Progression = v1alpha1.PhaseFailingOver, e.West, progression
			d.Status.ObservedGeneration = d.Generation
		}
	}
	for _, d := range apps {
		cur := clitest.Get(t, d)
		cur.Spec.Action, cur.Spec.FailoverCluster = v1alpha1.ActionFailover, e.West
		if err := clitest.Hub.Update(t.Context(), cur); err != nil {
			t.Fatal(err)
		}
		clitest.SetStatus(t, d, e.Deployed(e.East, e.West), failingOver("PromotingTarget"))
		cur = clitest.Get(t, d)
		ts = append(ts, &tracked{entry: &entry{a: &cli.App{DRPC: cur}}, follow: true, generation: cur.Generation, asked: time.Now()})
	}
	r := &countingReader{Reader: clitest.Hub}
	o := &MassOptions{Action: v1alpha1.ActionFailover, To: e.West, Namespace: e.NS}
	poll := func() {
		t.Helper()
		if err := pollAll(context.Background(), r, io.Discard, o, ts, time.Hour); err != nil {
			t.Fatal(err)
		}
		for _, tr := range ts {
			if tr.result != "" {
				t.Fatalf("%s judged %s (%s): the wait must still follow it", tr.key(), tr.result, tr.detail)
			}
		}
	}
	poll()
	if r.gets != 2 {
		t.Fatalf("the first poll read %d DRPlacementControls in full, want 2", r.gets)
	}
	poll()
	if r.gets != 2 {
		t.Fatalf("a poll with nothing changed read %d more in full, want 0", r.gets-2)
	}
	clitest.SetStatus(t, apps[1], e.Deployed(e.East, e.West), failingOver("Changed"))
	poll()
	if r.gets != 3 || ts[1].seen.Status.Progression != "Changed" {
		t.Fatalf("after one changed: %d reads in full (want 3), progression %q", r.gets, ts[1].seen.Status.Progression)
	}
}
