package hooks

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
)

func execHook(name, ns string) v1alpha1.Hook {
	return v1alpha1.Hook{Name: name, Point: v1alpha1.HookBeforeStop, Exec: &v1alpha1.ExecHook{Namespace: ns,
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Command: []string{"true"}}}
}

func TestTheExecOutputBufferKeepsItsEndWithinItsBound(t *testing.T) {
	b := &tailBuffer{max: 6}
	for _, s := range []string{"hello ", "wor", "ld"} {
		_, _ = b.Write([]byte(s))
	}
	if b.String() != "…rld" {
		t.Fatalf("tailBuffer = %q, want …rld", b.String())
	}
}

func TestJobNamesAreStablePerAttemptAndFitALabel(t *testing.T) {
	a := JobName("pg", "migrate", "2026-12-07T04:00:00Z", 1)
	if a != JobName("pg", "migrate", "2026-12-07T04:00:00Z", 1) {
		t.Fatal("the same attempt must give the same name")
	}
	for _, other := range []string{
		JobName("pg", "migrate", "2026-12-07T04:00:00Z", 2), JobName("pg", "migrate", "2026-12-07T05:00:00Z", 1),
		JobName("web", "migrate", "2026-12-07T04:00:00Z", 1),
	} {
		if other == a {
			t.Fatalf("another attempt, action or recipe gave the same name %s", a)
		}
	}
	long := JobName("pg", strings.Repeat("a", 63), "x", 1)
	if len(long) > 63 || !strings.HasPrefix(a, "hook-migrate-") {
		t.Fatalf("names %q (%d) and %q", long, len(long), a)
	}
}

func TestAHookMayActOnlyInAProtectedNamespace(t *testing.T) {
	h := execHook("flush", "app")
	if err := Allowed(&h, []string{"app", "web"}); err != nil {
		t.Fatalf("a protected namespace is refused: %v", err)
	}
	other := execHook("flush", "payroll")
	if err := Allowed(&other, []string{"app"}); err == nil || !strings.Contains(err.Error(), "namespace payroll, which this group does not protect") {
		t.Fatalf("another namespace: %v", err)
	}
	empty := execHook("flush", "")
	if err := Allowed(&empty, []string{"app"}); err == nil {
		t.Fatal("an empty namespace is accepted")
	}
	secret := v1alpha1.Hook{Name: "s", Check: &v1alpha1.CheckHook{Object: v1alpha1.CheckObject{APIVersion: "v1", Kind: "Secret", Namespace: "app", Name: "x"}}}
	if err := Allowed(&secret, []string{"app"}); err == nil {
		t.Fatal("a check of a Secret is accepted")
	}
}

func TestAJobHookNeverRunsUnderTheAgentsServiceAccount(t *testing.T) {
	tmpl := &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "m", Image: "x"}}, InitContainers: []corev1.Container{{Name: "i", Image: "x"}}}}}
	h := v1alpha1.Hook{Name: "migrate", Job: &v1alpha1.JobHook{Namespace: "app", Template: tmpl}}
	job, err := hookJob(&h, ID{Recipe: "pg", Action: "a", Attempt: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(job.Spec.Template.Spec.Containers, job.Spec.Template.Spec.InitContainers...) {
		if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Fatalf("container %s reports no log tail", c.Name)
		}
	}
	tmpl.Template.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageReadFile
	chosen, err := hookJob(&h, ID{Recipe: "pg", Action: "a", Attempt: 3})
	if err != nil {
		t.Fatal(err)
	}
	if p := chosen.Spec.Template.Spec.Containers[0].TerminationMessagePolicy; p != corev1.TerminationMessageReadFile {
		t.Fatalf("the recipe's own policy File became %s", p)
	}
	tmpl.Template.Spec.Containers[0].TerminationMessagePolicy = ""
	if tmpl.Template.Spec.Containers[0].TerminationMessagePolicy != "" {
		t.Fatal("the recipe's template was changed")
	}
	tmpl.Template.Spec.ServiceAccountName = AgentServiceAccount
	if _, err := hookJob(&h, ID{}); err == nil || !strings.Contains(err.Error(), "agent's ServiceAccount") {
		t.Fatalf("the agent's ServiceAccount: %v", err)
	}
}

func TestAPeriodicJobHooksJobIsRemovedAnHourAfterItFinishesUnlessTheRecipeSaysOtherwise(t *testing.T) {
	tmpl := &batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}
	h := v1alpha1.Hook{Name: "checkpoint", Job: &v1alpha1.JobHook{Namespace: "app", Template: tmpl}}
	ttl := func(id ID) *int32 {
		t.Helper()
		job, err := hookJob(&h, id)
		if err != nil {
			t.Fatal(err)
		}
		return job.Spec.TTLSecondsAfterFinished
	}
	if got := ttl(ID{Recipe: "pg", Action: "drover-sync-20261208t010203z", Attempt: 1, Periodic: true}); got == nil || *got != 3600 {
		t.Fatalf("a periodic run's Job has TTL %v, want 3600 s", got)
	}
	if got := ttl(ID{Recipe: "pg", Action: "relocate-1", Attempt: 1}); got != nil {
		t.Fatalf("an action's Job has TTL %d: it is kept for the person to read", *got)
	}
	tmpl.TTLSecondsAfterFinished = ptr.To(int32(60))
	if got := ttl(ID{Recipe: "pg", Action: "drover-sync-20261208t010203z", Attempt: 1, Periodic: true}); got == nil || *got != 60 {
		t.Fatalf("the recipe's own TTL 60 became %v", got)
	}
}

