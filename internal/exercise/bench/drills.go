package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/quantile"
	"github.com/drover-io/drover/internal/story"
)

// Drills is the drill mode's measurement: N applications of VolSync-replicated volumes
// (lab-file, policy lab-volsync), one DRDrill of each created at the same moment, so that their
// sandboxes are made, started and torn down side by side on west while the primaries write on
// east.
type Drills struct {
	N, PVCs int
	// Modes counts the drills by mode: every drill Full is the goal (VolSync's points can be
	// copied; a Readiness drill has no RTO).
	Modes map[v1alpha1.DrillMode]int
	// RTOs is how many drills reported an RTO; RTOP50 and RTOMax are the median and the worst of
	// their status.rtoSeconds, RPOP50 and RPOMax of the drills' status.rpoSeconds.
	RTOs                           int
	RTOP50, RTOMax, RPOP50, RPOMax time.Duration
	// ToResults is from the DRDrills' creation to the last drill's result; ToTornDown from the
	// end of their keeps to every drill Passed and its sandbox torn down.
	ToResults, ToTornDown time.Duration
	// ReplicationHealthy counts the drills whose primary's replication stayed healthy
	// (status.primaryReplication Passed); ReplicationNote is what the first other one says.
	ReplicationHealthy int
	ReplicationNote    string
	// Err is the first failure: a drill that failed, was refused or aborted, with its message.
	Err error
}

// drillsLabel names the drill mode's applications and drills for RunLabel.
const drillsLabel = "drills"

// runDrills measures n applications drilled at once: deploy them with VolSync on east, wait
// until every one is Protected with its PVCs, create one DRDrill of each, wait for every result,
// end their keeps and wait until every drill is Passed and torn down. It leaves the applications
// and their drills (history for `drover drill history` and `drover drill report`) in the lab when
// leave says so, and removes them otherwise.
func runDrills(ctx context.Context, o *Options, n, pvcs int, leave bool) Drills {
	res := Drills{N: n, PVCs: pvcs, Modes: map[v1alpha1.DrillMode]int{}}
	env := o.Env
	env.Timeout = stepBase + time.Duration(n)*stepPerApp
	name := fmt.Sprintf("%s-n%d", drillsLabel, n)
	var cases []story.Case
	for i := range n {
		cases = append(cases, story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass,
			Mode: story.SelfContained, Namespace: fmt.Sprintf("bench-%s-%d", name, i), Replicas: int32(min(pvcs, maxPVCs))}) //nolint:gosec // bounded by maxPVCs
	}
	fleet := story.NewFleet(env, cases, lab.East)
	selector := map[string]string{RunLabel: name}
	say(o, "== drills: %d applications (StatefulSets of %d replicas, %s, policy %s) drilled at once on %s", n, pvcs, lab.FileStorageClass, lab.PolicyVolSync, lab.West)
	res.Err = protectForDrills(ctx, o, fleet, selector)
	if res.Err == nil {
		res.Err = drillAll(ctx, o, fleet, selector, &res, env.Timeout)
	}
	if res.Err != nil {
		say(o, "drills FAILED: %v", res.Err)
	}
	if leave {
		say(o, "drills: the applications and their drills stay in the lab (with --keep, see drover drill history db -n bench-%s-0)", name)
		return res
	}
	if err := fleet.Remove(ctx, selector); err != nil && res.Err == nil {
		res.Err = fmt.Errorf("remove: %w", err)
	}
	return res
}

// protectForDrills deploys the applications, waits until each writes on east, protects them and
// waits until every one is Protected with its PVCs at once: the state a drill starts from.
func protectForDrills(ctx context.Context, o *Options, fleet *story.Fleet, selector map[string]string) error {
	began := time.Now()
	if err := fleet.Deploy(ctx); err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	if err := fleet.Snapshot(ctx, lab.East); err != nil {
		return fmt.Errorf("deploy: %w", err)
	}
	say(o, "drills: deployed, every writer writing on east, in %s", time.Since(began).Round(100*time.Millisecond))
	began = time.Now()
	if err := fleet.CreateDRPCs(ctx, selector); err != nil {
		return fmt.Errorf("protect: %w", err)
	}
	d, err := fleet.AwaitAll(ctx, "protect", selector, began, fleet.DataProtected)
	if err != nil {
		return err
	}
	say(o, "drills: every application Protected with its PVCs after %s", d.Round(10*time.Millisecond))
	// The drills are created together: every application must be Protected at that moment, not
	// only once since its protection began.
	began = time.Now()
	if err := fleet.AwaitAllAtOnce(ctx, "protected together", selector, fleet.DataProtected); err != nil {
		return err
	}
	say(o, "drills: every application Protected with its PVCs at the same time %s later", time.Since(began).Round(10*time.Millisecond))
	return nil
}

