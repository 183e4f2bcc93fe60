package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// hubHint is what to check when the hub has written nothing.
const hubHint = "is `drover hub` running against this cluster?"

// app is what the verbs know of one protected application: its DRPlacementControl, its
// DRPolicy and the policy's DRClusters, as the hub reports them.
type app struct {
	drpc *v1alpha1.DRPlacementControl
	// policy is nil when the DRPolicy does not exist.
	policy *v1alpha1.DRPolicy
	// interval is the policy's schedulingInterval; 0 when unknown.
	interval time.Duration
	// clusters are the policy's DRClusters that exist, by name.
	clusters map[string]*v1alpha1.DRCluster
}

// loadApp reads the DRPlacementControl namespace/name, its policy and the policy's clusters.
func loadApp(ctx context.Context, c client.Reader, namespace, name string) (*app, error) {
	d := &v1alpha1.DRPlacementControl{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound(ctx, c, namespace, name)
		}
		return nil, readError("DRPlacementControl "+namespace+"/"+name, err)
	}
	a := &app{drpc: d, clusters: map[string]*v1alpha1.DRCluster{}}
	policies := map[string]*v1alpha1.DRPolicy{}
	if err := a.loadPolicy(ctx, c, policies); err != nil {
		return nil, err
	}
	if a.policy == nil {
		return a, nil
	}
	for _, name := range a.policy.Spec.DRClusters {
		cl := &v1alpha1.DRCluster{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, cl)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, readError("DRCluster "+name, err)
		default:
			a.clusters[name] = cl
		}
	}
	return a, nil
}

// loadPolicy sets the app's policy and interval, reading each policy once per call of a verb.
func (a *app) loadPolicy(ctx context.Context, c client.Reader, cache map[string]*v1alpha1.DRPolicy) error {
	name := a.drpc.Spec.DRPolicyRef.Name
	p, ok := cache[name]
	if !ok {
		p = &v1alpha1.DRPolicy{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, p)
		switch {
		case apierrors.IsNotFound(err):
			p = nil
		case err != nil:
			return readError("DRPolicy "+name, err)
		}
		cache[name] = p
	}
	a.policy = p
	if p != nil {
		a.interval, _ = p.Spec.SchedulingInterval.Duration()
	}
	return nil
}

// notFound says that the DRPlacementControl does not exist and lists the ones that do.
func notFound(ctx context.Context, c client.Reader, namespace, name string) error {
	list := &v1alpha1.DRPlacementControlList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("no DRPlacementControl %q in namespace %q (and listing them failed: %w)", name, namespace, err)
	}
	if len(list.Items) == 0 {
		return fmt.Errorf("no DRPlacementControl %q in namespace %q, which has none: name its namespace with -n, or list all with `drover status -A`", name, namespace)
	}
	names := make([]string, 0, len(list.Items))
	for _, d := range list.Items {
		names = append(names, d.Name)
	}
	sort.Strings(names)
	return fmt.Errorf("no DRPlacementControl %q in namespace %q; it has: %s", name, namespace, strings.Join(names, ", "))
}

// readError wraps a failed read with what to check.
func readError(what string, err error) error {
	if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource") {
		return fmt.Errorf("failed to read %s: the API server does not serve drover.io/v1alpha1: is --context the hub cluster with drover's CRDs installed? (%w)", what, err)
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("failed to read %s: %w: ask for read access to drover.io resources on the hub", what, err)
	}
	return fmt.Errorf("failed to read %s: %w", what, err)
}

// reported says whether the hub has written the DRPlacementControl's status: a phase, or a
// condition (a DRPlacementControl the hub refuses to act on, Validated False, has no phase).
func reported(d *v1alpha1.DRPlacementControl) bool {
	return d.Status.Phase != "" || len(d.Status.Conditions) > 0
}

// problem is the first of Validated and ActionAccepted that is False: the hub does not act on
// the spec, or refuses or postpones the action it asks for, and a person must know why. Nil
// when neither is.
func problem(d *v1alpha1.DRPlacementControl) *metav1.Condition {
	for _, t := range []string{v1alpha1.ConditionValidated, v1alpha1.ConditionActionAccepted} {
		if c := apimeta.FindStatusCondition(d.Status.Conditions, t); c != nil && c.Status == metav1.ConditionFalse {
			return c
		}
	}
	return nil
}

// inAction says whether the phase is a failover or a relocation in progress.
func inAction(phase v1alpha1.DRPCPhase) bool {
	return phase == v1alpha1.PhaseFailingOver || phase == v1alpha1.PhaseRelocating
}

// settled says whether the phase is one where the application runs on currentPrimary.
func settled(phase v1alpha1.DRPCPhase) bool {
	return phase == v1alpha1.PhaseDeployed || phase == v1alpha1.PhaseFailedOver || phase == v1alpha1.PhaseRelocated
}

// peerOf is the other cluster of the policy, or "" when unknown.
func (a *app) peerOf(cluster string) string {
	if a.policy == nil {
		return ""
	}
	p, _ := a.policy.Spec.Peer(cluster)
	return p
}

// vrg is the hub's summary of the group on cluster, or nil.
func vrg(d *v1alpha1.DRPlacementControl, cluster string) *v1alpha1.VRGSummary {
	for i := range d.Status.VRGs {
		if d.Status.VRGs[i].Cluster == cluster {
			return &d.Status.VRGs[i]
		}
	}
	return nil
}

// lastSync is the recovery point of a failover now: the DRPC's lastGroupSyncTime or, while an
// action has cleared it, the current primary's group's.
func lastSync(d *v1alpha1.DRPlacementControl) *metav1.Time {
	if t := d.Status.LastGroupSyncTime; t != nil {
		return t
	}
	if s := vrg(d, d.Status.CurrentPrimary); s != nil {
		return s.LastGroupSyncTime
	}
	return nil
}

// condStatus is a condition's status, or "-" when absent.
func condStatus(conds []metav1.Condition, condType string) string {
	if c := apimeta.FindStatusCondition(conds, condType); c != nil {
		return string(c.Status)
	}
	return "-"
}

// reachability says whether the hub reaches cluster and, when not, since when and why.
func (a *app) reachability(cluster string) (bool, string) {
	cl, ok := a.clusters[cluster]
	if !ok {
		return false, "no DRCluster " + cluster + " exists on the hub"
	}
	c := apimeta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReachable)
	switch {
	case c == nil:
		return false, "the hub has not probed " + cluster + " yet: " + hubHint
	case c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonProbeFailing:
		return false, "not answering the hub's probe (" + c.Message + ")"
	case c.Status == metav1.ConditionTrue:
		return true, "Reachable True: " + c.Message
	}
	return false, "unreachable since " + clock(c.LastTransitionTime.Time)
}

// clock is a time of day as the hub's messages print it, in UTC.
func clock(t time.Time) string { return t.UTC().Format(time.TimeOnly) + " UTC" }

// age is a duration as kubectl prints ages.
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}
