package drill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/drillcheck"
	"github.com/drover-io/drover/internal/podsecurity"
)

// Defaults and bounds of `drover drill`.
const (
	// DefaultTimeout is the drill's spec.timeout unless --timeout says otherwise: the hub
	// fails a drill that has no result by then.
	DefaultTimeout = 30 * time.Minute
	// MaxKeep bounds --keep, as the API documents for spec.keepFor.
	MaxKeep = 24 * time.Hour
	// drillTeardownAllowance is what --wait gives the teardown beyond the drill's timeout and
	// keep before it gives up.
	drillTeardownAllowance = 10 * time.Minute
)

// Options are the options of `drover drill APP`.
type Options struct {
	// Namespace and App name the DRPlacementControl whose application is drilled.
	Namespace, App string
	// Check is the Job run in the sandbox once its workloads are Ready; nil for none.
	Check *batchv1.JobSpec
	// CheckSource says where Check was read from, for the messages.
	CheckSource string
	// CheckNamespace is the protected namespace whose sandbox runs the check; empty: the first.
	CheckNamespace string
	// KeepFor is how long the sandbox is kept after the result; at most MaxDrillKeep.
	KeepFor time.Duration
	// To is the cluster of the sandbox; empty: the peer of the current primary.
	To string
	// Timeout is the drill's spec.timeout; 0 means DefaultDrillTimeout.
	Timeout time.Duration
	// Wait follows the drill until it ends, printing its steps and then its report.
	Wait bool
	// WaitTimeout bounds Wait; 0 means Timeout + KeepFor + a teardown allowance.
	WaitTimeout time.Duration
	// PollInterval is how often Wait reads the DRDrill; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// StallAfter ends Wait when the hub has written nothing on the drill by then (no hub runs);
	// 0 means DefaultStallAfter.
	StallAfter time.Duration
	// Output is "" (text), name, json, yaml or jsonpath=TEMPLATE: the DRDrill once created,
	// or with Wait once ended.
	Output string
	// Log receives the text when Output prints the object; nil discards it.
	Log io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate checks the options that do not need the cluster.
func (o *Options) Validate() error {
	if err := cli.CheckOutput(o.Output, cli.OutputName, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	if o.App == "" {
		return cli.Usage(errors.New("name the application to drill: its DRPlacementControl's name"))
	}
	if o.KeepFor < 0 || o.KeepFor > MaxKeep {
		return cli.Usage(fmt.Errorf("--keep %s is out of range: the sandbox is kept from 0 (torn down at once) to %s after the result", o.KeepFor, MaxKeep))
	}
	if o.Timeout < 0 || o.WaitTimeout < 0 || o.PollInterval < 0 || o.StallAfter < 0 {
		return cli.Usage(errors.New("--timeout must not be negative"))
	}
	return nil
}

// ReadCheckJob reads the check of a drill from a YAML (or JSON) file holding a Job or a Job's
// spec. The selector and the labels the Job controller set on a Job read back from a cluster
// are dropped: the sandbox's Job gets its own.
func ReadCheckJob(path string) (*batchv1.JobSpec, error) {
	data, err := os.ReadFile(path) //nolint:gosec // a file the person names
	if err != nil {
		return nil, cli.Usage(fmt.Errorf("failed to read the check Job: %w", err))
	}
	return parseCheckJob(path, data)
}

// parseCheckJob decodes a Job or a JobSpec, refusing unknown fields.
func parseCheckJob(path string, data []byte) (*batchv1.JobSpec, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return nil, cli.Usage(fmt.Errorf("the check Job %s is not YAML or JSON: %w", path, err))
	}
	spec := &batchv1.JobSpec{}
	switch head.Kind {
	case "Job":
		job := &batchv1.Job{}
		if err := yaml.UnmarshalStrict(data, job); err != nil {
			return nil, cli.Usage(fmt.Errorf("the check Job %s does not decode as a Job: %w", path, err))
		}
		spec = &job.Spec
	case "":
		if err := yaml.UnmarshalStrict(data, spec); err != nil {
			return nil, cli.Usage(fmt.Errorf("the check Job %s does not decode as a Job's spec (a file with kind: Job is read as a Job): %w", path, err))
		}
	default:
		return nil, cli.Usage(fmt.Errorf("the check Job %s holds a %s: give a Job, or a Job's spec", path, head.Kind))
	}
	if len(spec.Template.Spec.Containers) == 0 {
		return nil, cli.Usage(fmt.Errorf("the check Job %s has no container in its pod template: the check needs one that exits 0 when the data is right", path))
	}
	spec.Selector, spec.ManualSelector = nil, nil
	for _, l := range []string{"controller-uid", "job-name", batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		delete(spec.Template.Labels, l)
	}
	// The hub judges the check by the sandbox's level (restricted unless an administrator says
	// baseline); what no sandbox runs is refused here already.
	if problems := drillcheck.Problems(spec, podsecurity.Floor); len(problems) > 0 {
		return nil, cli.Usage(fmt.Errorf("the check Job %s: %s", path, drillcheck.Message(problems, podsecurity.Floor)))
	}
	return spec, nil
}

// Run asks the hub for a drill of an application: it checks what the CLI can (the
// application exists, --to is a cluster of its policy and not its primary, no other drill of
// it runs), creates the DRDrill and, with Wait, prints its steps as they happen and its report,
// failing when the drill fails, is refused or aborted. With Output it then prints the DRDrill.
func Run(ctx context.Context, c client.Client, w io.Writer, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	text := cli.ProgressWriter(w, o.Output, o.Log)
	d, err := startDrill(ctx, c, text, &o)
	if err != nil {
		return err
	}
	var outcome error
	if o.Wait {
		if d, err = waitDrill(ctx, c, text, &o, client.ObjectKeyFromObject(d)); err != nil {
			return err
		}
		if err := renderDrillReport(text, d, ReportText, cli.Now(o.Now)); err != nil {
			return err
		}
		outcome = drillOutcome(d)
	}
	switch {
	case o.Output == cli.OutputName:
		err = cli.WriteNames(w, "DRDrill", []string{d.Name})
	case o.Output != "":
		err = cli.WriteStructured(w, o.Output, drillObject(d))
	}
	return errors.Join(outcome, err)
}

// startDrill checks the application and creates its DRDrill.
func startDrill(ctx context.Context, c client.Client, w io.Writer, o *Options) (*v1alpha1.DRDrill, error) {
	a, err := cli.LoadApp(ctx, c, o.Namespace, o.App)
	if err != nil {
		return nil, err
	}
	drills, err := listDrills(ctx, c, o.Namespace, o.App)
	if err != nil {
		return nil, err
	}
	if err := drillRefusal(a, o.To, drills); err != nil {
		return nil, cli.Refused(err)
	}
	d := newDrill(o)
	key := o.Namespace + "/" + o.App
	if err := c.Create(ctx, d); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return nil, cli.Refused(fmt.Errorf("the API server refused the drill of %s: %w", key, err))
		}
		return nil, fmt.Errorf("failed to create a DRDrill of %s: %w", key, err)
	}
	target := "the peer of its primary"
	if o.To != "" {
		target = o.To
	}
	check := "none (it passes when the workloads are Ready)"
	if o.Check != nil {
		check = "the Job of " + cli.Dash(o.CheckSource)
	}
	keep := "torn down at once after the result"
	if o.KeepFor > 0 {
		keep = "kept " + o.KeepFor.String() + " after the result"
	}
	fmt.Fprintf(w, "Asked the hub for a drill of %s: DRDrill %s/%s, on %s, check: %s, sandbox %s, timeout %s.\n",
		key, d.Namespace, d.Name, target, check, keep, d.Spec.Timeout.Duration)
	if !o.Wait {
		fmt.Fprintf(w, "Follow it with `drover drill report %s %s -n %s`.\n", o.App, d.Name, o.Namespace)
	}
	return d, nil
}