// drillAll creates the drills at once, each keeping its sandbox longer than the wait for the
// results (so that every sandbox still stands when the last result comes), waits for the
// results, then ends the keeps and waits until every drill is Passed and torn down. A drill
// that failed is torn down with the others, and the mode fails with its message.
func drillAll(ctx context.Context, o *Options, fleet *story.Fleet, selector map[string]string, res *Drills, timeout time.Duration) error {
	began := time.Now()
	if err := fleet.CreateDrills(ctx, selector, 2*timeout); err != nil {
		return fmt.Errorf("drill: %w", err)
	}
	drills, d, err := fleet.AwaitDrills(ctx, "drill", selector, began, func(d *v1alpha1.DRDrill) bool { return d.Status.Result != "" })
	res.ToResults = d
	if err != nil {
		return err
	}
	res.measure(drills)
	say(o, "drills: the last of %d results %s after the DRDrills were created; %s; RTO p50 %s, worst %s (of %d); RPO p50 %s, worst %s",
		len(drills), d.Round(10*time.Millisecond), res.modes(), res.RTOP50, res.RTOMax, res.RTOs, res.RPOP50, res.RPOMax)
	failed := notPassed(drills, func(d *v1alpha1.DRDrill) bool { return d.Status.Result == v1alpha1.DrillResultPassed })
	if failed != nil {
		failed = fmt.Errorf("drill: %w", failed)
	}
	began = time.Now()
	if err := fleet.EndDrillKeeps(ctx, drills); err != nil {
		return errors.Join(failed, fmt.Errorf("teardown: %w", err))
	}
	drills, d, err = fleet.AwaitDrills(ctx, "teardown", selector, began, func(d *v1alpha1.DRDrill) bool { return story.DrillFinal(d.Status.Phase) })
	res.ToTornDown = d
	if err != nil || failed != nil {
		return errors.Join(failed, err)
	}
	res.replication(drills)
	say(o, "drills: every drill ended %s after their keeps ended; the primary's replication stayed healthy in %d of %d",
		d.Round(10*time.Millisecond), res.ReplicationHealthy, len(drills))
	if err := notPassed(drills, func(d *v1alpha1.DRDrill) bool { return d.Status.Phase == v1alpha1.DrillPassed }); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	return nil
}

// notPassed names the drills ok does not hold of, with what each says went wrong.
func notPassed(drills []v1alpha1.DRDrill, ok func(*v1alpha1.DRDrill) bool) error {
	var errs []error
	for i := range drills {
		if d := &drills[i]; !ok(d) {
			errs = append(errs, fmt.Errorf("drill %s/%s is %s (result %s): %s", d.Namespace, d.Name, d.Status.Phase, d.Status.Result, story.DrillMessage(d)))
		}
	}
	return errors.Join(errs...)
}

// measure records the drills' modes and the median and worst of their RTO and RPO.
func (res *Drills) measure(drills []v1alpha1.DRDrill) {
	var rtos, rpos []time.Duration
	for i := range drills {
		st := &drills[i].Status
		res.Modes[st.Mode]++
		if st.RTOSeconds != nil {
			rtos = append(rtos, time.Duration(*st.RTOSeconds)*time.Second)
		}
		if st.RPOSeconds != nil {
			rpos = append(rpos, time.Duration(*st.RPOSeconds)*time.Second)
		}
	}
	res.RTOs = len(rtos)
	res.RTOP50, res.RTOMax = quantile.NearestRank(rtos, 0.5), quantile.NearestRank(rtos, 1)
	res.RPOP50, res.RPOMax = quantile.NearestRank(rpos, 0.5), quantile.NearestRank(rpos, 1)
}

// replication counts the drills whose primary's replication stayed healthy, from their final
// status.
func (res *Drills) replication(drills []v1alpha1.DRDrill) {
	res.ReplicationHealthy, res.ReplicationNote = 0, ""
	for i := range drills {
		p := drills[i].Status.PrimaryReplication
		switch {
		case p != nil && p.Result == v1alpha1.DrillResultPassed:
			res.ReplicationHealthy++
		case res.ReplicationNote != "":
		case p == nil:
			res.ReplicationNote = drills[i].Name + ": not reported"
		default:
			res.ReplicationNote = fmt.Sprintf("%s: %s: %s", drills[i].Name, p.Result, p.Message)
		}
	}
}

// modes says how many drills ran in each mode, and when not every one was Full, says so.
func (res *Drills) modes() string {
	if len(res.Modes) == 0 {
		return "-"
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(res.Modes)) {
		parts = append(parts, fmt.Sprintf("%s %d", orNone(string(m)), res.Modes[m]))
	}
	s := strings.Join(parts, ", ")
	if res.Modes[v1alpha1.DrillModeFull] != res.N {
		s += " (not all Full)"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "no mode"
	}
	return s
}
