package vrg

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// The application after a failover or relocation (WorkloadsReady). The restore ends when the
// PVCs are Bound and the objects created, but the application has moved only once its pods run
// there: a pod refused by an admission webhook or a quota, a PVC that never binds, a pod that
// cannot be scheduled, and the application is down while every step of drover succeeded. So a
// promoted group watches its workloads (the Deployments and StatefulSets of its namespaces that
// mount its PVCs) until they run, and says why they do not: the workload's own failure
// condition, the latest warning event of the PVC or the workload, a pending pod's reason. The
// hub keeps the DRPC's Available False with that reason until they run.
//
// Once the workloads run, the condition stays True for the generation and nothing is read
// again: what happens to the application later is its owner's to watch. Reads go to the API
// server, not a cache, and only in that window after a promotion. A group whose namespaces have
// no such workload (a GitOps tool may deploy the application after the promotion) waits for one
// for workloadsWindow, then reports True, saying that there was nothing to judge.

// +kubebuilder:rbac:groups="",resources=events,verbs=list

const (
	// requeueWorkloads is how often a promoted group looks at its workloads until they run.
	requeueWorkloads = 2 * time.Second
	// workloadsWindow is how long after its restore a promoted group waits for a workload that
	// mounts its PVCs to appear.
	workloadsWindow = 5 * time.Minute
)

// checkWorkloads judges WorkloadsReady on a group promoted by a failover or relocation whose
// restore is complete.
func (r *Reconciler) checkWorkloads(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if !promoting(sc.vrg) || sc.restore == nil || !sc.restore.complete() || workloadsJudged(sc.vrg) {
		return ctrl.Result{}, nil
	}
	if orderPending(sc.vrg) {
		// Not judged before the recipe's order has created every workload (order.go): a group
		// Ready would otherwise pass for the application.
		msg := "the workloads start in the order of the recipe"
		if c := sc.kubeObjectsReady; c != nil && c.Status == metav1.ConditionFalse {
			msg += "; " + c.Message
		}
		sc.workloadsReady = ptrTo(condition(v1alpha1.ConditionWorkloadsReady, false, v1alpha1.ReasonProgressing, msg))
		return ctrl.Result{}, nil
	}
	claims := map[string]bool{}
	for _, ps := range sc.pvcs {
		claims[ps.pvc.Namespace+"/"+ps.pvc.Name] = true
	}
	var found int
	var problems []workloadProblem
	for _, ns := range protectedNamespaces(sc.vrg) {
		n, p, err := r.namespaceWorkloads(ctx, ns, claims)
		if err != nil {
			return ctrl.Result{}, err
		}
		found += n
		problems = append(problems, p...)
	}
	for _, ps := range sc.pvcs {
		if ps.pvc.Status.Phase != corev1.ClaimBound && ps.pvc.DeletionTimestamp.IsZero() {
			problems = append(problems, r.pvcProblem(ctx, ps.pvc))
		}
	}
	c := workloadsCondition(found, problems, restoredFor(sc.vrg))
	sc.workloadsReady = &c
	if c.Status != metav1.ConditionTrue {
		return ctrl.Result{RequeueAfter: requeueWorkloads}, nil
	}
	return ctrl.Result{}, nil
}

