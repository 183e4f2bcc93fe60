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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// HubHint is what to check when the hub has written nothing.
const HubHint = "is `drover hub` running against this cluster?"

// App is what the verbs know of one protected application: its DRPlacementControl, its
// DRPolicy and the policy's DRClusters, as the hub reports them.
type App struct {
	DRPC *v1alpha1.DRPlacementControl
	// Policy is nil when the DRPolicy does not exist.
	Policy *v1alpha1.DRPolicy
	// Interval is the policy's schedulingInterval; 0 when unknown.
	Interval time.Duration
	// Clusters are the policy's DRClusters that exist, by name.
	Clusters map[string]*v1alpha1.DRCluster
}

// LoadApp reads the DRPlacementControl namespace/name, its policy and the policy's clusters.
func LoadApp(ctx context.Context, c client.Reader, namespace, name string) (*App, error) {
	d := &v1alpha1.DRPlacementControl{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, NotFound(ctx, c, namespace, name)
		}
		return nil, ReadError("DRPlacementControl "+namespace+"/"+name, err)
	}
	a := &App{DRPC: d, Clusters: map[string]*v1alpha1.DRCluster{}}
	policies := map[string]*v1alpha1.DRPolicy{}
	if err := a.LoadPolicy(ctx, c, policies); err != nil {
		return nil, err
	}
	if a.Policy == nil {
		return a, nil
	}
	if err := a.LoadClusters(ctx, c, map[string]*v1alpha1.DRCluster{}); err != nil {
		return nil, err
	}
	return a, nil
}

// LoadPolicy sets the app's policy and interval, reading each policy once per call of a verb.
func (a *App) LoadPolicy(ctx context.Context, c client.Reader, cache map[string]*v1alpha1.DRPolicy) error {
	name := a.DRPC.Spec.DRPolicyRef.Name
	p, ok := cache[name]
	if !ok {
		p = &v1alpha1.DRPolicy{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, p)
		switch {
		case apierrors.IsNotFound(err):
			p = nil
		case err != nil:
			return ReadError("DRPolicy "+name, err)
		}
		cache[name] = p
	}
	a.Policy = p
	if p != nil {
		a.Interval, _ = p.Spec.SchedulingInterval.Duration()
	}
	return nil
}

// NotFound says that the DRPlacementControl does not exist and lists the ones that do.
func NotFound(ctx context.Context, c client.Reader, namespace, name string) error {
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

// ReadError wraps a failed read with what to check.
func ReadError(what string, err error) error {
	if apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err) && strings.Contains(err.Error(), "the server could not find the requested resource") {
		return fmt.Errorf("failed to read %s: the API server does not serve drover.io/v1alpha1: is --context the hub cluster with drover's CRDs installed? (%w)", what, err)
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("failed to read %s: %w: ask for read access to drover.io resources on the hub", what, err)
	}
	return fmt.Errorf("failed to read %s: %w", what, err)
}

// Reported says whether the hub has written the DRPlacementControl's status: a phase, or a
// condition (a DRPlacementControl the hub refuses to act on, Validated False, has no phase).
func Reported(d *v1alpha1.DRPlacementControl) bool {
	return d.Status.Phase != "" || len(d.Status.Conditions) > 0
}

// Problem is the first of Validated and ActionAccepted that is False: the hub does not act on
// the spec, or refuses or postpones the action it asks for, and a person must know why. Nil
// when neither is.
func Problem(d *v1alpha1.DRPlacementControl) *metav1.Condition {
	for _, t := range []string{v1alpha1.ConditionValidated, v1alpha1.ConditionActionAccepted} {
		if c := apimeta.FindStatusCondition(d.Status.Conditions, t); c != nil && c.Status == metav1.ConditionFalse {
			return c
		}
	}
	return nil
}

// InAction says whether the phase is a failover or a relocation in progress.
func InAction(phase v1alpha1.DRPCPhase) bool {
	return phase == v1alpha1.PhaseFailingOver || phase == v1alpha1.PhaseRelocating
}

// Settled says whether the phase is one where the application runs on currentPrimary.
func Settled(phase v1alpha1.DRPCPhase) bool {
	return phase == v1alpha1.PhaseDeployed || phase == v1alpha1.PhaseFailedOver || phase == v1alpha1.PhaseRelocated
}

// PeerOf is the other cluster of the policy, or "" when unknown.
func (a *App) PeerOf(cluster string) string {
	if a.Policy == nil {
		return ""
	}
	p, _ := a.Policy.Spec.Peer(cluster)
	return p
}

