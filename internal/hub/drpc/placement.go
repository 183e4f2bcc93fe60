package drpc

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
)

// In placement mode the DRPlacementControl owns the application's PlacementDecision: a GitOps
// tool (Argo CD's clusterDecisionResource generator, OCM) deploys the application on the
// clusters it names. drover names a cluster only when the application may run there:
//   - the target of a failover or relocation once its group is promoted (its PVCs restored,
//     so the workload binds to the replicated data rather than to new, empty PVCs);
//   - during a relocation, no cluster while the old primary's group is demoted for the final
//     sync (the application must be stopped);
//   - after a failover, the old primary as long as it was named and its group has not yet
//     acknowledged its demotion: the GitOps tool removes the application there only once the
//     agent no longer acts as a primary, so the removal cannot make a stale primary unprotect
//     or rewrite metadata. A cluster is never added back this way.
//
// The DRPlacementControl is not the decision's owner in the garbage collector's sense:
// deleting the DRPlacementControl leaves the application where it runs.

// LabelDecisionOwner marks a PlacementDecision written by drover with its DRPlacementControl.
const LabelDecisionOwner = "drover.io/drpc"

// decisionKey is the namespace and name of the application's PlacementDecision.
func decisionKey(drpc *v1alpha1.DRPlacementControl) client.ObjectKey {
	ref := drpc.Spec.PlacementRef
	ns := ref.Namespace
	if ns == "" {
		ns = drpc.Namespace
	}
	return client.ObjectKey{Namespace: ns, Name: ref.Name + "-decision-1"}
}

// observeDecision reads the application's PlacementDecision; nil when it does not exist.
func (r *Reconciler) observeDecision(ctx context.Context, sc *scope) error {
	if !sc.placementMode() {
		return nil
	}
	pd := &ocmv1beta1.PlacementDecision{}
	err := r.decisions.Get(ctx, r.Client, r.APIReader, decisionKey(sc.drpc), pd)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get PlacementDecision %s: %w", decisionKey(sc.drpc), err)
	}
	sc.decision = pd
	return nil
}

// decided returns the clusters the decision names now.
func (sc *scope) decided() []string {
	if sc.decision == nil {
		return nil
	}
	out := make([]string, 0, len(sc.decision.Status.Decisions))
	for _, d := range sc.decision.Status.Decisions {
		out = append(out, d.ClusterName)
	}
	return out
}

// keepUnacknowledged returns the cluster in a list when the decision names it now and its group
// has not acknowledged its demotion: the application there is removed only after that.
func (sc *scope) keepUnacknowledged(cluster string) []string {
	cv := sc.view(cluster)
	if !slices.Contains(sc.decided(), argoName(sc, cluster)) {
		return nil
	}
	if cv.reachable() && acknowledged(cv.vrg) {
		return nil
	}
	return []string{cluster}
}

// argoName is the name a GitOps tool knows a cluster by (DRCluster.spec.argoCDClusterName, or
// the DRCluster's name).
func argoName(sc *scope, cluster string) string {
	if n := sc.argoNames[cluster]; n != "" {
		return n
	}
	return cluster
}

// place makes the decision name exactly the given clusters (placement mode only).
func (r *Reconciler) place(ctx context.Context, sc *scope, clusters ...string) error {
	if !sc.placementMode() {
		return nil
	}
	want := make([]ocmv1beta1.ClusterDecision, 0, len(clusters))
	for _, c := range clusters {
		want = append(want, ocmv1beta1.ClusterDecision{ClusterName: argoName(sc, c), Reason: "drover: " + string(sc.drpc.Status.Phase)})
	}
	key := decisionKey(sc.drpc)
	if sc.decision == nil {
		pd := &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
			ocmv1beta1.PlacementLabel: sc.drpc.Spec.PlacementRef.Name,
			LabelDecisionOwner:        sc.drpc.Name,
		}}}
		if err := r.Client.Create(ctx, pd, client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("failed to create PlacementDecision %s: %w", key, err)
		}
		r.decisions.Seen(pd)
		sc.decision = pd
	}
	if sameClusters(sc.decision.Status.Decisions, want) {
		return nil
	}
	before := sc.decision.DeepCopy()
	sc.decision.Status.Decisions = want
	if err := r.Client.Status().Patch(ctx, sc.decision, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		sc.decision = before
		return fmt.Errorf("failed to update PlacementDecision %s: %w", key, err)
	}
	r.decisions.Seen(sc.decision)
	ctrl.LoggerFrom(ctx).Info("Updated PlacementDecision", "decision", klog.KObj(sc.decision), "clusters", clusters)
	return r.refreshFollowers(ctx, sc)
}

// sameClusters compares two decision lists by cluster name, in order.
func sameClusters(a, b []ocmv1beta1.ClusterDecision) bool {
	return slices.EqualFunc(a, b, func(x, y ocmv1beta1.ClusterDecision) bool { return x.ClusterName == y.ClusterName })
}
