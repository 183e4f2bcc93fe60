package story

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/pgsql"
	"github.com/drover-io/drover/internal/lab/records"
)

// drillKeep is how long a story's drill keeps its sandbox once it has its result: long enough
// to read the copies' records, which the step does before it shortens the keep to end the drill.
const drillKeep = 10 * time.Minute

// Drill runs a DR drill of the application on the peer of cluster, where it runs, while its
// writers go on writing there: it waits for the drill's result, reads the records of the
// sandbox's copies (a Full drill: each a gap-free prefix of the primary's, no record the primary
// had not written), ends the keep, and waits until the drill is Passed and its sandbox gone,
// with the primary's writers still writing. Kept is the records seen in the sandbox, LossBound
// the drill's RPO and Duration its RTO. A drill of the Postgres workload is checked by its own
// check Job instead (PostgresCheck: PostgreSQL answers in the sandbox and pgbench's invariant
// holds there): Kept is the transactions it counted in the sandbox's copy, Check its verdict.
func (r *Run) Drill(ctx context.Context, cluster string) Step {
	target := r.other(cluster)
	step := Step{Action: "drill", From: cluster, To: target}
	ws, _, err := r.writing(ctx, cluster)
	if err == nil && r.c.Workload.isPostgres() {
		// A point taken after pgbench committed, so that the check has transactions to sum.
		_, err = r.syncAfter(ctx, cluster, time.Now())
	}
	if err != nil {
		step.Err = err
		return r.record(step)
	}
	d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: r.key.Namespace, GenerateName: r.key.Name + "-"},
		Spec: v1alpha1.DRDrillSpec{DRPCName: r.key.Name, KeepFor: &metav1.Duration{Duration: drillKeep}}}
	if r.c.Workload.isPostgres() {
		pg, err := pgsql.Find()
		if err != nil {
			step.Err = err
			return r.record(step)
		}
		d.Spec.Check = &PostgresCheck(pg.BinDir).Spec
		r.say("drill: DRDrill of %s, its sandbox on %s, checked by a Job that runs pg_isready and pgbench's invariant there; pgbench goes on writing on %s", r.key, target, cluster)
	} else {
		r.say("drill: DRDrill of %s, its sandbox on %s; the writers go on writing on %s", r.key, target, cluster)
	}
	key, d, err := r.askDrill(ctx, d)
	if err != nil {
		step.Err = err
		return r.record(step)
	}
	step.Duration, step.LossBound = seconds(d.Status.RTOSeconds), seconds(d.Status.RPOSeconds)
	if r.c.Mode == Placement && d.Status.Mode == v1alpha1.DrillModeFull {
		return r.record(r.placementDrill(ctx, step, key, d))
	}
	if d.Status.Mode == v1alpha1.DrillModeReadiness {
		step.Action, step.Duration = "drill (readiness)", time.Since(d.Status.StartTime.Time).Round(time.Second)
		step.Note = readinessNote(d)
		r.say("drill: %s in Readiness mode (no copy of these volumes can be made while they replicate): %s", d.Status.Result, step.Note)
	} else {
		r.say("drill: %s in %s mode, RTO %s, RPO %s", d.Status.Result, d.Status.Mode, step.Duration, step.LossBound)
	}
	if r.c.Workload.isPostgres() {
		err = pgDrillCheck(&step, d)
		r.say("drill: %s", step.Check)
	} else {
		step.Kept, err = r.drillRecords(ctx, cluster, target, d, ws)
	}
	step.Err = errors.Join(err, r.endDrill(ctx, key, v1alpha1.DrillPassed))
	if step.Err == nil {
		_, _, step.Err = r.writing(ctx, cluster)
	}
	return r.record(step)
}

// placementDrill judges a Full drill of an application in placement mode: drover captures none
// of its objects there (its GitOps tool restores them), so the drill has nothing to start the
// application from and must end Failed, naming spec.kubeObjectProtection, which makes drover
// capture them; the sandbox is then torn down as any other. (A readiness drill passes there,
// its dry run of the objects Skipped for the same reason.)
func (r *Run) placementDrill(ctx context.Context, step Step, key client.ObjectKey, d *v1alpha1.DRDrill) Step {
	msg := DrillMessage(d)
	r.say("drill: %s in placement mode: %s", d.Status.Result, msg)
	step.Check = "nothing to start: placement mode, no capture of the objects (spec.kubeObjectProtection)"
	if d.Status.Result != v1alpha1.DrillResultFailed || !strings.Contains(msg, "spec.kubeObjectProtection") {
		step.Err = fmt.Errorf("a drill in placement mode without spec.kubeObjectProtection must fail naming it; it is %s: %s", d.Status.Result, msg)
	}
	step.Err = errors.Join(step.Err, r.endDrill(ctx, key, v1alpha1.DrillFailed))
	return step
}

