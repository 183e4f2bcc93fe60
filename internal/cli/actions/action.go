package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// Defaults of the action verbs.
const (
	// DefaultTimeout bounds --wait.
	DefaultTimeout = 10 * time.Minute
)

// ActionOptions are the options of `drover failover` and `drover relocate`.
type ActionOptions struct {
	// Namespace and App name the DRPlacementControl.
	Namespace, App string
	// Action is Failover or Relocate.
	Action v1alpha1.DRAction
	// To is the cluster to move the application to.
	To string
	// Wait follows the action until it completes, fails or Timeout passes.
	Wait bool
	// Timeout bounds Wait; 0 means DefaultTimeout.
	Timeout time.Duration
	// PollInterval is how often Wait reads the DRPlacementControl; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// StallAfter ends Wait when the hub has not observed the change by then (no hub runs);
	// 0 means DefaultStallAfter.
	StallAfter time.Duration
	// Output is "" (progress lines), name, json, yaml or jsonpath=TEMPLATE: the
	// DRPlacementControl as it stands once asked, or with Wait once done.
	Output string
	// Log receives the progress lines when Output prints the object; nil discards them.
	Log io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate checks the options that do not need the cluster.
func (o *ActionOptions) Validate() error {
	if err := cli.CheckOutput(o.Output, cli.OutputName, cli.OutputJSON, cli.OutputYAML); err != nil {
		return err
	}
	if err := validateAction(o.Action, o.App, o.To); err != nil {
		return err
	}
	if o.Timeout < 0 || o.PollInterval < 0 || o.StallAfter < 0 {
		return cli.Usage(errors.New("--timeout must not be negative"))
	}
	return nil
}

// Act asks the hub for a failover or a relocation: it checks the preconditions the hub would
// check (refusing with what to do), merge-patches the DRPlacementControl's spec (action and
// failoverCluster or preferredCluster) and, with Wait, prints a line on every change of the
// phase, the step or what the hub waits for, until the application is available on the target.
// With Output it then prints the DRPlacementControl (the lines go to Log).
func Act(ctx context.Context, c client.Client, w io.Writer, o ActionOptions) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := act(ctx, c, cli.ProgressWriter(w, o.Output, o.Log), o); err != nil || o.Output == "" {
		return err
	}
	return printActed(ctx, c, w, o.Output, client.ObjectKey{Namespace: o.Namespace, Name: o.App})
}

// act is Act without its output.
func act(ctx context.Context, c client.Client, w io.Writer, o ActionOptions) error {
	a, err := cli.LoadApp(ctx, c, o.Namespace, o.App)
	if err != nil {
		return err
	}
	verb := strings.ToLower(string(o.Action))
	p := preview(a, o.Action, o.To, cli.Now(o.Now))
	key := a.DRPC.Namespace + "/" + a.DRPC.Name
	if p.Noop {
		fmt.Fprintf(w, "Nothing to ask: %s.\n", p.NoopReason)
		if !o.Wait || cli.Settled(a.DRPC.Status.Phase) {
			return nil
		}
		return wait(ctx, c, w, o, a.DRPC.Generation)
	}
	if err := p.Refusal(); err != nil {
		return cli.Refused(err)
	}
	for _, c := range p.Warnings() {
		fmt.Fprintf(w, "Warning: %s: %s\n", c.Name, c.Detail)
	}
	field, err := askHub(ctx, c, a.DRPC, o.Action, o.To)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Asked the hub to %s %s from %s to %s (spec.action %s, spec.%s %s). Expected data loss: %s.\n",
		verb, key, cli.Dash(p.From), o.To, o.Action, field, o.To, p.Loss)
	if !o.Wait {
		fmt.Fprintf(w, "Follow it with `drover status %s -n %s`.\n", a.DRPC.Name, a.DRPC.Namespace)
		return nil
	}
	return wait(ctx, c, w, o, a.DRPC.Generation)
}

