package drill

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// waitDrill follows the drill, printing a line for each step as it starts and as it ends and
// one for each change of phase, until the drill ends, the hub is seen not to run, or the wait
// times out. It returns the ended DRDrill.
func waitDrill(ctx context.Context, c client.Reader, w io.Writer, o *Options, key client.ObjectKey) (*v1alpha1.DRDrill, error) {
	timeout := o.WaitTimeout
	if timeout == 0 {
		timeout = cli.OrDefault(o.Timeout, DefaultTimeout) + o.KeepFor + drillTeardownAllowance
	}
	interval, stallAfter := cli.OrDefault(o.PollInterval, cli.DefaultPollInterval), cli.OrDefault(o.StallAfter, cli.DefaultStallAfter)
	start := cli.Now(o.Now)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	f := &drillFollower{seen: map[string]bool{}}
	follow := fmt.Sprintf("follow it with `drover drill report %s %s -n %s`", o.App, key.Name, key.Namespace)
	var last *v1alpha1.DRDrill
	lastErr := ""
	for {
		d := &v1alpha1.DRDrill{}
		err := c.Get(ctx, key, d)
		elapsed := fmt.Sprintf("%.1fs", cli.Now(o.Now).Sub(start).Seconds())
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("DRDrill %s was deleted while waiting for it; the hub tears down the sandbox of a deleted drill", key)
		case err != nil && ctx.Err() == nil:
			if err.Error() != lastErr {
				fmt.Fprintf(w, "%7s  failed to read the DRDrill: %v (retrying)\n", elapsed, err)
				lastErr = err.Error()
			}
		case err == nil:
			last, lastErr = d, ""
			for _, l := range f.lines(d) {
				fmt.Fprintf(w, "%7s  %s\n", elapsed, l)
			}
			if drillFinal(d.Status.Phase) {
				return d, nil
			}
			if took := cli.Now(o.Now).Sub(start); !drillReported(d) && took >= stallAfter {
				return nil, cli.TimedOut(fmt.Errorf("the hub has written nothing on DRDrill %s in %s: %s; the drill stays asked for, and a hub that starts runs it: %s",
					key, took.Round(time.Second), cli.HubHint, follow))
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped waiting for DRDrill %s: %w; the hub goes on: %s", key, ctx.Err(), follow)
		case <-deadline.C:
			where := "the DRDrill could not be read"
			if last != nil {
				where = "it is " + drillPhaseWord(last.Status.Phase)
			}
			return nil, cli.TimedOut(fmt.Errorf("timed out after %s waiting for DRDrill %s: %s; the hub goes on: %s", timeout, key, where, follow))
		case <-ticker.C:
		}
	}
}

// drillReported says whether the hub has written the drill's status.
func drillReported(d *v1alpha1.DRDrill) bool {
	return d.Status.Phase != "" || len(d.Status.Conditions) > 0 || d.Status.ObservedGeneration > 0
}

// drillFollower remembers what --wait printed of a drill, so that each step's start and end
// and each phase are printed once.
type drillFollower struct {
	seen  map[string]bool
	phase *v1alpha1.DrillPhase
}

// lines are the lines the drill's status adds to what was printed: each step started (while it
// runs) and each step finished, in the status's order, then the phase when it changed.
func (f *drillFollower) lines(d *v1alpha1.DRDrill) []string {
	var out []string
	for i, s := range d.Status.Steps {
		id := fmt.Sprintf("%d/%s", i, s.Name)
		switch {
		case s.Finished != nil && !f.seen[id+"/finished"]:
			f.seen[id+"/started"], f.seen[id+"/finished"] = true, true
			out = append(out, fmt.Sprintf("%-20s  %-8s  %6s  %s", s.Name, cli.Dash(string(s.Result)), stepDuration(s), s.Message))
		case s.Finished == nil && !f.seen[id+"/started"]:
			f.seen[id+"/started"] = true
			out = append(out, fmt.Sprintf("%-20s  %-8s  %6s  %s", s.Name, "running", "-", s.Message))
		}
	}
	if p := d.Status.Phase; f.phase == nil || *f.phase != p {
		f.phase = &p
		out = append(out, phaseLine(d))
	}
	return out
}

// phaseLine says where the drill stands as its phase changes.
func phaseLine(d *v1alpha1.DRDrill) string {
	st := d.Status
	switch st.Phase {
	case "", v1alpha1.DrillPending:
		return "Pending: waiting for the hub to accept the drill"
	case v1alpha1.DrillRunning:
		return fmt.Sprintf("Running: sandbox on %s, from the data replicated from %s (untouched)", cli.Dash(st.TargetCluster), cli.Dash(st.PrimaryCluster))
	case v1alpha1.DrillTearingDown:
		return fmt.Sprintf("TearingDown: the result is %s; removing the sandbox", cli.Dash(string(st.Result)))
	}
	return fmt.Sprintf("%s: the drill ended", st.Phase)
}

// stepDuration is how long a finished step took, "-" when unknown.
func stepDuration(s v1alpha1.DrillStep) string {
	if s.Started == nil || s.Finished == nil {
		return "-"
	}
	return s.Finished.Sub(s.Started.Time).Round(time.Second).String()
}

// drillOutcome is nil for a drill that passed, else an error saying why it did not: refused
// (exit 3), failed or aborted.
func drillOutcome(d *v1alpha1.DRDrill) error {
	key := d.Namespace + "/" + d.Name
	accepted := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionDrillAccepted)
	switch d.Status.Phase {
	case v1alpha1.DrillPassed:
		return nil
	case v1alpha1.DrillRefused:
		return cli.Refused(fmt.Errorf("the hub refused drill %s of %s%s", key, d.Spec.DRPCName, conditionReason(accepted)))
	case v1alpha1.DrillAborted:
		return fmt.Errorf("drill %s of %s was aborted%s; its sandbox was torn down", key, d.Spec.DRPCName, conditionReason(accepted))
	}
	return fmt.Errorf("drill %s of %s failed: %s", key, d.Spec.DRPCName, drillFailure(d))
}

// conditionReason is " (Reason): message" of a False condition, or "".
func conditionReason(c *metav1.Condition) string {
	if c == nil || c.Status != metav1.ConditionFalse {
		return ""
	}
	return fmt.Sprintf(" (%s): %s", c.Reason, c.Message)
}

// drillFailure says why a drill failed: the Accepted condition (a timeout), the first step that
// failed, the check, or where to look.
func drillFailure(d *v1alpha1.DRDrill) string {
	if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionDrillAccepted); c != nil && c.Status == metav1.ConditionFalse {
		return fmt.Sprintf("%s: %s", c.Reason, c.Message)
	}
	for _, s := range d.Status.Steps {
		if s.Result == v1alpha1.DrillResultFailed {
			return fmt.Sprintf("step %s failed: %s", s.Name, cli.Dash(s.Message))
		}
	}
	if ch := d.Status.Check; ch != nil && ch.Result == v1alpha1.DrillResultFailed {
		return "the check failed: " + cli.Dash(ch.Message)
	}
	for _, r := range d.Status.Readiness {
		if r.Result == v1alpha1.DrillResultFailed {
			return fmt.Sprintf("readiness check %s failed: %s", r.Name, cli.Dash(r.Message))
		}
	}
	return "the hub gave no reason; read the report (`drover drill report`)"
}
