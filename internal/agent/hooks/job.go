package hooks

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/termination"
)

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;create;delete

// LabelHook marks a hook's Job with the hook's name; a capture leaves such a Job out.
const LabelHook = kubeobjects.LabelHook

// runJob creates the hook's Job for the attempt (or finds it, created by an earlier pass or
// agent) and waits for it to complete or fail.
func (r *Runner) runJob(ctx context.Context, h *v1alpha1.Hook, id ID) Outcome {
	job, err := hookJob(h, id)
	if err != nil {
		return failed("%s", err.Error())
	}
	where := fmt.Sprintf("Job %s/%s", job.Namespace, job.Name)
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return failed("failed to create %s: %v", where, err)
	}
	var end batchv1.JobCondition
	err = poll(ctx, func() (bool, error) {
		got := &batchv1.Job{}
		if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				end = c
				return true, nil
			}
		}
		return false, nil
	})
	switch {
	case err != nil:
		// Left for the person to read; the next attempt has another name.
		return failed("%s did not finish: %v", where, err)
	case end.Type == batchv1.JobComplete:
		return Outcome{Succeeded: true, Message: where + " completed"}
	}
	o := failed("%s failed: %s: %s", where, end.Reason, end.Message)
	o.Output = r.jobOutput(ctx, job)
	return o
}

// hookJob is the Job of one attempt of a job hook: the template, its containers reporting the
// end of their log when they fail without a termination message (unless the template chose a
// policy), removed PeriodicJobTTL after it finished when the run is periodic (unless the
// template chose a TTL), never under the agent's ServiceAccount.
func hookJob(h *v1alpha1.Hook, id ID) (*batchv1.Job, error) {
	if h.Job.Template == nil {
		return nil, fmt.Errorf("job hook %s has no template: fix the DRRecipe", h.Name)
	}
	spec := h.Job.Template.DeepCopy()
	pod := &spec.Template.Spec
	//nolint:staticcheck // the deprecated field names a ServiceAccount as well
	if pod.ServiceAccountName == AgentServiceAccount || pod.DeprecatedServiceAccount == AgentServiceAccount {
		return nil, fmt.Errorf("job hook %s names the agent's ServiceAccount %s: a hook's Job runs under a ServiceAccount of the application's namespace; name one there",
			h.Name, AgentServiceAccount)
	}
	termination.WithLogFallback(pod)
	if id.Periodic && spec.TTLSecondsAfterFinished == nil {
		spec.TTLSecondsAfterFinished = ptr.To(int32(PeriodicJobTTL / time.Second))
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(id.Recipe, h.Name, id.Action, id.Attempt), Namespace: h.Job.Namespace,
			Labels: map[string]string{LabelHook: h.Name}},
		Spec: *spec,
	}, nil
}

// jobOutput is the termination message of the Job's newest pod that has one, a failed
// container's first (internal/termination), or a sentence saying why there is none.
func (r *Runner) jobOutput(ctx context.Context, job *batchv1.Job) string {
	out, err := termination.OfJob(ctx, r.Reader, job, v1alpha1.MaxHookOutput)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return out
}
