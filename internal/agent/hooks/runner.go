package hooks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/tenancy"
)

// pollInterval is how often a Job, a scale or a check is looked at while it is waited for.
const pollInterval = time.Second

// Runner runs hooks with the agent's identity.
type Runner struct {
	// Client creates Jobs and patches the workloads scale hooks scale.
	Client client.Client
	// Reader reads uncached: pods, Jobs, workloads and checked objects are read only while a
	// hook runs, so none of them is watched for it.
	Reader client.Reader
	// Config is the agent's rest config, for pods/exec.
	Config *rest.Config

	once    sync.Once
	cs      kubernetes.Interface
	csError error
}

// ID names one attempt of one hook of one action: it names the hook's Job.
type ID struct {
	Recipe, Action string
	Attempt        int32
	// Periodic is true for a run that comes back every interval (a VolSync sync cycle's
	// BeforeSync hooks, decision 0019): its Job is removed PeriodicJobTTL after it finished.
	Periodic bool
}

// PeriodicJobTTL is how long the Job of a periodic hook run stays once it finished, unless the
// recipe's template says: long enough to read a failure (its output is in the group's status
// at once), short enough that a hook run every interval does not pile Jobs up in the namespace.
// kube-controller-manager's TTL-after-finished controller removes it.
const PeriodicJobTTL = time.Hour

// Outcome is how a run of a hook ended.
type Outcome struct {
	// Succeeded is true when the hook succeeded.
	Succeeded bool
	// ExitCode is an exec's exit code (the failed pod's, or the last pod's).
	ExitCode *int32
	// Output is the end of the output: an exec's stdout and stderr, or a failed Job pod's
	// termination message; at most v1alpha1.MaxHookOutput bytes.
	Output string
	// Message says what happened, naming the pod, Job, workload or object.
	Message string
}

// failed is a failed Outcome with a message.
func failed(format string, args ...any) Outcome {
	return Outcome{Message: truncate(fmt.Sprintf(format, args...), 1024)}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// Run runs one hook to its end or its timeout; it checks the hook against the protected
// namespaces first and refuses it, calling nothing, when it names another.
func (r *Runner) Run(ctx context.Context, h *v1alpha1.Hook, id ID, protected []string) Outcome {
	if err := Allowed(h, protected); err != nil {
		return failed("%s", err.Error())
	}
	if msg := r.namespaceProblem(ctx, Namespace(h)); msg != "" {
		return failed("hook %s: %s", h.Name, msg)
	}
	timeout := Timeout(h)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var o Outcome
	switch {
	case h.Exec != nil:
		o = r.runExec(ctx, h)
	case h.Job != nil:
		o = r.runJob(ctx, h, id)
	case h.Scale != nil:
		o = r.runScale(ctx, h)
	default:
		o = r.runCheck(ctx, h)
	}
	if !o.Succeeded && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		o.Message = truncate(fmt.Sprintf("timed out after %s: %s", timeout, o.Message), 1024)
	}
	o.Message = truncate(o.Message, 1024)
	return o
}

// clientset is the typed clientset exec needs, built once.
func (r *Runner) clientset() (kubernetes.Interface, error) {
	r.once.Do(func() {
		if r.Config == nil {
			r.csError = errors.New("the hook runner has no rest config")
			return
		}
		r.cs, r.csError = kubernetes.NewForConfig(r.Config)
	})
	return r.cs, r.csError
}

// poll calls cond every pollInterval until it returns true or an error, or ctx ends; it
// returns ctx's error then.
func poll(ctx context.Context, cond func() (bool, error)) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// namespaceProblem says why hooks may not run in namespace ns on this cluster, empty when they
// may: its administrator labelled it tenancy.LabelHooks=enabled. The recipe is written by the
// hub's credential, which may not set the label: without it, that credential could run commands
// in the application's pods and read their files back through the hooks' output.
func (r *Runner) namespaceProblem(ctx context.Context, ns string) string {
	obj := &corev1.Namespace{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
		return fmt.Sprintf("failed to read namespace %s to check that it allows hooks: %v", ns, err)
	}
	if obj.Labels[tenancy.LabelHooks] == tenancy.HooksEnabled {
		return ""
	}
	return fmt.Sprintf("namespace %s does not allow drover's hooks on this cluster: its administrator allows them with "+
		"`kubectl label namespace %s %s=%s` (the hub cannot set it); nothing was run", ns, ns, tenancy.LabelHooks, tenancy.HooksEnabled)
}
