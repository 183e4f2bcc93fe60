package drpc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
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
// deleting the DRPlacementControl leaves the decision as it is.
//
// On an OCM hub the placement controller writes a Placement's decisions itself, under the same
// name, and deletes every other decision labelled with the placement's name, unless the Placement
// carries ocmv1beta1.PlacementDisableAnnotation (open-cluster-management-io/ocm
// pkg/placement/controllers/scheduling/scheduling_controller.go). Left alone, it rewrites
// drover's decision by its own rules and the application lands where OCM puts it: back on a lost
// cluster after a failover, or started during a relocation's final sync. So drover disables the
// Placement's scheduling before it writes a decision (steerPlacement). On unprotect it does not
// hand the Placement back once it has placed the application: OCM's default prioritizers would
// move the application away from its data (releasePlacement says why and what a person does
// instead).

// LabelDecisionOwner marks a PlacementDecision written by drover with its DRPlacementControl.
const LabelDecisionOwner = "drover.io/drpc"

// AnnotationSteeredBy on an OCM Placement names, as namespace/name, the DRPlacementControl that
// writes the Placement's decisions; drover sets it with ocmv1beta1.PlacementDisableAnnotation
// and refuses a second DRPlacementControl naming the same Placement.
//
// The claim is an annotation on the Placement because it must be seen by whoever reads the
// Placement: every hub after any restart (it is not re-observable anywhere else) and a person
// with kubectl wondering why OCM ignores the Placement. An owner reference could not name a
// DRPlacementControl of another namespace (spec.placementRef.namespace), and would make the
// garbage collector delete the Placement with the DRPlacementControl; a label value cannot hold
// namespace/name, and nothing selects Placements by it. The value carries the namespace because
// DRPlacementControls of one name in two namespaces are two applications.
const AnnotationSteeredBy = "drover.io/steered-by"

// AnnotationSchedulingLeftDisabled on an OCM Placement says that drover, unprotecting the
// application, left the Placement's scheduling disabled so that the application stays where its
// data is, and how to hand the Placement back to OCM (releasePlacement). A DRPlacementControl
// that steers the Placement again removes it.
const AnnotationSchedulingLeftDisabled = "drover.io/scheduling-left-disabled"

// placementKey is the namespace and name of the application's Placement.
func placementKey(drpc *v1alpha1.DRPlacementControl) client.ObjectKey {
	ref := drpc.Spec.PlacementRef
	ns := ref.Namespace
	if ns == "" {
		ns = drpc.Namespace
	}
	return client.ObjectKey{Namespace: ns, Name: ref.Name}
}

// decisionKey is the namespace and name of the application's PlacementDecision.
func decisionKey(drpc *v1alpha1.DRPlacementControl) client.ObjectKey {
	key := placementKey(drpc)
	key.Name += "-decision-1"
	return key
}

// steerPlacement disables OCM's scheduling of the application's Placement and records this
// DRPlacementControl as the one steering it, before any decision is written. A Placement
// steered by another DRPlacementControl that exists invalidates this one; a claim whose
// DRPlacementControl is gone is taken over.
//
// A Placement that does not exist, or a hub that does not serve the kind (Argo CD reading the
// decisions with no OCM installed), is tolerated: no placement controller schedules a
// Placement that is not there, so none fights drover's decision. A Placement created later is
// claimed at the DRPlacementControl's next reconcile; until then OCM may write the decision
// once, and drover writes its own back then.
func (r *Reconciler) steerPlacement(ctx context.Context, sc *scope) error {
	if !sc.placementMode() {
		return nil
	}
	key := placementKey(sc.drpc)
	p := &ocmv1beta1.Placement{}
	err := r.placements.Get(ctx, r.Client, r.APIReader, key, p)
	switch {
	case apierrors.IsNotFound(err), apimeta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get Placement %s: %w", key, err)
	}
	sc.placement = p
	me := client.ObjectKeyFromObject(sc.drpc).String()
	if by := p.Annotations[AnnotationSteeredBy]; by != "" && by != me {
		exists, err := r.drpcExists(ctx, by)
		if err != nil {
			return err
		}
		if exists {
			return sc.invalidate(v1alpha1.ReasonPlacementSteered, fmt.Sprintf(
				"Placement %s is already steered by DRPlacementControl %s, which writes its decisions: name another Placement in spec.placementRef, or delete one of the two DRPlacementControls", key, by))
		}
	}
	_, leftDisabled := p.Annotations[AnnotationSchedulingLeftDisabled]
	if p.Annotations[AnnotationSteeredBy] == me && p.Annotations[ocmv1beta1.PlacementDisableAnnotation] == "true" && !leftDisabled {
		return nil
	}
	before := p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[ocmv1beta1.PlacementDisableAnnotation] = "true"
	p.Annotations[AnnotationSteeredBy] = me
	delete(p.Annotations, AnnotationSchedulingLeftDisabled)
	// Optimistic: of two DRPlacementControls claiming the Placement at once, one wins.
	if err := r.Client.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to disable OCM's scheduling of Placement %s: %w", key, err)
	}
	r.placements.Seen(p)
	ctrl.LoggerFrom(ctx).Info("Disabled OCM's scheduling of the Placement: drover writes its decisions", "placement", klog.KObj(p))
	return nil
}

