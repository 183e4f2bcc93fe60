package drill

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/podsecurity"
	"github.com/drover-io/drover/internal/tenancy"
)

// sandboxKey is where the drill's DrillSandbox lives on the target cluster: beside the
// application's VolumeReplicationGroup, which the hub names after the DRPlacementControl.
func sandboxKey(d *v1alpha1.DRDrill) client.ObjectKey {
	return client.ObjectKey{Namespace: d.Namespace, Name: sandboxName(d)}
}

// sandbox reads the drill's DrillSandbox on the target cluster, creating it when it is missing
// and create is set (the drill has no result yet). A nil sandbox comes with the result to
// return: the cluster does not answer, or the sandbox was just created.
func (r *Reconciler) sandbox(ctx context.Context, sc *scope, create bool) (*v1alpha1.DrillSandbox, ctrl.Result, error) {
	cl, err := r.Gateway.Client(ctx, sc.drill.Status.TargetCluster)
	if err != nil {
		return nil, unreachable(sc, err), nil
	}
	box := &v1alpha1.DrillSandbox{}
	err = cl.Get(ctx, sandboxKey(sc.drill), box)
	switch {
	case err == nil:
		return box, ctrl.Result{}, nil
	case !apierrors.IsNotFound(err):
		return nil, unreachable(sc, err), nil
	case !create:
		// The result is known and the sandbox went (deleted by hand): nothing is left to keep.
		return &v1alpha1.DrillSandbox{}, ctrl.Result{}, nil
	}
	level, err := r.sandboxLevel(ctx, sc.drill.Namespace)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	box = r.newSandbox(sc, level)
	if err := cl.Create(ctx, box, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, ctrl.Result{}, fmt.Errorf("failed to create DrillSandbox %s on %s: %w", klog.KObj(box), sc.drill.Status.TargetCluster, err)
	}
	ctrl.LoggerFrom(ctx).Info("Created the drill's sandbox", "sandbox", klog.KObj(box), "cluster", sc.drill.Status.TargetCluster)
	return nil, ctrl.Result{RequeueAfter: requeueRunning}, nil
}

// newSandbox is the DrillSandbox the drill asks the target cluster's agent for, at the Pod
// Security level level. A check without a deadline gets the drill's timeout: the Job stops when
// the drill would, even should the hub not be there to tear the sandbox down.
func (r *Reconciler) newSandbox(sc *scope, level api.Level) *v1alpha1.DrillSandbox {
	key := sandboxKey(sc.drill)
	check := sc.drill.Spec.Check.DeepCopy()
	if check != nil && check.ActiveDeadlineSeconds == nil {
		check.ActiveDeadlineSeconds = ptr.To(int64(sc.timeout() / time.Second))
	}
	return &v1alpha1.DrillSandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
			"drover.io/drill": drillID(sc.drill), "app.kubernetes.io/managed-by": "drover",
		}},
		Spec: v1alpha1.DrillSandboxSpec{
			VRGName: sc.drill.Spec.DRPCName, DrillID: drillID(sc.drill),
			Check: check, CheckNamespace: sc.drill.Spec.CheckNamespace,
			PodSecurity: v1alpha1.DrillPodSecurity(level),
		},
	}
}

// sandboxLevel is the Pod Security level the drills of namespace ns run their sandboxes at:
// restricted, or baseline when an administrator labelled the namespace
// tenancy.LabelDrillPodSecurity=baseline. Namespaces are not watched: read once per decision.
func (r *Reconciler) sandboxLevel(ctx context.Context, ns string) (api.Level, error) {
	n := &corev1.Namespace{}
	if err := r.apiReader().Get(ctx, client.ObjectKey{Name: ns}, n); client.IgnoreNotFound(err) != nil {
		return "", fmt.Errorf("failed to get namespace %s to read its drills' Pod Security level: %w", ns, err)
	}
	if n.Labels[tenancy.LabelDrillPodSecurity] == string(podsecurity.Baseline) {
		return podsecurity.Baseline, nil
	}
	return podsecurity.Restricted, nil
}

