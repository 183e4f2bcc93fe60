package drill

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/drillcheck"
	"github.com/drover-io/drover/internal/podsecurity"
	"github.com/drover-io/drover/internal/termination"
)

// CheckJob names the check Job in its sandbox namespace.
const CheckJob = "drover-drill-check"

// runCheck runs the spec's check Job in the sandbox of checkNamespace once the workloads are
// Ready, and judges the sandbox by it: Passed with readyTime when it succeeds (or there is none),
// Failed with the Job's reason and message when it fails; either way with the log tail its pod
// reported (checkLogTail).
func (r *Reconciler) runCheck(ctx context.Context, sc *scope) (ctrl.Result, error) {
	sb := sc.sandbox
	if sb.Spec.Check == nil {
		sb.Status.Check = &v1alpha1.DrillCheckJob{Result: v1alpha1.DrillResultSkipped, Message: "no check asked for: the drill passes with its workloads Ready"}
		sc.pass()
		return ctrl.Result{}, nil
	}
	sc.step(StepChecking)
	ns, ok := sc.checkNamespace()
	if !ok {
		sc.fail(StepChecking, fmt.Sprintf("checkNamespace %s is not a namespace the application protects: name one of them", sb.Spec.CheckNamespace))
		return ctrl.Result{}, nil
	}
	job, err := r.ensureCheckJob(ctx, sc, ns)
	if err != nil || sb.Status.Result != "" {
		return ctrl.Result{}, err // an error, or a Job the API server refused
	}
	c, done := jobFinished(job)
	if !done {
		sc.waiting(StepChecking, fmt.Sprintf("waiting for the check Job %s/%s (%d active, %d failed)", ns, CheckJob, job.Status.Active, job.Status.Failed))
		return ctrl.Result{RequeueAfter: requeueWaiting}, nil
	}
	tail, err := r.checkLogTail(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	msg := jobSummary(job, c)
	if c.Type == batchv1.JobComplete {
		sb.Status.Check = &v1alpha1.DrillCheckJob{Result: v1alpha1.DrillResultPassed, Message: clip(msg), LogTail: tail}
		sc.finish(StepChecking, v1alpha1.DrillResultPassed, "the check Job succeeded")
		sc.pass()
		return ctrl.Result{}, nil
	}
	sb.Status.Check = &v1alpha1.DrillCheckJob{Result: v1alpha1.DrillResultFailed, Message: clip(msg), LogTail: tail}
	sc.fail(StepChecking, "the check Job failed: "+msg)
	return ctrl.Result{}, nil
}

// jobFinished returns the Job's Complete or Failed condition, once it holds.
func jobFinished(job *batchv1.Job) (batchv1.JobCondition, bool) {
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return c, true
		}
	}
	return batchv1.JobCondition{}, false
}

// jobSummary is what a finished Job says: its condition's reason and message, and its counts.
func jobSummary(job *batchv1.Job, c batchv1.JobCondition) string {
	return fmt.Sprintf("Job %s/%s %s (%s: %s); %d succeeded, %d failed", job.Namespace, job.Name, c.Type, c.Reason, c.Message, job.Status.Succeeded, job.Status.Failed)
}

// checkNamespace is the sandbox the check runs in: that of spec.checkNamespace, or of the first
// protected namespace.
func (sc *scope) checkNamespace() (string, bool) {
	if want := sc.sandbox.Spec.CheckNamespace; want != "" {
		ns, ok := sc.namespaces[want]
		return ns, ok
	}
	for _, n := range sc.sandbox.Status.Namespaces {
		return n.Sandbox, true
	}
	return "", false
}

// ensureCheckJob creates the check Job from the spec, once, and returns it as it stands. Its
// containers report the end of their log when they fail without a termination message. A check
// out of drillcheck's bounds, or whose pod the sandbox's Pod Security level refuses, is never
// created: the sandbox fails, saying why (whoever wrote the DrillSandbox, the hub's credential
// included, is not trusted to have checked it).
func (r *Reconciler) ensureCheckJob(ctx context.Context, sc *scope, ns string) (*batchv1.Job, error) {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: CheckJob, Labels: map[string]string{LabelDrill: sc.sandbox.Spec.DrillID}},
		Spec:       *sc.sandbox.Spec.Check.DeepCopy(),
	}
	// The API server makes the selector and the pod labels that name the Job.
	job.Spec.Selector, job.Spec.ManualSelector = nil, nil
	if job.Spec.ActiveDeadlineSeconds == nil {
		job.Spec.ActiveDeadlineSeconds = ptr.To[int64](drillcheck.DefaultDeadlineSeconds)
	}
	termination.WithLogFallback(&job.Spec.Template.Spec)
	level, err := r.namespaceLevel(ctx, sc, ns)
	if err != nil {
		return nil, err
	}
	if problems := drillcheck.Problems(&job.Spec, level); len(problems) > 0 {
		sc.fail(StepChecking, drillcheck.Message(problems, level))
		return &batchv1.Job{}, nil
	}
	err = r.Client.Create(ctx, job, client.FieldOwner(fieldOwner))
	if apierrors.IsAlreadyExists(err) {
		err = r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), job)
	}
	if apierrors.IsInvalid(err) {
		sc.fail(StepChecking, "the check Job is not valid: "+err.Error())
		return &batchv1.Job{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to create the check Job %s/%s: %w", ns, CheckJob, err)
	}
	return job, nil
}

// namespaceLevel is the Pod Security level a sandbox namespace enforces, never below the
// sandbox's own.
func (r *Reconciler) namespaceLevel(ctx context.Context, sc *scope, name string) (api.Level, error) {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return "", fmt.Errorf("failed to get the sandbox namespace %s: %w", name, err)
	}
	return podsecurity.Stricter(podsecurity.Enforced(ns.Labels).Level, sc.level), nil
}

// pass ends the sandbox as Passed: the workloads Ready and the check passed.
func (sc *scope) pass() {
	sc.sandbox.Status.Result = v1alpha1.DrillResultPassed
	sc.sandbox.Status.ReadyTime = ptrTime(sc.now)
	sc.sandbox.Status.Message = "the sandbox's workloads are Ready and its check passed"
}

// maxLogTail is the status's bound on the log tail (DrillCheckJob.LogTail).
const maxLogTail = 4096

// checkLogTail reads the finished check Job's pods and returns its log tail: the termination
// message of its newest pod that has one (internal/termination).
func (r *Reconciler) checkLogTail(ctx context.Context, job *batchv1.Job) (string, error) {
	return termination.OfJob(ctx, r.APIReader, job, maxLogTail)
}
