package hooks

import (
	"context"
	"fmt"
	"time"

	"github.com/google/cel-go/common/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hookexpr"
)

// A check reads its object with the agent's identity. The agent's role reads the kinds the
// capture reads (Deployments, StatefulSets, DaemonSets, Jobs, pods, PVCs, Services, ConfigMaps,
// ...); another kind (an operator's custom resource) needs a get right given to the agent's
// ServiceAccount, and the check's message says so when the API server refuses the read. A
// Secret is never read, whatever the role allows.

// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get

// runCheck polls the object until the condition holds or the expression is true.
func (r *Runner) runCheck(ctx context.Context, h *v1alpha1.Hook) Outcome {
	c := h.Check
	gv, err := schema.ParseGroupVersion(c.Object.APIVersion)
	if err != nil {
		return failed("check %s: apiVersion %q is invalid: %v", h.Name, c.Object.APIVersion, err)
	}
	if gv.Group == "" && c.Object.Kind == "Secret" {
		return failed("check %s reads a Secret, which a check may not: check the object that uses it", h.Name)
	}
	holds, err := checkPredicate(c)
	if err != nil {
		return failed("check %s: %v: fix the DRRecipe", h.Name, err)
	}
	where := fmt.Sprintf("%s %s/%s", c.Object.Kind, c.Object.Namespace, c.Object.Name)
	seen := "nothing read yet"
	err = poll(ctx, func() (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gv.WithKind(c.Object.Kind))
		if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: c.Object.Namespace, Name: c.Object.Name}, u); err != nil {
			if apierrors.IsForbidden(err) {
				return false, fmt.Errorf("the agent may not read %s (%w): give the ServiceAccount drover-system/%s get on it, or check another object", where, err, AgentServiceAccount)
			}
			if !pastDeadline(ctx) {
				// A read the timeout cut says nothing of the object: the last one that did stays.
				seen = err.Error()
			}
			return false, nil // not there yet: looked for until the timeout
		}
		ok, why := holds(u.Object)
		seen = why
		return ok, nil
	})
	if err != nil {
		return failed("%s: last seen: %s: %v", where, seen, err)
	}
	return Outcome{Succeeded: true, Message: fmt.Sprintf("%s: %s", where, seen)}
}

// pastDeadline says whether ctx is done or its deadline has passed. The two differ for a
// moment: a context's timer marks it done a little after its deadline (later still on a busy
// machine), and in that moment client-go's rate limiter already refuses to wait past the
// deadline, an error that says nothing of the object read.
func pastDeadline(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// checkPredicate is the check's test of an object: its condition, or its CEL expression.
func checkPredicate(c *v1alpha1.CheckHook) (func(map[string]any) (bool, string), error) {
	if c.Condition != nil {
		want := string(c.Condition.Status)
		if want == "" {
			want = "True"
		}
		return func(obj map[string]any) (bool, string) {
			conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
			for _, x := range conds {
				m, _ := x.(map[string]any)
				if m["type"] == c.Condition.Type {
					return m["status"] == want, fmt.Sprintf("condition %s is %v (want %s)", c.Condition.Type, m["status"], want)
				}
			}
			return false, fmt.Sprintf("no condition %s", c.Condition.Type)
		}, nil
	}
	prg, err := hookexpr.Compile(c.Expression)
	if err != nil {
		return nil, fmt.Errorf("expression %q does not compile: %w", c.Expression, err)
	}
	return func(obj map[string]any) (bool, string) {
		out, _, err := prg.Eval(map[string]any{"self": obj})
		if err != nil {
			return false, fmt.Sprintf("%s: %v", c.Expression, err)
		}
		if out == types.True {
			return true, c.Expression + " is true"
		}
		return false, fmt.Sprintf("%s is %v", c.Expression, out)
	}, nil
}
