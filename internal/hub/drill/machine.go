package drill

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/drillcheck"
)

// Requeue delays. The hub does not watch DrillSandboxes: a running drill reads its sandbox at
// each pass, and passes every requeueRunning while it runs or is torn down.
const (
	requeueRunning     = 2 * time.Second
	requeueUnreachable = 10 * time.Second
)

// state is one state of the machine.
type state func(ctx context.Context, sc *scope) (ctrl.Result, error)

// next chooses the state function from the phase.
func (r *Reconciler) next(sc *scope) state {
	switch sc.drill.Status.Phase {
	case v1alpha1.DrillRunning:
		return r.running
	case v1alpha1.DrillTearingDown:
		return r.tearingDown
	default:
		return r.pending
	}
}

// observe reads the drill's DRPlacementControl and its policy; either may be missing.
func (r *Reconciler) observe(ctx context.Context, sc *scope) error {
	drpc := &v1alpha1.DRPlacementControl{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: sc.drill.Namespace, Name: sc.drill.Spec.DRPCName}, drpc)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get DRPlacementControl %s/%s: %w", sc.drill.Namespace, sc.drill.Spec.DRPCName, err)
	}
	sc.drpc = drpc
	policy := &v1alpha1.DRPolicy{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: drpc.Spec.DRPolicyRef.Name}, policy); err != nil {
		return client.IgnoreNotFound(err)
	}
	sc.policy = policy
	if d, err := policy.Spec.SchedulingInterval.Duration(); err == nil {
		sc.interval = d
	}
	return nil
}

// settled reports whether a DRPlacementControl is settled and asks for no action that would
// move the application: the state a drill starts from and keeps to.
func settled(d *v1alpha1.DRPlacementControl) bool {
	st, spec := &d.Status, &d.Spec
	switch {
	case !d.DeletionTimestamp.IsZero() || st.CurrentPrimary == "":
		return false
	case st.Phase != v1alpha1.PhaseDeployed && st.Phase != v1alpha1.PhaseFailedOver && st.Phase != v1alpha1.PhaseRelocated:
		return false
	case spec.Action == v1alpha1.ActionFailover && spec.FailoverCluster != st.CurrentPrimary:
		return false
	case spec.Action == v1alpha1.ActionRelocate && spec.PreferredCluster != st.CurrentPrimary:
		return false
	}
	return true
}