// drpcExists reports whether the DRPlacementControl namespace/name exists.
func (r *Reconciler) drpcExists(ctx context.Context, namespacedName string) (bool, error) {
	ns, name, _ := strings.Cut(namespacedName, "/")
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.DRPlacementControl{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("failed to get DRPlacementControl %s: %w", namespacedName, err)
	}
	return true, nil
}

// releasePlacement ends this DRPlacementControl's claim on the application's Placement when it
// is unprotected, and leaves the application where its data is.
//
// Handing the Placement back to OCM's scheduler (removing the disable annotation) is not safe:
// OCM's default prioritizers are Balance and Steady at weight 1 each
// (open-cluster-management-io/ocm pkg/placement/controllers/scheduling/schedule.go). Steady
// gives the cluster the decision names +100, but Balance gives the cluster that other
// placements use most −100 (plugins/balance), so an application on the busiest cluster scores
// 0 there and 100 on a cluster no other placement uses: the scheduler moves it at once, and
// the GitOps tool starts it there over new, empty PVCs while its data stays behind (the
// unprotected peer holds no replica any more). Any later scheduling pass can do the same as
// other placements come and go. A Placement pinned by its own rules (a cluster selector naming
// one cluster, or prioritizer weights where Steady outweighs twice Balance) would stay, but the
// hub does not read those rules, and a person may change them later.
//
// So when drover wrote a decision, unprotect keeps it as it is (labelled and owned as OCM's own,
// so OCM adopts it once scheduling resumes) and leaves the Placement's scheduling disabled,
// replacing drover's claim with AnnotationSchedulingLeftDisabled, which says why and how to hand
// the Placement back; a Warning event on the Placement says the same. A Placement drover never
// wrote a decision for goes back to OCM as it was. A Placement steered by another
// DRPlacementControl, or by none, is left alone.
func (r *Reconciler) releasePlacement(ctx context.Context, drpc *v1alpha1.DRPlacementControl) error {
	if drpc.Spec.PlacementRef == nil {
		return nil
	}
	key := placementKey(drpc)
	p := &ocmv1beta1.Placement{}
	err := r.placements.Get(ctx, r.Client, r.APIReader, key, p)
	switch {
	case apierrors.IsNotFound(err), apimeta.IsNoMatchError(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get Placement %s: %w", key, err)
	}
	if p.Annotations[AnnotationSteeredBy] != client.ObjectKeyFromObject(drpc).String() {
		return nil
	}
	pd := &ocmv1beta1.PlacementDecision{}
	switch err := r.decisions.Get(ctx, r.Client, r.APIReader, decisionKey(drpc), pd); {
	case apierrors.IsNotFound(err):
		pd = nil
	case err != nil:
		return fmt.Errorf("failed to get PlacementDecision %s: %w", decisionKey(drpc), err)
	default:
		if err := r.ensureDecisionMeta(ctx, &scope{drpc: drpc, placement: p, decision: pd}); err != nil {
			return err
		}
	}
	before := p.DeepCopy()
	delete(p.Annotations, AnnotationSteeredBy)
	note := ""
	if pd == nil {
		delete(p.Annotations, ocmv1beta1.PlacementDisableAnnotation)
	} else {
		note = leftDisabledNote(drpc, pd)
		p.Annotations[AnnotationSchedulingLeftDisabled] = note
	}
	if err := r.Client.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to end the claim of DRPlacementControl %s on Placement %s: %w", klog.KObj(drpc), key, err)
	}
	r.placements.Forget(key)
	if pd == nil {
		ctrl.LoggerFrom(ctx).Info("Enabled OCM's scheduling of the Placement again: drover never placed the application", "placement", klog.KObj(p))
		return nil
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(p, drpc, "Warning", v1alpha1.EventPlacementKept, v1alpha1.EventPlacementKept, "%s", note)
	}
	ctrl.LoggerFrom(ctx).Info("Left the Placement's scheduling disabled: OCM's default prioritizers could move the application away from its data",
		"placement", klog.KObj(p), "decision", klog.KObj(pd))
	return nil
}

