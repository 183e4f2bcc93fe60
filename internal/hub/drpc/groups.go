package drpc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
)

// Labels on the VolumeReplicationGroups the hub creates, naming their DRPlacementControl.
const (
	LabelDRPCName      = "drover.io/drpc-name"
	LabelDRPCNamespace = "drover.io/drpc-namespace"
)

// groupSpec is the VolumeReplicationGroup spec the hub asks of a cluster: the role, the action
// that led to it and, for a relocation's demotion, the final sync request. The VolSync hand-off
// (receivePVCs, destinations) is added by handOff.
func groupSpec(drpc *v1alpha1.DRPlacementControl, policy *v1alpha1.DRPolicy, state v1alpha1.ReplicationState, action v1alpha1.DRAction, finalSync string) v1alpha1.VolumeReplicationGroupSpec {
	spec := v1alpha1.VolumeReplicationGroupSpec{
		ReplicationState:     state,
		Action:               action,
		PVCSelector:          *drpc.Spec.PVCSelector.DeepCopy(),
		ProtectedNamespaces:  slices.Clone(drpc.Spec.ProtectedNamespaces),
		S3Profiles:           slices.Clone(policy.Spec.S3Profiles),
		SchedulingInterval:   policy.Spec.SchedulingInterval,
		StorageClassBackends: slices.Clone(policy.Spec.StorageClassBackends),
		FinalSyncRequest:     finalSync,
		ConsistencyGroups:    consistencyGroups(drpc),
	}
	if policy.Spec.ReplicationClassSelector != nil {
		spec.VolRep = &v1alpha1.VolRepSpec{ReplicationClassSelector: policy.Spec.ReplicationClassSelector.DeepCopy()}
	}
	if policy.Spec.VolumeSnapshotClassSelector != nil {
		spec.VolSync = &v1alpha1.VolSyncSpec{VolumeSnapshotClassSelector: policy.Spec.VolumeSnapshotClassSelector.DeepCopy()}
	}
	if policy.Spec.VolSyncMovers != "" {
		if spec.VolSync == nil {
			spec.VolSync = &v1alpha1.VolSyncSpec{}
		}
		spec.VolSync.Movers = policy.Spec.VolSyncMovers
	}
	if policy.Spec.VolSyncAddress != "" {
		if spec.VolSync == nil {
			spec.VolSync = &v1alpha1.VolSyncSpec{}
		}
		spec.VolSync.Address = policy.Spec.VolSyncAddress
	}
	if msc := drpc.Spec.VolSyncMoverSecurityContext; msc != nil {
		if spec.VolSync == nil {
			spec.VolSync = &v1alpha1.VolSyncSpec{}
		}
		spec.VolSync.MoverSecurityContext = msc.DeepCopy()
	}
	switch {
	case drpc.Spec.KubeObjectProtection != nil:
		spec.KubeObjectProtection = drpc.Spec.KubeObjectProtection.DeepCopy()
	case drpc.Spec.PlacementRef == nil:
		// Self-contained mode captures every namespaced object of the protected namespaces.
		spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	}
	return spec
}

// consistencyGroups are the DRPlacementControl's consistency groups as a VolumeReplicationGroup
// carries them: each selector the group's and pvcSelector's requirements together, so that a
// group selects only PVCs the application's selector selects.
func consistencyGroups(drpc *v1alpha1.DRPlacementControl) []v1alpha1.VRGConsistencyGroup {
	var groups []v1alpha1.VRGConsistencyGroup
	for _, g := range drpc.Spec.ConsistencyGroups {
		groups = append(groups, v1alpha1.VRGConsistencyGroup{Name: g.Name, Selector: bothSelectors(drpc.Spec.PVCSelector, g.Selector)})
	}
	return groups
}

// bothSelectors returns a selector that matches what both a and b match: their matchLabels
// merged, and a matchExpressions requirement for each label b asks with another value than a
// (no object matches both, and neither does the result), then both lists of expressions.
func bothSelectors(a, b metav1.LabelSelector) metav1.LabelSelector {
	out := metav1.LabelSelector{}
	for _, s := range []metav1.LabelSelector{a, b} {
		for k, v := range s.MatchLabels {
			if have, ok := out.MatchLabels[k]; ok && have != v {
				out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
					Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
				continue
			}
			if out.MatchLabels == nil {
				out.MatchLabels = map[string]string{}
			}
			out.MatchLabels[k] = v
		}
	}
	slices.SortFunc(out.MatchExpressions, func(x, y metav1.LabelSelectorRequirement) int { return strings.Compare(x.Key, y.Key) })
	for _, s := range []metav1.LabelSelector{a, b} {
		for _, e := range s.MatchExpressions {
			out.MatchExpressions = append(out.MatchExpressions, *e.DeepCopy())
		}
	}
	return out
}