// drillRecords reads the records of the writers' copies in a Full drill's sandbox on target
// (sandboxRecords), after the primary's on cluster; a readiness drill copied none.
func (r *Run) drillRecords(ctx context.Context, cluster, target string, d *v1alpha1.DRDrill, ws []writer) (uint64, error) {
	handles, err := r.boundVolumes(ctx, cluster, ws)
	if err != nil {
		return 0, err
	}
	wrote, err := r.reports(cluster, handles)
	if err != nil || d.Status.Mode != v1alpha1.DrillModeFull {
		return 0, err
	}
	return r.sandboxRecords(ctx, target, d, ws, wrote)
}

// pgDrillCheck reads the result of the Postgres check (PostgresCheck) of a Full drill into step:
// the transactions the check counted in the sandbox's copy, and its verdict. A readiness drill
// started nothing to check.
func pgDrillCheck(step *Step, d *v1alpha1.DRDrill) error {
	if d.Status.Mode != v1alpha1.DrillModeFull {
		step.Check = "check Job not run: a readiness drill starts nothing"
		return nil
	}
	c := d.Status.Check
	if c == nil {
		step.Check = "no check recorded"
		return errors.New("the drill recorded no result of its check Job")
	}
	verdict := lastLine(c.LogTail)
	if c.Result != v1alpha1.DrillResultPassed {
		step.Check = fmt.Sprintf("check Job %s: %s", c.Result, verdict)
		return fmt.Errorf("the check Job %s: %s; %s", c.Result, c.Message, verdict)
	}
	n, err := postgresCheckTransactions(c.LogTail)
	if err != nil {
		step.Check = fmt.Sprintf("check Job %s: %s", c.Result, verdict)
		return err
	}
	step.Kept, step.Check = n, fmt.Sprintf("check Job Passed: pg_isready, pgbench's invariant over %d transactions", n)
	return nil
}

// lastLine is the last line of s that is not empty.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// sandboxRecords reads the records of each of the writers' PVCs copied into the drill's sandbox
// on target, checks each against what the primary had written (wrote, read after the copies
// were made), and returns how many records the copies hold.
func (r *Run) sandboxRecords(ctx context.Context, target string, d *v1alpha1.DRDrill, ws []writer, wrote map[string]records.Report) (uint64, error) {
	sandbox := map[string]string{}
	for _, n := range d.Status.Namespaces {
		sandbox[n.Source] = n.Sandbox
	}
	var seen uint64
	var errs []error
	for _, w := range ws {
		for _, pvc := range w.pvcs {
			copied, err := r.sandboxVolume(ctx, target, sandbox[r.c.Namespace], pvc)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			kept, _ := copied.Writer(w.id)
			before, _ := wrote[pvc].Writer(w.id)
			seen += kept.LastSeq
			switch {
			case len(kept.Gaps) > 0:
				errs = append(errs, fmt.Errorf("%s: records of %s missing in the sandbox's copy: %s", pvc, w.id, records.FormatRanges(kept.Gaps)))
			case kept.LastSeq > before.LastSeq:
				errs = append(errs, fmt.Errorf("%s: the sandbox's copy holds record %d of %s, which the primary had not written (it wrote up to %d)", pvc, kept.LastSeq, w.id, before.LastSeq))
			}
		}
	}
	return seen, errors.Join(errs...)
}

// sandboxVolume reads the records of the sandbox's copy of a PVC.
func (r *Run) sandboxVolume(ctx context.Context, cluster, ns, pvc string) (records.Report, error) {
	cl := r.env.Clusters[cluster]
	claim := &corev1.PersistentVolumeClaim{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, claim); err != nil {
		return records.Report{}, fmt.Errorf("the sandbox's copy of %s on %s: %w", pvc, cluster, err)
	}
	pv := &corev1.PersistentVolume{}
	if err := cl.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
		return records.Report{}, fmt.Errorf("the volume of the sandbox's copy %s/%s on %s: %w", ns, pvc, cluster, err)
	}
	if pv.Spec.CSI == nil {
		return records.Report{}, fmt.Errorf("the volume %s of the sandbox's copy %s/%s on %s is not a CSI volume", pv.Name, ns, pvc, cluster)
	}
	return r.report(cluster, pv.Spec.CSI.VolumeHandle)
}

// drillTries is how many drills askDrill creates, at most, while the hub refuses them because
// the application is not Protected.
const drillTries = 3