// workloadsJudged reports whether WorkloadsReady is True for the group's generation already.
func workloadsJudged(vrg *v1alpha1.VolumeReplicationGroup) bool {
	c := apimeta.FindStatusCondition(vrg.Status.Conditions, v1alpha1.ConditionWorkloadsReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == vrg.Generation
}

// restoredFor is how long ago the group's restore completed (ClusterDataReady turned True).
func restoredFor(vrg *v1alpha1.VolumeReplicationGroup) time.Duration {
	c := apimeta.FindStatusCondition(vrg.Status.Conditions, v1alpha1.ConditionClusterDataReady)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != vrg.Generation {
		return 0
	}
	return time.Since(c.LastTransitionTime.Time)
}

// workloadProblem is why one workload or PVC does not run: a reason constant and a message.
type workloadProblem struct {
	reason, message string
}

// workloadsCondition is WorkloadsReady from what was found: the first problem (a refusal before
// a PVC before a pod still starting), else True; with no workload found, False while the window
// after the restore lasts.
func workloadsCondition(found int, problems []workloadProblem, since time.Duration) metav1.Condition {
	t := v1alpha1.ConditionWorkloadsReady
	if len(problems) > 0 {
		rank := map[string]int{v1alpha1.ReasonPodsRefused: 0, v1alpha1.ReasonPVCNotBound: 1, v1alpha1.ReasonPodsNotRunning: 2}
		sort.SliceStable(problems, func(i, j int) bool { return rank[problems[i].reason] < rank[problems[j].reason] })
		msg := problems[0].message
		if len(problems) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(problems)-1)
		}
		return condition(t, false, problems[0].reason, msg)
	}
	if found == 0 && since < workloadsWindow {
		return condition(t, false, v1alpha1.ReasonProgressing,
			"waiting for a Deployment or StatefulSet that mounts the group's PVCs (a GitOps tool deploys the application after the promotion)")
	}
	if found == 0 {
		return condition(t, true, v1alpha1.ReasonSucceeded, fmt.Sprintf(
			"no Deployment or StatefulSet mounts the group's PVCs %s after the restore: nothing to judge", workloadsWindow))
	}
	return condition(t, true, v1alpha1.ReasonSucceeded, fmt.Sprintf("the %d workloads that mount the group's PVCs run", found))
}

// namespaceWorkloads returns how many Deployments and StatefulSets of a namespace mount the
// group's claims, and why those that do not run do not.
func (r *Reconciler) namespaceWorkloads(ctx context.Context, ns string, claims map[string]bool) (int, []workloadProblem, error) {
	deployments := &appsv1.DeploymentList{}
	if err := r.APIReader.List(ctx, deployments, client.InNamespace(ns)); err != nil {
		return 0, nil, fmt.Errorf("failed to list Deployments in %s: %w", ns, err)
	}
	statefulSets := &appsv1.StatefulSetList{}
	if err := r.APIReader.List(ctx, statefulSets, client.InNamespace(ns)); err != nil {
		return 0, nil, fmt.Errorf("failed to list StatefulSets in %s: %w", ns, err)
	}
	found := 0
	var problems []workloadProblem
	for i := range deployments.Items {
		d := &deployments.Items[i]
		if !d.DeletionTimestamp.IsZero() || !mountsAny(ns, d.Spec.Template.Spec, nil, "", claims) {
			continue
		}
		found++
		if p := r.deploymentProblem(ctx, d); p != nil {
			problems = append(problems, *p)
		}
	}
	for i := range statefulSets.Items {
		s := &statefulSets.Items[i]
		if !s.DeletionTimestamp.IsZero() || !mountsAny(ns, s.Spec.Template.Spec, s.Spec.VolumeClaimTemplates, s.Name, claims) {
			continue
		}
		found++
		if p := r.statefulSetProblem(ctx, s); p != nil {
			problems = append(problems, *p)
		}
	}
	return found, problems, nil
}

// mountsAny reports whether a pod template (with a StatefulSet's claim templates) mounts one of
// the claims: by name, or <template>-<statefulset>-<ordinal>.
func mountsAny(ns string, spec corev1.PodSpec, templates []corev1.PersistentVolumeClaim, sts string, claims map[string]bool) bool {
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil && claims[ns+"/"+v.PersistentVolumeClaim.ClaimName] {
			return true
		}
	}
	for _, t := range templates {
		prefix := ns + "/" + t.Name + "-" + sts + "-"
		for claim := range claims {
			if strings.HasPrefix(claim, prefix) {
				return true
			}
		}
	}
	return false
}

// deploymentProblem says why a Deployment has fewer available pods than it asks for; nil when
// it has them. A ReplicaFailure condition (its ReplicaSet could not create a pod) says it best.
func (r *Reconciler) deploymentProblem(ctx context.Context, d *appsv1.Deployment) *workloadProblem {
	want := ptr.Deref(d.Spec.Replicas, 1)
	if d.Status.AvailableReplicas >= want && d.Status.ObservedGeneration >= d.Generation {
		return nil
	}
	what := fmt.Sprintf("Deployment %s/%s has %d of %d pods available", d.Namespace, d.Name, d.Status.AvailableReplicas, want)
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return &workloadProblem{v1alpha1.ReasonPodsRefused, fmt.Sprintf("%s: %s: %s", what, c.Reason, c.Message)}
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return &workloadProblem{v1alpha1.ReasonPodsNotRunning, what}
	}
	return r.podsProblem(ctx, d.Namespace, sel, what)
}