// handOff adds the VolSync hand-off between the two groups to a desired spec: a secondary
// receives the primary's VolSync PVCs (receivePVCs, from the primary's protectedPVCs, with the
// user its movers run as, so the destination's mover runs as the same one), a primary
// sends to the secondary's destinations (from the secondary's volSyncDestinations). What the
// other side does not report (it is unreachable, or has not reported yet) is kept as the group
// already has it. Only destinations trustedDestinations accepts are handed to the primary.
func handOff(spec *v1alpha1.VolumeReplicationGroupSpec, group types.NamespacedName, current, other *v1alpha1.VolumeReplicationGroup) {
	var kept *v1alpha1.VolSyncSpec
	if current != nil {
		kept = current.Spec.VolSync
	}
	var receive []v1alpha1.VolSyncReceivePVC
	var destinations []v1alpha1.VolSyncDestination
	switch {
	case spec.ReplicationState == v1alpha1.ReplicationStateSecondary && other != nil && other.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary && len(other.Status.ProtectedPVCs) > 0:
		for _, p := range other.Status.ProtectedPVCs {
			if p.Backend != v1alpha1.BackendVolSync || p.Capacity == nil {
				continue
			}
			receive = append(receive, v1alpha1.VolSyncReceivePVC{
				PVCNamespace: p.Namespace, PVCName: p.Name, StorageClassName: p.StorageClassName,
				AccessModes: slices.Clone(p.AccessModes), Capacity: p.Capacity.DeepCopy(), VolumeMode: p.VolumeMode,
				MoverSecurityContext: p.MoverSecurityContext.DeepCopy(),
			})
		}
	case spec.ReplicationState == v1alpha1.ReplicationStateSecondary && kept != nil:
		receive = kept.ReceivePVCs
	case spec.ReplicationState == v1alpha1.ReplicationStatePrimary && other != nil && other.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary && len(other.Status.VolSyncDestinations) > 0:
		destinations, _ = trustedDestinations(group, spec.ProtectedNamespaces, other.Status.VolSyncDestinations)
	case spec.ReplicationState == v1alpha1.ReplicationStatePrimary && kept != nil:
		destinations = kept.Destinations
	}
	if len(receive) == 0 && len(destinations) == 0 {
		return
	}
	if spec.VolSync == nil {
		spec.VolSync = &v1alpha1.VolSyncSpec{}
	}
	spec.VolSync.ReceivePVCs, spec.VolSync.Destinations = receive, destinations
}

// ensureGroup makes the application's group on a cluster hold the desired spec: it creates the
// group (and its namespace) or patches it, with an optimistic lock, when the spec differs. A
// group already as desired is not written, so its generation only changes when the hub asks
// for something new.
func (r *Reconciler) ensureGroup(ctx context.Context, sc *scope, cv *clusterView, desired v1alpha1.VolumeReplicationGroupSpec) error {
	other := sc.view(sc.peer(cv.name))
	var otherGroup *v1alpha1.VolumeReplicationGroup
	if other.reachable() {
		otherGroup = other.vrg
	}
	handOff(&desired, client.ObjectKeyFromObject(sc.drpc), cv.vrg, otherGroup)
	desired.Recipe = sc.recipeFor(cv)
	record, err := sc.record()
	if err != nil {
		return err
	}
	if cv.vrg == nil {
		if err := ensureNamespace(ctx, cv, sc.drpc.Namespace); err != nil {
			return err
		}
		vrg := &v1alpha1.VolumeReplicationGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: sc.drpc.Namespace, Name: sc.drpc.Name, Labels: map[string]string{
				LabelDRPCName: sc.drpc.Name, LabelDRPCNamespace: sc.drpc.Namespace,
			}, Annotations: map[string]string{hubrecord.Annotation: record}},
			Spec: desired,
		}
		err := cv.client.Create(ctx, vrg, client.FieldOwner(fieldOwner))
		if apierrors.IsAlreadyExists(err) {
			// The group is there and the hub's watch has not shown it yet (a reconcile woken by
			// the other cluster's change just after the hub created it): its event comes next
			// and wakes this DRPlacementControl again. Until then it is treated as not there.
			ctrl.LoggerFrom(ctx).V(1).Info("VolumeReplicationGroup exists but is not in the hub's cache yet", "cluster", cv.name)
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to create VolumeReplicationGroup %s on %s: %w", klog.KObj(vrg), cv.name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Created VolumeReplicationGroup", "cluster", cv.name, "replicationState", desired.ReplicationState, "action", desired.Action)
		cv.vrg = vrg
		return nil
	}
	if equality.Semantic.DeepEqual(cv.vrg.Spec, desired) && cv.vrg.Annotations[hubrecord.Annotation] == record {
		return nil
	}
	before := cv.vrg.DeepCopy()
	cv.vrg.Spec = desired
	if cv.vrg.Annotations == nil {
		cv.vrg.Annotations = map[string]string{}
	}
	cv.vrg.Annotations[hubrecord.Annotation] = record
	if err := cv.client.Patch(ctx, cv.vrg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		cv.vrg = before
		return fmt.Errorf("failed to patch VolumeReplicationGroup %s on %s: %w", klog.KObj(before), cv.name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated VolumeReplicationGroup", "cluster", cv.name, "replicationState", desired.ReplicationState,
		"action", desired.Action, "finalSyncRequest", desired.FinalSyncRequest)
	return nil
}