// askHub merge-patches the DRPlacementControl's spec with the action and its cluster
// (failoverCluster for a failover, preferredCluster for a relocation) and returns the field
// it set.
func askHub(ctx context.Context, c client.Client, d *v1alpha1.DRPlacementControl, action v1alpha1.DRAction, to string) (string, error) {
	key := d.Namespace + "/" + d.Name
	field := "failoverCluster"
	if action == v1alpha1.ActionRelocate {
		field = "preferredCluster"
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"action": action, field: to}})
	if err != nil {
		return "", fmt.Errorf("failed to encode the patch: %w", err)
	}
	if err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return "", cli.Refused(fmt.Errorf("the API server refused the %s of %s: %w", strings.ToLower(string(action)), key, err))
		}
		return "", fmt.Errorf("failed to patch DRPlacementControl %s: %w", key, err)
	}
	return field, nil
}

// wait follows the action, printing a line on every change, until it is done, fails or times out.
func wait(ctx context.Context, c client.Reader, w io.Writer, o ActionOptions, generation int64) error {
	timeout, interval, stallAfter := cli.OrDefault(o.Timeout, DefaultTimeout), cli.OrDefault(o.PollInterval, cli.DefaultPollInterval), cli.OrDefault(o.StallAfter, cli.DefaultStallAfter)
	start := cli.Now(o.Now)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.App}
	verb := strings.ToLower(string(o.Action))
	var last *progress
	var lastSeen *v1alpha1.DRPlacementControl
	lastErr := ""
	for {
		d := &v1alpha1.DRPlacementControl{}
		err := c.Get(ctx, key, d)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("DRPlacementControl %s was deleted while waiting for the %s", key, verb)
		case err != nil && ctx.Err() == nil:
			// A read can fail while the API server restarts; the timeout bounds the retries.
			if err.Error() != lastErr {
				fmt.Fprintf(w, "%7s  failed to read the DRPlacementControl: %v (retrying)\n", fmt.Sprintf("%.1fs", cli.Now(o.Now).Sub(start).Seconds()), err)
				lastErr = err.Error()
			}
		case err == nil:
			lastSeen, lastErr = d, ""
			p := progressOf(d)
			if last == nil || p != *last {
				fmt.Fprintln(w, progressLine(cli.Now(o.Now).Sub(start), p))
				last = &p
			}
			done, err := outcome(d, &o, generation)
			if err != nil {
				return err
			}
			if elapsed := cli.Now(o.Now).Sub(start); !done && elapsed >= stallAfter && !observed(d, generation) {
				return cli.TimedOut(fmt.Errorf("the hub has not observed the %s of %s to %s in %s (no condition is stamped with generation %d): %s; "+
					"the spec keeps asking for it, and a hub that starts acts on it: follow it with `drover status %s -n %s`",
					verb, key, o.To, elapsed.Round(time.Second), generation, cli.HubHint, key.Name, key.Namespace))
			}
			if done {
				took := ""
				if d.Status.ActionDuration != nil {
					took = fmt.Sprintf(" (the hub took %s)", d.Status.ActionDuration.Duration)
				}
				fmt.Fprintf(w, "Done: %s runs on %s, phase %s%s.\n", key, o.To, d.Status.Phase, took)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for the %s of %s to %s: %w; the hub goes on: follow it with `drover status %s -n %s`",
				verb, key, o.To, ctx.Err(), key.Name, key.Namespace)
		case <-deadline.C:
			return waitTimeout(key, o, timeout, generation, lastSeen)
		case <-ticker.C:
		}
	}
}

// progress is what a --wait line shows; a line is printed when it changes.
type progress struct {
	phase, progression, available string
}

func progressOf(d *v1alpha1.DRPlacementControl) progress {
	p := progress{phase: cli.Dash(string(d.Status.Phase)), progression: cli.Dash(d.Status.Progression), available: "Available not reported"}
	if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionAvailable); c != nil {
		p.available = c.Message
		if c.Status != metav1.ConditionTrue {
			// During an action the hub's message repeats the phase, target and step that the
			// line already shows: "Relocating to west, step PromotingTarget: <what it waits for>".
			msg := strings.TrimPrefix(c.Message, fmt.Sprintf("%s to %s, step %s: ", d.Status.Phase, d.Status.ActionTarget, d.Status.Progression))
			p.available = "waiting: " + msg
		}
	}
	return p
}