// newDrill is the DRDrill the options ask for, named after the application with a suffix the
// API server chooses.
func newDrill(o *Options) *v1alpha1.DRDrill {
	d := &v1alpha1.DRDrill{
		ObjectMeta: metav1.ObjectMeta{GenerateName: drillNamePrefix(o.App), Namespace: o.Namespace},
		Spec: v1alpha1.DRDrillSpec{
			DRPCName: o.App, TargetCluster: o.To, Check: o.Check, CheckNamespace: o.CheckNamespace,
			Timeout: &metav1.Duration{Duration: cli.OrDefault(o.Timeout, DefaultTimeout)},
		},
	}
	if o.KeepFor > 0 {
		d.Spec.KeepFor = &metav1.Duration{Duration: o.KeepFor}
	}
	return d
}

// drillNamePrefix is the generateName of an application's drills: its name and a dash, cut so
// that the API server's five characters fit in a name.
func drillNamePrefix(app string) string {
	const room = 253 - 5 - 1
	if len(app) > room {
		app = strings.TrimRight(app[:room], "-.")
	}
	return app + "-"
}

// drillRefusal is why the hub would refuse the drill, checked before asking: --to outside the
// policy or the primary itself, or another drill of the application running. Nil when none.
func drillRefusal(a *cli.App, to string, drills []v1alpha1.DRDrill) error {
	d := a.DRPC
	key := d.Namespace + "/" + d.Name
	for _, other := range drills {
		if !drillFinal(other.Status.Phase) {
			return fmt.Errorf("drill %s of %s is %s: one drill of an application runs at a time; wait for it "+
				"(`drover drill report %s %s -n %s`) or delete it (the hub then tears its sandbox down)",
				other.Name, key, drillPhaseWord(other.Status.Phase), d.Name, other.Name, d.Namespace)
		}
	}
	if to == "" {
		return nil
	}
	if a.Policy != nil && !slices.Contains(a.Policy.Spec.DRClusters, to) {
		return fmt.Errorf("--to %s is not a cluster of %s's policy %s (%s): name its peer, or leave --to out",
			to, key, a.Policy.Name, strings.Join(a.Policy.Spec.DRClusters, ", "))
	}
	if to == d.Status.CurrentPrimary {
		return fmt.Errorf("--to %s is where %s runs now: a drill starts a copy beside the replicated data, on the peer; "+
			"leave --to out or name %s", to, key, cli.Dash(a.PeerOf(to)))
	}
	return nil
}

// drillFinal says whether a drill has ended: passed, failed, aborted or refused.
func drillFinal(p v1alpha1.DrillPhase) bool {
	switch p {
	case v1alpha1.DrillPassed, v1alpha1.DrillFailed, v1alpha1.DrillAborted, v1alpha1.DrillRefused:
		return true
	}
	return false
}

// drillPhaseWord is a drill's phase in a sentence: "Pending" while the hub has written none.
func drillPhaseWord(p v1alpha1.DrillPhase) string {
	if p == "" {
		return string(v1alpha1.DrillPending)
	}
	return string(p)
}

// drillObject is a copy of the DRDrill as kubectl prints it: with its kind and apiVersion,
// without its managed fields.
func drillObject(d *v1alpha1.DRDrill) *v1alpha1.DRDrill {
	d = d.DeepCopy()
	d.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRDrill"))
	d.ManagedFields = nil
	return d
}