// VRG is the hub's summary of the group on cluster, or nil.
func VRG(d *v1alpha1.DRPlacementControl, cluster string) *v1alpha1.VRGSummary {
	for i := range d.Status.VRGs {
		if d.Status.VRGs[i].Cluster == cluster {
			return &d.Status.VRGs[i]
		}
	}
	return nil
}

// LastSync is the recovery point of a failover now: the DRPC's lastGroupSyncTime or, while an
// action has cleared it, the current primary's group's.
func LastSync(d *v1alpha1.DRPlacementControl) *metav1.Time {
	if t := d.Status.LastGroupSyncTime; t != nil {
		return t
	}
	if s := VRG(d, d.Status.CurrentPrimary); s != nil {
		return s.LastGroupSyncTime
	}
	return nil
}

// CondStatus is a condition's status, or "-" when absent.
func CondStatus(conds []metav1.Condition, condType string) string {
	if c := apimeta.FindStatusCondition(conds, condType); c != nil {
		return string(c.Status)
	}
	return "-"
}

// Reachability says whether the hub reaches cluster and, when not, since when and why.
func (a *App) Reachability(cluster string) (bool, string) {
	cl, ok := a.Clusters[cluster]
	if !ok {
		return false, "no DRCluster " + cluster + " exists on the hub"
	}
	c := apimeta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionReachable)
	switch {
	case c == nil:
		return false, "the hub has not probed " + cluster + " yet: " + HubHint
	case c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonProbeFailing:
		return false, "not answering the hub's probe (" + c.Message + ")"
	case c.Status == metav1.ConditionTrue:
		return true, "Reachable True: " + c.Message
	}
	return false, "unreachable since " + Clock(c.LastTransitionTime.Time)
}

// Asked describes the action the spec asks for.
func Asked(d *v1alpha1.DRPlacementControl) string {
	switch d.Spec.Action {
	case v1alpha1.ActionFailover:
		return "Failover to " + d.Spec.FailoverCluster
	case v1alpha1.ActionRelocate:
		return "Relocate to " + d.Spec.PreferredCluster
	}
	return "no action"
}

// ActionOf names the action of a phase: Failover, Relocate or Deploy.
func ActionOf(phase v1alpha1.DRPCPhase) string {
	switch phase {
	case v1alpha1.PhaseFailingOver, v1alpha1.PhaseFailedOver:
		return "Failover"
	case v1alpha1.PhaseRelocating, v1alpha1.PhaseRelocated:
		return "Relocate"
	}
	return "Deploy"
}

// ConditionLine is "Type Status (Reason): message", or "Type not reported".
func ConditionLine(conds []metav1.Condition, condType string) string {
	c := apimeta.FindStatusCondition(conds, condType)
	if c == nil {
		return condType + " not reported"
	}
	return fmt.Sprintf("%s %s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
}

// ObjectsOnly reports whether the application is protected by its captured objects alone: its
// objects are captured (self-contained mode, or kubeObjectProtection set) and the current
// primary's group protects no PVC. Its lastGroupSyncTime is then the last capture that every
// store holds.
func ObjectsOnly(d *v1alpha1.DRPlacementControl) bool {
	if d.Spec.PlacementRef != nil && d.Spec.KubeObjectProtection == nil {
		return false
	}
	s := VRG(d, d.Status.CurrentPrimary)
	return s != nil && s.ProtectedPVCs != nil && *s.ProtectedPVCs == 0
}

// ActivePhase is the phase of an action in progress.
func ActivePhase(action v1alpha1.DRAction) v1alpha1.DRPCPhase {
	if action == v1alpha1.ActionRelocate {
		return v1alpha1.PhaseRelocating
	}
	return v1alpha1.PhaseFailingOver
}

// LoadClusters sets the app's clusters from its policy, reading each DRCluster once per call
// of a verb (a nil entry in cache: it does not exist).
func (a *App) LoadClusters(ctx context.Context, c client.Reader, cache map[string]*v1alpha1.DRCluster) error {
	if a.Policy == nil {
		return nil
	}
	for _, name := range a.Policy.Spec.DRClusters {
		cl, ok := cache[name]
		if !ok {
			cl = &v1alpha1.DRCluster{}
			err := c.Get(ctx, client.ObjectKey{Name: name}, cl)
			switch {
			case apierrors.IsNotFound(err):
				cl = nil
			case err != nil:
				return ReadError("DRCluster "+name, err)
			}
			cache[name] = cl
		}
		if cl != nil {
			a.Clusters[name] = cl
		}
	}
	return nil
}