// ensureNamespace creates the group's namespace on a cluster when it is missing.
func ensureNamespace(ctx context.Context, cv *clusterView, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cv.client.Create(ctx, ns, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create namespace %s on %s: %w", name, cv.name, err)
	}
	return nil
}

// condition returns a group's condition judged at its current generation, nil otherwise.
func condition(vrg *v1alpha1.VolumeReplicationGroup, condType string) *metav1.Condition {
	if vrg == nil {
		return nil
	}
	c := apimeta.FindStatusCondition(vrg.Status.Conditions, condType)
	if c == nil || c.ObservedGeneration != vrg.Generation {
		return nil
	}
	return c
}

// isTrue reports whether a group's condition is True at its current generation.
func isTrue(vrg *v1alpha1.VolumeReplicationGroup, condType string) bool {
	c := condition(vrg, condType)
	return c != nil && c.Status == metav1.ConditionTrue
}

// notYet describes a condition of a group that is not True at its current generation.
func notYet(cluster string, vrg *v1alpha1.VolumeReplicationGroup, condType string) string {
	c := condition(vrg, condType)
	if c == nil {
		return fmt.Sprintf("%s's VolumeReplicationGroup has not reported %s for its current spec yet", cluster, condType)
	}
	return fmt.Sprintf("%s's VolumeReplicationGroup: %s is %s (%s): %s", cluster, condType, c.Status, c.Reason, c.Message)
}

// applicationDown returns the primary group's WorkloadsReady when it is False at its current
// generation: after a failover or relocation, the workloads that mount its PVCs do not run
// (refused pods, a PVC not Bound, pods not running). An agent that does not judge it reports
// none, and nothing is held back.
func applicationDown(vrg *v1alpha1.VolumeReplicationGroup) *metav1.Condition {
	c := condition(vrg, v1alpha1.ConditionWorkloadsReady)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	return c
}

// promoted reports whether a group promoted on cluster is ready to run the application: its
// PVs and PVCs restored (ClusterDataReady), its PVCs primary (DataReady) and, when it captures
// objects, those restored (KubeObjectsReady). Otherwise it says what is awaited.
func promoted(cluster string, vrg *v1alpha1.VolumeReplicationGroup) (bool, string) {
	if vrg == nil || vrg.Spec.ReplicationState != v1alpha1.ReplicationStatePrimary {
		return false, fmt.Sprintf("%s's VolumeReplicationGroup is not primary yet", cluster)
	}
	conds := []string{v1alpha1.ConditionClusterDataReady, v1alpha1.ConditionDataReady}
	if vrg.Spec.KubeObjectProtection != nil && vrg.Spec.Action != v1alpha1.ActionNone {
		conds = append(conds, v1alpha1.ConditionKubeObjectsReady)
	}
	for _, ct := range conds {
		if !isTrue(vrg, ct) {
			return false, notYet(cluster, vrg, ct)
		}
	}
	return true, ""
}

// acknowledged reports whether the agent has acted on the group's current spec asking for
// secondary: it no longer acts as a primary (it writes no metadata, protects nothing new), even
// if its PVCs are still in use.
func acknowledged(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return vrg != nil && vrg.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary &&
		condition(vrg, v1alpha1.ConditionDataReady) != nil
}

// secondary reports whether a group is Secondary at its current generation.
func secondary(vrg *v1alpha1.VolumeReplicationGroup) bool {
	return vrg != nil && vrg.Spec.ReplicationState == v1alpha1.ReplicationStateSecondary &&
		vrg.Status.State == v1alpha1.StateSecondary && vrg.Status.ObservedGeneration == vrg.Generation
}