// deleteSandbox deletes the drill's DrillSandbox and reports whether it is gone (the agent's
// finalizer holds it until everything it made is removed). A drill that never got a target
// has no sandbox.
func (r *Reconciler) deleteSandbox(ctx context.Context, sc *scope) (bool, ctrl.Result) {
	target := sc.drill.Status.TargetCluster
	if target == "" {
		return true, ctrl.Result{}
	}
	cl, err := r.Gateway.Client(ctx, target)
	if err != nil {
		return false, unreachable(sc, err)
	}
	box := &v1alpha1.DrillSandbox{ObjectMeta: metav1.ObjectMeta{Namespace: sc.drill.Namespace, Name: sandboxName(sc.drill)}}
	if err := cl.Delete(ctx, box); err != nil {
		if apierrors.IsNotFound(err) {
			return true, ctrl.Result{}
		}
		return false, unreachable(sc, err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(box), box); apierrors.IsNotFound(err) {
		return true, ctrl.Result{}
	}
	return false, ctrl.Result{RequeueAfter: requeueRunning}
}

// copySandbox copies what the agent built and saw into the drill's record: its steps (between
// the hub's Accepted and Kept), mode, namespaces, volumes with their RPO, readiness, check,
// result and the RTO.
func copySandbox(sc *scope, box *v1alpha1.DrillSandbox) {
	st := &sc.drill.Status
	for _, s := range box.Status.Steps {
		if s.Name != stepAccepted && s.Name != stepKept && s.Name != stepTearingDown {
			sc.putStep(s)
		}
	}
	if box.Status.Mode != "" {
		st.Mode = box.Status.Mode
	}
	if len(box.Status.Namespaces) > 0 {
		st.Namespaces = box.Status.Namespaces
	}
	if len(box.Status.Readiness) > 0 {
		st.Readiness = box.Status.Readiness
	}
	if box.Status.Check != nil {
		st.Check = box.Status.Check
	}
	if len(box.Status.Volumes) > 0 {
		st.Volumes, st.RPOSeconds = withRPO(box.Status.Volumes, st.StartTime.Time)
	}
	if st.Result != "" || box.Status.Result == "" {
		return // the result is decided once
	}
	st.Result = box.Status.Result
	if box.Status.Result == v1alpha1.DrillResultPassed && box.Status.ReadyTime != nil {
		rto := int64(box.Status.ReadyTime.Sub(st.StartTime.Time).Round(time.Second) / time.Second)
		st.RTOSeconds = &rto
	}
}

// withRPO returns the volumes with each one's RPO (the age of its point at the drill's start,
// never below zero) and the worst of them; nil when no volume has a point.
func withRPO(volumes []v1alpha1.DrillVolume, start time.Time) ([]v1alpha1.DrillVolume, *int64) {
	out := make([]v1alpha1.DrillVolume, len(volumes))
	var worst *int64
	for i, v := range volumes {
		out[i] = v
		if v.PointTime == nil {
			continue
		}
		rpo := max(int64(start.Sub(v.PointTime.Time).Round(time.Second)/time.Second), 0)
		out[i].RPOSeconds = &rpo
		if worst == nil || rpo > *worst {
			worst = &rpo
		}
	}
	return out, worst
}

// watchPrimary records whether the primary's replication stays healthy during the drill: every
// group sync within twice the policy's interval (the hub's own threshold of Protected). Once
// Failed, it stays Failed.
func (r *Reconciler) watchPrimary(sc *scope) {
	st := &sc.drill.Status
	if p := st.PrimaryReplication; p != nil && p.Result == v1alpha1.DrillResultFailed {
		return
	}
	check := &v1alpha1.DrillCheck{Name: "PrimaryReplication", Result: v1alpha1.DrillResultPassed,
		Message: fmt.Sprintf("every group sync of the primary %s has kept within twice the interval (plus the storage's status refresh) so far; last %s", st.PrimaryCluster, lastSync(sc))}
	switch {
	case sc.drpc == nil || sc.interval == 0:
		if st.PrimaryReplication != nil {
			return // keep what was observed
		}
		check.Result, check.Message = v1alpha1.DrillResultSkipped, "the application's DRPlacementControl or its policy's interval could not be read"
	case sc.drpc.Status.LastGroupSyncTime == nil:
		// The hub does not know now (the primary does not answer, or the hub has just started):
		// the next sync it sees tells how long replication paused.
		if st.PrimaryReplication != nil {
			return
		}
		check.Result, check.Message = v1alpha1.DrillResultSkipped, fmt.Sprintf("no group sync of the primary %s observed yet", st.PrimaryCluster)
	default:
		staleAfter := v1alpha1.SyncStaleAfter(sc.interval, sc.drpc.Status.SyncRefreshInterval)
		if age := sc.now.Sub(sc.drpc.Status.LastGroupSyncTime.Time); age > staleAfter {
			check.Result = v1alpha1.DrillResultFailed
			check.Message = fmt.Sprintf("at %s the primary %s's last group sync was %s old, more than %s: "+
				"look at `drover status %s` for why replication lagged", sc.now.UTC().Format(time.RFC3339), st.PrimaryCluster,
				age.Round(time.Second), v1alpha1.SyncStaleAllowance(sc.interval, sc.drpc.Status.SyncRefreshInterval), sc.drpc.Name)
		}
	}
	st.PrimaryReplication = check
}

// lastSync tells the DRPlacementControl's last group sync.
func lastSync(sc *scope) string {
	if sc.drpc == nil || sc.drpc.Status.LastGroupSyncTime == nil {
		return "unknown"
	}
	return "at " + sc.drpc.Status.LastGroupSyncTime.UTC().Format(time.RFC3339)
}