func TestNextFollowsTheRunsAndThePersonsDecisions(t *testing.T) {
	a, b := execHook("a", "app"), execHook("b", "app")
	hooks := []*v1alpha1.Hook{&a, &b}
	const action = "t1"
	run := func(name string, attempt int32, result v1alpha1.HookResult, act string) v1alpha1.HookRun {
		return v1alpha1.HookRun{Name: name, Action: act, Attempt: attempt, Result: result}
	}
	for _, tc := range []struct {
		name      string
		runs      []v1alpha1.HookRun
		decisions []v1alpha1.HookDecision
		want      Step
	}{
		{name: "nothing ran: the first hook's first attempt", want: Step{Kind: StepRun, Hook: &a, Attempt: 1}},
		{name: "a run of another action counts as none", runs: []v1alpha1.HookRun{run("a", 3, v1alpha1.HookSucceeded, "t0")},
			want: Step{Kind: StepRun, Hook: &a, Attempt: 1}},
		{name: "a hook that runs is waited for", runs: []v1alpha1.HookRun{run("a", 2, v1alpha1.HookRunning, action)},
			want: Step{Kind: StepRun, Hook: &a, Attempt: 2}},
		{name: "a passed hook lets the next run", runs: []v1alpha1.HookRun{run("a", 1, v1alpha1.HookContinued, action)},
			want: Step{Kind: StepRun, Hook: &b, Attempt: 1}},
		{name: "a failure stands without a decision", runs: []v1alpha1.HookRun{run("a", 1, v1alpha1.HookFailed, action)},
			want: Step{Kind: StepFailed, Hook: &a, Attempt: 1}},
		{name: "a decision for an earlier attempt does not answer a later failure",
			runs:      []v1alpha1.HookRun{run("a", 2, v1alpha1.HookFailed, action)},
			decisions: []v1alpha1.HookDecision{{Hook: "a", Attempt: 1, Decision: v1alpha1.HookContinueAction}},
			want:      Step{Kind: StepFailed, Hook: &a, Attempt: 2}},
		{name: "a retry runs the next attempt", runs: []v1alpha1.HookRun{run("a", 1, v1alpha1.HookFailed, action)},
			decisions: []v1alpha1.HookDecision{{Hook: "a", Attempt: 1, Decision: v1alpha1.HookRetry}},
			want:      Step{Kind: StepRun, Hook: &a, Attempt: 2}},
		{name: "a continue passes the failure over", runs: []v1alpha1.HookRun{run("a", 1, v1alpha1.HookFailed, action)},
			decisions: []v1alpha1.HookDecision{{Hook: "a", Attempt: 1, Decision: v1alpha1.HookContinueAction}},
			want:      Step{Kind: StepFailed, Hook: &a, Attempt: 1, PassOver: true}},
		{name: "every hook passed", runs: []v1alpha1.HookRun{run("a", 1, v1alpha1.HookPassedOver, action), run("b", 1, v1alpha1.HookSucceeded, action)},
			want: Step{Kind: StepDone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Next(hooks, tc.runs, action, tc.decisions)
			if got.Kind != tc.want.Kind || got.Hook != tc.want.Hook || got.Attempt != tc.want.Attempt || got.PassOver != tc.want.PassOver {
				t.Fatalf("Next = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestACheckTestsAConditionOrACELExpression(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"replicas": int64(2)},
		"status": map[string]any{"readyReplicas": int64(2), "conditions": []any{map[string]any{"type": "Available", "status": "True"}}}}
	cond, err := checkPredicate(&v1alpha1.CheckHook{Condition: &v1alpha1.CheckCondition{Type: "Available"}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := cond(obj); !ok {
		t.Fatalf("condition Available True does not hold: %s", why)
	}
	expr, err := checkPredicate(&v1alpha1.CheckHook{Expression: "self.status.readyReplicas == self.spec.replicas"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := expr(obj); !ok {
		t.Fatalf("the expression is false: %s", why)
	}
	if ok, _ := expr(map[string]any{"spec": map[string]any{"replicas": int64(3)}, "status": map[string]any{"readyReplicas": int64(2)}}); ok {
		t.Fatal("the expression holds with 2 of 3 Ready")
	}
	if _, err := checkPredicate(&v1alpha1.CheckHook{Expression: "self.status +"}); err == nil {
		t.Fatal("an expression that does not compile is accepted")
	}
	if _, err := checkPredicate(&v1alpha1.CheckHook{Expression: "'a'"}); err == nil {
		t.Fatal("a string expression is accepted")
	}
}

func TestStopHooksRunUngroupedFirstThenByGroupInReverse(t *testing.T) {
	hook := func(name, group string) v1alpha1.Hook {
		h := execHook(name, "app")
		h.Group = group
		return h
	}
	spec := &v1alpha1.DRRecipeSpec{
		Groups: []v1alpha1.RecoveryGroup{{Name: "db"}, {Name: "web"}},
		Hooks: []v1alpha1.Hook{hook("checkpoint", "db"), hook("drain", "web"), hook("announce", ""), hook("stop-db", "db"),
			{Name: "flush", Point: v1alpha1.HookBeforeSync}},
	}
	var got []string
	for _, h := range StopOrder(spec) {
		got = append(got, h.Name)
	}
	if strings.Join(got, ",") != "announce,drain,checkpoint,stop-db" {
		t.Fatalf("StopOrder = %v", got)
	}
}
