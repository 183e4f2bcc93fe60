package drpc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A failover made without the hub (`drover failover --without-hub`, decision 0014) leaves its
// target's group primary with the mark v1alpha1.AnnotationPromotedWithoutHub, naming the
// generation it wrote. A hub that comes back (the old one, or the same one that was only cut
// off) holds a DRPlacementControl older than that group: it still says the application runs on
// the old primary, and its settled state would demote the marked group, discarding every write
// made there since. So while a mark holds and the DRPlacementControl does not already run the
// application on the marked cluster, the hub writes to neither group and places nothing: it
// says so in ActionAccepted, with what to do. Once the spec asks for a failover to the marked
// cluster (`drover failover APP --to CLUSTER` on the hub), the hub adopts the promotion as its
// own failover: it demotes the old primary if it answers and finishes the failover, which
// finds the target promoted already; settled there, it removes the mark.

// requeueHeld is how often a held DRPlacementControl is looked at again, besides the group
// changes that wake it.
const requeueHeld = time.Minute

// markedGroup is a group of the application that was promoted without the hub.
type markedGroup struct {
	cluster string
	mark    *v1alpha1.PromotedWithoutHub
	// err is set when the mark could not be read; the group is held all the same.
	err error
}

// promotedWithoutHub returns the application's groups whose mark holds, in the policy's order.
func promotedWithoutHub(sc *scope) []markedGroup {
	var out []markedGroup
	for _, name := range sc.policy.Spec.DRClusters {
		cv := sc.view(name)
		if !cv.reachable() || cv.vrg == nil {
			continue
		}
		mark, err := v1alpha1.PromotedWithoutHubMark(cv.vrg)
		if mark != nil || err != nil {
			out = append(out, markedGroup{cluster: name, mark: mark, err: err})
		}
	}
	return out
}

// withoutHub returns the state to run in place of the machine's own when a group was promoted
// without the hub and the DRPlacementControl does not run the application there yet: held,
// unless the spec asks for a failover to that cluster from a phase the machine starts one from
// (then nil: the machine's own failover adopts the promotion). Nil when no such group is in
// the way.
func (r *Reconciler) withoutHub(sc *scope) state {
	marked := promotedWithoutHub(sc)
	if len(marked) == 0 {
		return nil
	}
	st, spec := &sc.drpc.Status, sc.drpc.Spec
	m := marked[0]
	if len(marked) == 1 && m.err == nil {
		switch {
		case settledOn(st, m.cluster):
			return r.adopted(m)
		case st.Phase == v1alpha1.PhaseFailingOver && st.ActionTarget == m.cluster:
			return nil
		case spec.Action == v1alpha1.ActionFailover && spec.FailoverCluster == m.cluster && sc.lost[m.cluster] == "" && adoptable(st.Phase):
			// The machine starts the failover to the marked cluster, as it would any.
			return nil
		}
	}
	sc.refuse(v1alpha1.ReasonPromotedWithoutHub, heldMessage(sc, marked))
	sc.waiting = "held: " + sc.refusal.message
	return r.held
}

// settledOn reports whether the DRPlacementControl is settled with the application on cluster:
// it has made the promotion made without the hub its own.
func settledOn(st *v1alpha1.DRPlacementControlStatus, cluster string) bool {
	switch st.Phase {
	case v1alpha1.PhaseDeployed, v1alpha1.PhaseFailedOver, v1alpha1.PhaseRelocated:
		return st.CurrentPrimary == cluster
	}
	return false
}

// adopted is the state of a DRPlacementControl settled on a group promoted without the hub:
// the mark has served, and is removed before anything else is done, so that a later action
// (a relocation away from that cluster) is not held by it. The next pass runs the machine.
func (r *Reconciler) adopted(m markedGroup) state {
	return func(ctx context.Context, sc *scope) (ctrl.Result, error) {
		cv := sc.view(m.cluster)
		before := cv.vrg.DeepCopy()
		delete(cv.vrg.Annotations, v1alpha1.AnnotationPromotedWithoutHub)
		if err := cv.client.Patch(ctx, cv.vrg, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
			cv.vrg = before
			return ctrl.Result{}, fmt.Errorf("failed to remove annotation %s from VolumeReplicationGroup %s on %s: %w",
				v1alpha1.AnnotationPromotedWithoutHub, klog.KObj(before), m.cluster, err)
		}
		r.event(sc, corev1.EventTypeNormal, v1alpha1.EventPromotionAdopted,
			"The failover to %s made without the hub at %s is adopted: the application runs there", m.cluster, m.mark.At.UTC().Format(time.RFC3339))
		return ctrl.Result{RequeueAfter: requeueAction}, nil
	}
}

// adoptable reports whether the machine may start a failover from phase: a settled one, or a
// relocation, which a failover overtakes. A DRPlacementControl still deploying, or failing over
// to the other cluster, stays held.
func adoptable(phase v1alpha1.DRPCPhase) bool {
	switch phase {
	case v1alpha1.PhaseDeployed, v1alpha1.PhaseFailedOver, v1alpha1.PhaseRelocated, v1alpha1.PhaseRelocating:
		return true
	}
	return false
}

// held is the state of a DRPlacementControl held by a promotion made without the hub: it writes
// to no group and places nothing.
func (r *Reconciler) held(_ context.Context, _ *scope) (ctrl.Result, error) {
	return ctrl.Result{RequeueAfter: requeueHeld}, nil
}

// heldMessage says which groups were promoted without the hub and what to do.
func heldMessage(sc *scope, marked []markedGroup) string {
	var parts []string
	for _, m := range marked {
		if m.err != nil {
			parts = append(parts, fmt.Sprintf("%s's VolumeReplicationGroup carries a mark that cannot be read (%v)", m.cluster, m.err))
			continue
		}
		sync := "unknown"
		if m.mark.LastGroupSyncTime != nil {
			sync = m.mark.LastGroupSyncTime.UTC().Format(time.RFC3339)
		}
		parts = append(parts, fmt.Sprintf("%s's VolumeReplicationGroup was promoted without the hub at %s (from its last sync %s)",
			m.cluster, m.mark.At.UTC().Format(time.RFC3339), sync))
	}
	msg := strings.Join(parts, "; ") + fmt.Sprintf("; this DRPlacementControl (phase %s on %s) is older than that, so the hub acts on neither group", sc.drpc.Status.Phase, dash(sc.drpc.Status.CurrentPrimary))
	if len(marked) == 1 && marked[0].err == nil {
		c := marked[0].cluster
		return msg + fmt.Sprintf(": run drover failover %s -n %s --to %s (action Failover, failoverCluster %s) to adopt it; the hub then demotes %s when it answers",
			sc.drpc.Name, sc.drpc.Namespace, c, c, sc.peer(c))
	}
	names := make([]string, 0, len(marked))
	for _, m := range marked {
		names = append(names, m.cluster)
	}
	slices.Sort(names)
	return msg + fmt.Sprintf(": decide which of %s holds the application's data, remove annotation %s from the other's VolumeReplicationGroup, then run drover failover to the one kept",
		strings.Join(names, " and "), v1alpha1.AnnotationPromotedWithoutHub)
}