// progressLine is one --wait line: the elapsed time, the phase, the step and what the hub
// waits for (the Available condition's message).
func progressLine(elapsed time.Duration, p progress) string {
	return fmt.Sprintf("%7s  %-11s  %-24s  %s", fmt.Sprintf("%.1fs", elapsed.Seconds()), p.phase, p.progression, p.available)
}

// outcome judges the DRPlacementControl during --wait: done, failed (with an error that says
// why and what to do), or neither. generation is the spec generation the patch produced.
func outcome(d *v1alpha1.DRPlacementControl, o *ActionOptions, generation int64) (bool, error) {
	st := d.Status
	verb := strings.ToLower(string(o.Action))
	if d.DeletionTimestamp != nil {
		return false, fmt.Errorf("the DRPlacementControl is being deleted; stopped waiting for the %s", verb)
	}
	if want, got := o.To, specTarget(d, o.Action); d.Spec.Action != o.Action || got != want {
		return false, fmt.Errorf("the DRPlacementControl's spec changed while waiting: it now asks for %s; stopped waiting for the %s to %s", cli.Asked(d), verb, want)
	}
	if c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionActionAccepted); c != nil &&
		c.Status == metav1.ConditionFalse && c.ObservedGeneration >= generation {
		return false, cli.Refused(fmt.Errorf("the hub refused the %s (%s): %s", verb, c.Reason, c.Message))
	}
	done := st.Phase == settledPhase(o.Action) && st.CurrentPrimary == o.To &&
		apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionAvailable)
	return done, nil
}

func specTarget(d *v1alpha1.DRPlacementControl, action v1alpha1.DRAction) string {
	if action == v1alpha1.ActionRelocate {
		return d.Spec.PreferredCluster
	}
	return d.Spec.FailoverCluster
}

// observed says whether the hub has reconciled the spec of generation: it stamps every condition
// it writes with the generation it judged, and status.observedGeneration after a full pass.
func observed(d *v1alpha1.DRPlacementControl, generation int64) bool {
	if d.Status.ObservedGeneration >= generation {
		return true
	}
	for _, c := range d.Status.Conditions {
		if c.ObservedGeneration >= generation {
			return true
		}
	}
	return false
}

// waitTimeout says where the action stood when --wait gave up, and what to check.
func waitTimeout(key client.ObjectKey, o ActionOptions, timeout time.Duration, generation int64, d *v1alpha1.DRPlacementControl) error {
	verb := strings.ToLower(string(o.Action))
	where := "the DRPlacementControl could not be read"
	if d != nil {
		p := progressOf(d)
		where = fmt.Sprintf("phase %s, step %s, %s", p.phase, p.progression, p.available)
		if c := apimeta.FindStatusCondition(d.Status.Conditions, v1alpha1.ConditionActionAccepted); c == nil || c.ObservedGeneration < generation {
			where += "; the hub has not observed the change: " + cli.HubHint
		}
	}
	return cli.TimedOut(fmt.Errorf("timed out after %s waiting for the %s of %s to %s: %s; the hub goes on: follow it with `drover status %s -n %s`",
		timeout, verb, key, o.To, where, key.Name, key.Namespace))
}

// printActed prints the DRPlacementControl after an action (asked, or followed to its end) in
// the format of -o: the object or its name.
func printActed(ctx context.Context, c client.Reader, w io.Writer, format string, key client.ObjectKey) error {
	if format == cli.OutputName {
		return cli.WriteNames(w, "DRPlacementControl", []string{key.Name})
	}
	d := &v1alpha1.DRPlacementControl{}
	if err := c.Get(ctx, key, d); err != nil {
		return cli.ReadError("DRPlacementControl "+key.String(), err)
	}
	return cli.WriteStructured(w, format, cli.AsObject(d))
}