// askDrill creates a drill from template and waits for its result. A drill the hub refuses
// because the application is not Protected (a sync late on a loaded machine) is asked again once
// the DRPlacementControl is Protected, as the refusal's message tells a user to do.
func (r *Run) askDrill(ctx context.Context, template *v1alpha1.DRDrill) (client.ObjectKey, *v1alpha1.DRDrill, error) {
	for try := 1; ; try++ {
		d := template.DeepCopy()
		if err := r.env.Hub.Create(ctx, d); err != nil {
			return client.ObjectKey{}, nil, fmt.Errorf("failed to create the DRDrill: %w", err)
		}
		key := client.ObjectKeyFromObject(d)
		d, err := r.drillWhen(ctx, key, "its result", func(d *v1alpha1.DRDrill) bool { return d.Status.Result != "" })
		refused := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionDrillAccepted)
		if err == nil || d.Status.Phase != v1alpha1.DrillRefused || refused == nil ||
			refused.Reason != v1alpha1.ReasonNotProtected || try == drillTries {
			return key, d, err
		}
		r.say("drill: %s refused: %s; asking again once the application is Protected", key.Name, refused.Message)
		if err := r.await(ctx, "Protected", func(d *v1alpha1.DRPlacementControl) bool { return isTrue(d, v1alpha1.ConditionProtected) }); err != nil {
			return key, d, err
		}
	}
}

// endDrill shortens the drill's keep to nothing and waits until it ends in phase want, torn down.
func (r *Run) endDrill(ctx context.Context, key client.ObjectKey, want v1alpha1.DrillPhase) error {
	if err := endKeep(ctx, r.env.Hub, key); err != nil {
		return err
	}
	d, err := r.drillWhen(ctx, key, "its end", func(d *v1alpha1.DRDrill) bool { return DrillFinal(d.Status.Phase) })
	if err != nil {
		return err
	}
	if d.Status.Phase != want {
		return fmt.Errorf("the drill ended %s: %s", d.Status.Phase, DrillMessage(d))
	}
	teardown := "no teardown recorded"
	if d.Status.Teardown != nil {
		teardown = d.Status.Teardown.Message
	}
	r.say("drill: %s and torn down (%s)", d.Status.Phase, teardown)
	return nil
}

// endKeep shortens a drill's keep to nothing: the hub tears its sandbox down now.
func endKeep(ctx context.Context, hub client.Client, key client.ObjectKey) error {
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"keepFor":"0s"}}`))
	if err := hub.Patch(ctx, &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, patch); err != nil {
		return fmt.Errorf("failed to end the keep of drill %s: %w", key, err)
	}
	return nil
}

// drillWhen waits until done holds of the drill; a drill that ends before fails the wait.
func (r *Run) drillWhen(ctx context.Context, key client.ObjectKey, what string, done func(*v1alpha1.DRDrill) bool) (*v1alpha1.DRDrill, error) {
	d := &v1alpha1.DRDrill{}
	var ended error
	err := r.poll(ctx, pollInterval, func(ctx context.Context) error {
		if err := r.env.Hub.Get(ctx, key, d); err != nil {
			return err
		}
		if !done(d) && DrillFinal(d.Status.Phase) {
			ended = fmt.Errorf("the drill ended %s before %s: %s", d.Status.Phase, what, DrillMessage(d))
			return nil
		}
		if !done(d) {
			return fmt.Errorf("drill %s: waiting for %s: %s, step %s", key.Name, what, d.Status.Phase, lastStep(d))
		}
		return nil
	})
	return d, errors.Join(err, ended)
}

// DrillFinal says whether a drill's phase is final: Passed, Failed, Aborted or Refused.
func DrillFinal(p v1alpha1.DrillPhase) bool {
	switch p {
	case v1alpha1.DrillPassed, v1alpha1.DrillFailed, v1alpha1.DrillAborted, v1alpha1.DrillRefused:
		return true
	}
	return false
}

func lastStep(d *v1alpha1.DRDrill) string {
	if n := len(d.Status.Steps); n > 0 {
		return d.Status.Steps[n-1].Name
	}
	return "-"
}

// DrillMessage is what the drill says went wrong: its Accepted condition, its check, or its
// last failed step.
func DrillMessage(d *v1alpha1.DRDrill) string {
	for _, c := range d.Status.Conditions {
		if c.Status == metav1.ConditionFalse {
			return c.Reason + ": " + c.Message
		}
	}
	if d.Status.Check != nil && d.Status.Check.Result == v1alpha1.DrillResultFailed {
		return "check: " + d.Status.Check.Message
	}
	for _, s := range d.Status.Steps {
		if s.Result == v1alpha1.DrillResultFailed {
			return s.Name + ": " + s.Message
		}
	}
	return "no reason given"
}

// readinessNote counts what a readiness drill checked: passed, and not checkable.
func readinessNote(d *v1alpha1.DRDrill) string {
	count := map[v1alpha1.DrillResult]int{}
	for _, c := range d.Status.Readiness {
		count[c.Result]++
	}
	return fmt.Sprintf("%d checks passed, %d failed, %d not possible", count[v1alpha1.DrillResultPassed],
		count[v1alpha1.DrillResultFailed], count[v1alpha1.DrillResultSkipped])
}

func seconds(s *int64) time.Duration {
	if s == nil {
		return 0
	}
	return time.Duration(*s) * time.Second
}
