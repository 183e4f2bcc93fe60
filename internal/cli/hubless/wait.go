package hubless

import (
	"context"
	"fmt"
	"io"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// storeGrace is how long the promotion may report its stores unavailable before the command
// stops following it: the agent goes on, and the command can be run again to follow it.
const storeGrace = time.Minute

// wait follows the target's group until it is primary with its data ready, printing a line
// each time what it waits for changes.
func wait(ctx context.Context, w io.Writer, t *target, o FailoverOptions) error {
	log := o.Log
	if log == nil {
		log = w
	}
	timeout := cli.OrDefault(o.Timeout, DefaultTimeout)
	start := time.Now()
	deadline := start.Add(timeout)
	key := client.ObjectKeyFromObject(t.vrg)
	last, storesSince := "", time.Time{}
	for {
		vrg := &v1alpha1.VolumeReplicationGroup{}
		err := t.client.Get(ctx, key, vrg)
		waiting := ""
		if err != nil {
			waiting = fmt.Sprintf("%s does not answer: %v", o.To, err)
		} else if ok, why := promoted(vrg); ok {
			fmt.Fprintf(log, "  %s  %s's group is primary with its data ready (%s after asking)\n", cli.Clock(time.Now()), o.To, time.Since(start).Round(time.Second))
			fmt.Fprintf(w, "The application runs from %s's group now; drover status %s --cluster-kubeconfig %s shows it.\n", o.To, o.App, t.cluster.Kubeconfig)
			return nil
		} else {
			waiting = why
		}
		if storeProblem(vrg) {
			if storesSince.IsZero() {
				storesSince = time.Now()
			}
			if time.Since(storesSince) > storeGrace {
				return cli.Unreachable(fmt.Errorf("%s's agent has not reached the stores for %s: %s. The promotion is written and goes on once a store answers (it claims the group's epoch there first); check the S3 endpoints from %s, then run this command again to follow it",
					o.To, storeGrace, waiting, o.To))
			}
		} else {
			storesSince = time.Time{}
		}
		if waiting != last {
			fmt.Fprintf(log, "  %s  %s\n", cli.Clock(time.Now()), waiting)
			last = waiting
		}
		if time.Now().After(deadline) {
			return cli.TimedOut(fmt.Errorf("%s's group is not primary with its data ready after %s: %s; the agent goes on: run this command again to follow it", o.To, timeout, waiting))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cli.DefaultPollInterval):
		}
	}
}

// promoted reports whether a group is primary with its data ready, as the hub judges a
// failover's target (internal/hub/drpc): ClusterDataReady, DataReady and, when it restores
// objects, KubeObjectsReady True at its generation; else what it waits for.
func promoted(vrg *v1alpha1.VolumeReplicationGroup) (bool, string) {
	if vrg.Spec.ReplicationState != v1alpha1.ReplicationStatePrimary {
		return false, "the group is no longer asked to be primary: something else changed it"
	}
	conds := []string{v1alpha1.ConditionClusterDataReady, v1alpha1.ConditionDataReady}
	if vrg.Spec.KubeObjectProtection != nil {
		conds = append(conds, v1alpha1.ConditionKubeObjectsReady)
	}
	for _, ct := range conds {
		c := apimeta.FindStatusCondition(vrg.Status.Conditions, ct)
		switch {
		case c == nil || c.ObservedGeneration != vrg.Generation:
			return false, fmt.Sprintf("the agent has not reported %s for the promotion yet", ct)
		case c.Status != metav1.ConditionTrue:
			return false, fmt.Sprintf("%s %s (%s): %s", ct, c.Status, c.Reason, c.Message)
		}
	}
	return true, ""
}

// storeProblem reports whether the group says that it cannot reach its stores.
func storeProblem(vrg *v1alpha1.VolumeReplicationGroup) bool {
	for _, c := range vrg.Status.Conditions {
		if c.Status != metav1.ConditionTrue && c.Reason == v1alpha1.ReasonStoreUnavailable && c.ObservedGeneration == vrg.Generation {
			return true
		}
	}
	return false
}