// statefulSetProblem says why a StatefulSet has fewer ready pods than it asks for; nil when it
// has them. A StatefulSet reports a pod it could not create only as a FailedCreate event.
func (r *Reconciler) statefulSetProblem(ctx context.Context, s *appsv1.StatefulSet) *workloadProblem {
	want := ptr.Deref(s.Spec.Replicas, 1)
	if s.Status.ReadyReplicas >= want && s.Status.ObservedGeneration >= s.Generation {
		return nil
	}
	what := fmt.Sprintf("StatefulSet %s/%s has %d of %d pods ready", s.Namespace, s.Name, s.Status.ReadyReplicas, want)
	if s.Status.Replicas < want {
		if e := r.latestWarning(ctx, s.Namespace, s.UID, "FailedCreate"); e != "" {
			return &workloadProblem{v1alpha1.ReasonPodsRefused, what + ": FailedCreate: " + e}
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
	if err != nil {
		return &workloadProblem{v1alpha1.ReasonPodsNotRunning, what}
	}
	return r.podsProblem(ctx, s.Namespace, sel, what)
}

// podsProblem names the first pod of a workload that does not run and why.
func (r *Reconciler) podsProblem(ctx context.Context, ns string, sel labels.Selector, what string) *workloadProblem {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return &workloadProblem{v1alpha1.ReasonPodsNotRunning, what}
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range pods.Items {
		p := &pods.Items[i]
		if why := podWaiting(p); why != "" {
			if e := r.latestWarning(ctx, ns, p.UID, ""); e != "" {
				why += "; " + e
			}
			return &workloadProblem{v1alpha1.ReasonPodsNotRunning, fmt.Sprintf("%s: pod %s %s", what, p.Name, why)}
		}
	}
	return &workloadProblem{v1alpha1.ReasonPodsNotRunning, what + ": its pods are starting"}
}

// podWaiting says what a pod that is not Running and Ready waits for; "" for one that runs.
func podWaiting(p *corev1.Pod) string {
	if !p.DeletionTimestamp.IsZero() {
		return "is being deleted"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("is not scheduled: %s: %s", c.Reason, c.Message)
		}
	}
	if p.Status.Phase != corev1.PodRunning {
		return fmt.Sprintf("is %s", p.Status.Phase)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			return "is not ready"
		}
	}
	return ""
}

// pvcProblem says why a PVC of the group is not Bound, with its latest warning event.
func (r *Reconciler) pvcProblem(ctx context.Context, pvc *corev1.PersistentVolumeClaim) workloadProblem {
	msg := fmt.Sprintf("PVC %s/%s is %s", pvc.Namespace, pvc.Name, pvc.Status.Phase)
	if e := r.latestWarning(ctx, pvc.Namespace, pvc.UID, ""); e != "" {
		msg += ": " + e
	}
	return workloadProblem{v1alpha1.ReasonPVCNotBound, msg}
}

// latestWarning is "<reason>: <message>" of the newest Warning event of an object (of the given
// reason when not empty), or "".
func (r *Reconciler) latestWarning(ctx context.Context, ns string, uid types.UID, reason string) string {
	list := &corev1.EventList{}
	sel := fields.Set{"involvedObject.uid": string(uid), "type": corev1.EventTypeWarning}
	if reason != "" {
		sel["reason"] = reason
	}
	if err := r.APIReader.List(ctx, list, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: sel.AsSelector()}); err != nil || len(list.Items) == 0 {
		return ""
	}
	latest := slices.MaxFunc(list.Items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	if reason != "" {
		return latest.Message
	}
	return latest.Reason + ": " + latest.Message
}

// eventTime is when an event last happened.
func eventTime(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