// pending decides whether the drill may start: it refuses it with a reason and what to do, or
// accepts it and records its start, target and primary.
func (r *Reconciler) pending(ctx context.Context, sc *scope) (ctrl.Result, error) {
	st := &sc.drill.Status
	st.Phase = v1alpha1.DrillPending
	reason, msg, err := r.refusal(ctx, sc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if reason == reasonWait {
		// The hub does not know yet (a hub just started, a primary that does not answer): the
		// drill waits, up to its timeout, rather than being refused for a passing doubt.
		if sc.now.Before(sc.drill.CreationTimestamp.Add(sc.timeout())) {
			sc.setAccepted(metav1.ConditionUnknown, v1alpha1.ReasonNotProtected, msg)
			return ctrl.Result{RequeueAfter: requeueRunning}, nil
		}
		reason = v1alpha1.ReasonNotProtected
	}
	if reason != "" {
		st.Phase = v1alpha1.DrillRefused
		end := metav1.NewTime(sc.now)
		st.EndTime = &end
		sc.setAccepted(metav1.ConditionFalse, reason, msg)
		return ctrl.Result{}, nil
	}
	start := metav1.NewTime(sc.now)
	st.Phase, st.StartTime = v1alpha1.DrillRunning, &start
	st.TargetCluster, st.PrimaryCluster = r.target(sc), sc.drpc.Status.CurrentPrimary
	msg = fmt.Sprintf("the sandbox %s/%s is made on %s from the replicated data; the application keeps running on %s, untouched",
		sc.drill.Namespace, sandboxName(sc.drill), st.TargetCluster, st.PrimaryCluster)
	sc.setAccepted(metav1.ConditionTrue, v1alpha1.ReasonDrillStarted, msg)
	sc.putStep(v1alpha1.DrillStep{Name: stepAccepted, Started: &start, Finished: &start, Result: v1alpha1.DrillResultPassed, Message: msg})
	return ctrl.Result{RequeueAfter: time.Millisecond}, nil
}

// target is the spec's target cluster, or the peer of the application's primary.
func (r *Reconciler) target(sc *scope) string {
	if t := sc.drill.Spec.TargetCluster; t != "" {
		return t
	}
	peer, _ := sc.policy.Spec.Peer(sc.drpc.Status.CurrentPrimary)
	return peer
}

// reasonWait is refusal's answer when the hub does not know yet whether the drill may start
// (Protected Unknown or not observed).
const reasonWait = "Wait"

// refusal says why the drill may not start; an empty reason when it may, reasonWait when it
// cannot tell yet.
func (r *Reconciler) refusal(ctx context.Context, sc *scope) (reason, message string, err error) {
	name := sc.drill.Spec.DRPCName
	if check := sc.drill.Spec.Check; check != nil {
		level, err := r.sandboxLevel(ctx, sc.drill.Namespace)
		if err != nil {
			return "", "", err
		}
		if problems := drillcheck.Problems(check, level); len(problems) > 0 {
			return v1alpha1.ReasonCheckNotAllowed, drillcheck.Message(problems, level), nil
		}
	}
	if sc.drpc == nil {
		return v1alpha1.ReasonDRPCNotFound, fmt.Sprintf("no DRPlacementControl %s in namespace %s: "+
			"name the application's DRPlacementControl in spec.drpcName (drills live in its namespace) and create another drill", name, sc.drill.Namespace), nil
	}
	// Before anything that may make the drill wait: only the drill holding the application's
	// turn ever waits (turns.go).
	other, runs, err := r.otherDrill(ctx, sc)
	switch {
	case err != nil:
		return "", "", err
	case other != "" && runs:
		return v1alpha1.ReasonDrillRunning, fmt.Sprintf("drill %s of %s runs: one drill of an application runs at a time; create another drill once it has finished", other, name), nil
	case other != "":
		return v1alpha1.ReasonDrillWaiting, fmt.Sprintf("drill %s of %s, created before this one, waits to start: one drill of an application runs or waits at a time; "+
			"create another drill once it has finished (or delete it)", other, name), nil
	}
	switch {
	case sc.policy == nil:
		return v1alpha1.ReasonNotProtected, fmt.Sprintf("the DRPolicy %s of DRPlacementControl %s cannot be read: fix the application's policy, then create another drill",
			sc.drpc.Spec.DRPolicyRef.Name, name), nil
	case !settled(sc.drpc):
		return v1alpha1.ReasonNotProtected, fmt.Sprintf("DRPlacementControl %s is %s, not settled (Deployed, FailedOver or Relocated with no action pending): "+
			"create another drill once its action has completed", name, orNone(string(sc.drpc.Status.Phase))), nil
	}
	if c := apimeta.FindStatusCondition(sc.drpc.Status.Conditions, v1alpha1.ConditionProtected); c == nil || c.Status != metav1.ConditionTrue {
		why, reason := "not observed yet", reasonWait
		if c != nil {
			why = c.Message
			if c.Status == metav1.ConditionFalse {
				reason = v1alpha1.ReasonNotProtected
			}
		}
		return reason, fmt.Sprintf("DRPlacementControl %s is not Protected (%s), so its replicated data is no recovery point to drill from: "+
			"create another drill once `drover status %s` shows it Protected", name, why, name), nil
	}
	primary, target := sc.drpc.Status.CurrentPrimary, r.target(sc)
	switch {
	case target == primary:
		return v1alpha1.ReasonBadTarget, fmt.Sprintf("the target %s is the application's primary: a drill runs on the peer; leave spec.targetCluster empty or name the peer", target), nil
	case !slices.Contains(sc.policy.Spec.DRClusters, target):
		return v1alpha1.ReasonBadTarget, fmt.Sprintf("the target %s is not a cluster of the DRPolicy %s (%v): leave spec.targetCluster empty or name the peer of %s",
			target, sc.policy.Name, sc.policy.Spec.DRClusters, primary), nil
	}
	return "", "", nil
}

func orNone(s string) string {
	if s == "" {
		return "not deployed yet"
	}
	return s
}

// otherDrill names the drill of the same application that holds its turn when it is not this
// one: the drill that runs (runs is true), else the oldest that is not final; empty when this
// drill holds it. It reads the hub's index (turns.go), in O(1).
func (r *Reconciler) otherDrill(ctx context.Context, sc *scope) (name string, runs bool, err error) {
	if r.drills == nil {
		return r.listedOtherDrill(ctx, sc)
	}
	holder, known := r.drills.turn(sc.drill)
	if !known {
		return "", false, fmt.Errorf("failed to find the turn of DRDrill %s: the hub has not indexed it yet", klog.KObj(sc.drill))
	}
	if holder.key.Name == sc.drill.Name {
		return "", false, nil
	}
	return holder.key.Name, holder.running, nil
}

// listedOtherDrill is otherDrill for a Reconciler set up without a manager (unit tests): it
// lists the namespace's drills from the API server, so a drill accepted a moment ago is seen.
func (r *Reconciler) listedOtherDrill(ctx context.Context, sc *scope) (string, bool, error) {
	list := &v1alpha1.DRDrillList{}
	if err := r.apiReader().List(ctx, list, client.InNamespace(sc.drill.Namespace)); err != nil {
		return "", false, fmt.Errorf("failed to list the DRDrills of namespace %s: %w", sc.drill.Namespace, err)
	}
	var oldest *v1alpha1.DRDrill
	for i := range list.Items {
		d := &list.Items[i]
		if d.UID == sc.drill.UID || d.Spec.DRPCName != sc.drill.Spec.DRPCName || final(d.Status.Phase) {
			continue
		}
		if running(d.Status.Phase) {
			return d.Name, true, nil
		}
		if older(d, sc.drill) && (oldest == nil || older(d, oldest)) {
			oldest = d
		}
	}
	if oldest != nil {
		return oldest.Name, false, nil
	}
	return "", false, nil
}

// older reports whether a was created before b (by name when in the same second).
func older(a, b *v1alpha1.DRDrill) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// overtaken says why a running drill must be aborted (the application's DRPlacementControl is
// gone, or asks for or runs a failover or relocation, or its primary moved); empty when not.
func overtaken(sc *scope) (reason, message string) {
	d := sc.drpc
	switch {
	case d == nil || !d.DeletionTimestamp.IsZero():
		return v1alpha1.ReasonDRPCNotFound, fmt.Sprintf("DRPlacementControl %s was deleted during the drill: the drill is aborted and its sandbox torn down", sc.drill.Spec.DRPCName)
	case !settled(d) || d.Status.CurrentPrimary != sc.drill.Status.PrimaryCluster:
		return v1alpha1.ReasonActionOvertook, fmt.Sprintf("DRPlacementControl %s asked for %s during the drill (phase %s): the action takes precedence, "+
			"the drill is aborted and its sandbox torn down; create another drill once the application is settled",
			d.Name, orNone(string(d.Spec.Action)), orNone(string(d.Status.Phase)))
	}
	return "", ""
}

// running follows the sandbox: it aborts the drill when an action overtakes it, creates the
// sandbox, copies its status, and once the result is known keeps it for keepFor; past the
// timeout it fails the drill. Then it starts the teardown.
func (r *Reconciler) running(ctx context.Context, sc *scope) (ctrl.Result, error) {
	st := &sc.drill.Status
	if reason, msg := overtaken(sc); reason != "" {
		sc.setAccepted(metav1.ConditionFalse, reason, msg)
		return r.beginTeardown(ctx, sc, msg)
	}
	r.watchPrimary(sc)
	box, res, err := r.sandbox(ctx, sc, st.Result == "")
	if box != nil {
		copySandbox(sc, box)
	}
	if st.Result == "" {
		if sc.now.Before(st.StartTime.Add(sc.timeout())) {
			if box == nil {
				return res, err
			}
			return ctrl.Result{RequeueAfter: requeueRunning}, nil
		}
		// Also when the target does not answer: the teardown then waits for it.
		st.Result = v1alpha1.DrillResultFailed
		msg := fmt.Sprintf("the sandbox did not reach its result within %s (%s): it is torn down; "+
			"look at the DrillSandbox's status and the agent's log on %s", sc.timeout(), orWaiting(box), st.TargetCluster)
		sc.setAccepted(metav1.ConditionFalse, v1alpha1.ReasonDrillTimedOut, msg)
		return r.beginTeardown(ctx, sc, msg)
	}
	if box == nil {
		return res, err
	}
	keep := sc.keepFor()
	if keep == 0 {
		return r.beginTeardown(ctx, sc, "")
	}
	sc.startStep(stepKept, fmt.Sprintf("the sandbox is kept for %s to be looked at on %s", keep, st.TargetCluster))
	if left := sc.step(stepKept).Started.Add(keep).Sub(sc.now); left > 0 {
		return ctrl.Result{RequeueAfter: min(left, requeueRunning)}, nil
	}
	return r.beginTeardown(ctx, sc, "")
}

// orWaiting tells what the agent last said of its sandbox.
func orWaiting(box *v1alpha1.DrillSandbox) string {
	switch {
	case box == nil:
		return "the target cluster does not answer"
	case box.Status.Message == "":
		return "the agent reported nothing"
	}
	return "the agent says: " + box.Status.Message
}

// beginTeardown ends the keeping (or the run, cut short) and starts deleting the sandbox.
func (r *Reconciler) beginTeardown(ctx context.Context, sc *scope, why string) (ctrl.Result, error) {
	sc.finishStep(stepKept, v1alpha1.DrillResultPassed, "")
	for i := range sc.drill.Status.Steps {
		if s := &sc.drill.Status.Steps[i]; s.Finished == nil && s.Name != stepKept {
			t := metav1.NewTime(sc.now)
			s.Finished, s.Result = &t, v1alpha1.DrillResultSkipped
		}
	}
	sc.drill.Status.Phase = v1alpha1.DrillTearingDown
	msg := "the sandbox is deleted; the agent removes everything it made"
	if why != "" {
		msg = why
	}
	sc.startStep(stepTearingDown, msg)
	return r.tearingDown(ctx, sc)
}

// tearingDown deletes the sandbox and waits until it is gone, then ends the drill in its final
// phase.
func (r *Reconciler) tearingDown(ctx context.Context, sc *scope) (ctrl.Result, error) {
	if !sc.aborted() {
		// An action that overtook the drill moves the primary: its syncs are no longer the drill's.
		r.watchPrimary(sc)
	}
	if gone, res := r.deleteSandbox(ctx, sc); !gone {
		return res, nil
	}
	st := &sc.drill.Status
	msg := fmt.Sprintf("the sandbox %s/%s and everything the agent made for it are removed from %s", sc.drill.Namespace, sandboxName(sc.drill), st.TargetCluster)
	st.Teardown = &v1alpha1.DrillCheck{Name: "Teardown", Result: v1alpha1.DrillResultPassed, Message: msg}
	sc.finishStep(stepTearingDown, v1alpha1.DrillResultPassed, "")
	end := metav1.NewTime(sc.now)
	st.EndTime = &end
	if p := st.PrimaryReplication; p != nil && p.Result == v1alpha1.DrillResultPassed {
		p.Message = fmt.Sprintf("every group sync of the primary %s kept within twice the interval during the drill; last %s",
			st.PrimaryCluster, lastSync(sc))
	}
	switch {
	case sc.aborted():
		st.Phase = v1alpha1.DrillAborted
	case st.Result == v1alpha1.DrillResultPassed:
		st.Phase = v1alpha1.DrillPassed
	default:
		st.Phase = v1alpha1.DrillFailed
	}
	return ctrl.Result{}, nil
}

// unreachable records that the target cluster could not be reached and returns the wait: not an
// error, as the cluster answering again is what the drill waits for.
func unreachable(sc *scope, err error) ctrl.Result {
	ctrl.Log.WithName("drill").Info("Target cluster does not answer", "drill", sc.drill.Name, "cluster", sc.drill.Status.TargetCluster, "error", err.Error())
	return ctrl.Result{RequeueAfter: requeueUnreachable}
}