// leftDisabledNote says, on a Placement drover stopped steering, why its scheduling stays
// disabled and how to hand it back to OCM.
func leftDisabledNote(drpc *v1alpha1.DRPlacementControl, pd *ocmv1beta1.PlacementDecision) string {
	where := "names no cluster (the DRPlacementControl was deleted during a relocation's final sync)"
	if clusters := decidedClusters(pd); len(clusters) > 0 {
		where = "names " + strings.Join(clusters, ", ") + ", where the application and its data are"
	}
	return fmt.Sprintf("DRPlacementControl %s was deleted and left this Placement's scheduling disabled: PlacementDecision %s %s. "+
		"OCM's default prioritizers (Balance and Steady, weight 1 each) move an application off the cluster other placements use most, away from its data. "+
		"To hand the Placement back to OCM, first pin it where the data is (spec.predicates naming that cluster, or a spec.prioritizerPolicy whose Steady weight is more than twice Balance's), "+
		"then remove the annotations %s and %s",
		klog.KObj(drpc), pd.Name, where, ocmv1beta1.PlacementDisableAnnotation, AnnotationSchedulingLeftDisabled)
}

// decidedClusters returns the clusters a decision names.
func decidedClusters(pd *ocmv1beta1.PlacementDecision) []string {
	out := make([]string, 0, len(pd.Status.Decisions))
	for _, d := range pd.Status.Decisions {
		out = append(out, d.ClusterName)
	}
	return out
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
	return decidedClusters(sc.decision)
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
		pd := &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: decisionLabels(sc.drpc), OwnerReferences: sc.decisionOwners()}}
		if err := r.Client.Create(ctx, pd, client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("failed to create PlacementDecision %s: %w", key, err)
		}
		r.decisions.Seen(pd)
		sc.decision = pd
	}
	if err := r.ensureDecisionMeta(ctx, sc); err != nil {
		return err
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

// decisionLabels are the labels of the application's PlacementDecision: those OCM's placement
// controller gives the decision of a Placement without decision groups (the placement's name,
// the default group's empty name and its index 0: OCM's decision tracker refuses a decision
// without a group index), and drover's own.
func decisionLabels(drpc *v1alpha1.DRPlacementControl) map[string]string {
	return map[string]string{
		ocmv1beta1.PlacementLabel:          drpc.Spec.PlacementRef.Name,
		ocmv1beta1.DecisionGroupNameLabel:  "",
		ocmv1beta1.DecisionGroupIndexLabel: "0",
		LabelDecisionOwner:                 drpc.Name,
	}
}

// decisionOwners are the owner references of the application's PlacementDecision: its
// Placement as controller, as OCM's placement controller writes them (so the garbage collector
// deletes the decision with its Placement, and OCM adopts it when it schedules the Placement
// again); none when the hub has no Placement of that name.
func (sc *scope) decisionOwners() []metav1.OwnerReference {
	if sc.placement == nil || sc.placement.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{*metav1.NewControllerRef(sc.placement, ocmv1beta1.GroupVersion.WithKind("Placement"))}
}

// ensureDecisionMeta gives the application's PlacementDecision the labels and owner reference
// OCM's own decisions carry when it lacks them (a decision written before, or before its
// Placement existed). Other labels and owners are left as they are; another controller of the
// decision is replaced by the Placement.
func (r *Reconciler) ensureDecisionMeta(ctx context.Context, sc *scope) error {
	pd := sc.decision
	before := pd.DeepCopy()
	if pd.Labels == nil {
		pd.Labels = map[string]string{}
	}
	maps.Copy(pd.Labels, decisionLabels(sc.drpc))
	for _, want := range sc.decisionOwners() {
		pd.OwnerReferences = slices.DeleteFunc(pd.OwnerReferences, func(o metav1.OwnerReference) bool {
			return o.UID == want.UID || (o.Controller != nil && *o.Controller)
		})
		pd.OwnerReferences = append(pd.OwnerReferences, want)
	}
	if equality.Semantic.DeepEqual(before.ObjectMeta, pd.ObjectMeta) {
		return nil
	}
	if err := r.Client.Patch(ctx, pd, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		sc.decision = before
		return fmt.Errorf("failed to label PlacementDecision %s as OCM's: %w", klog.KObj(pd), err)
	}
	r.decisions.Seen(pd)
	return nil
}

// sameClusters compares two decision lists by cluster name, in order.
func sameClusters(a, b []ocmv1beta1.ClusterDecision) bool {
	return slices.EqualFunc(a, b, func(x, y ocmv1beta1.ClusterDecision) bool { return x.ClusterName == y.ClusterName })
}
