package vrg

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/kubeobjects"
)

// captured is a captured object of a kind in namespace shop.
func captured(apiVersion, kind, name string, labels map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace("shop")
	o.SetName(name)
	o.SetLabels(labels)
	return o
}

func keysOf(objects []*unstructured.Unstructured) []string {
	out := []string{}
	for _, o := range objects {
		out = append(out, kubeobjects.Key(o))
	}
	return out
}

func TestTheRestoreOrderSortsTheCapturedObjectsIntoItsSteps(t *testing.T) {
	spec := &v1alpha1.DRRecipeSpec{Groups: []v1alpha1.RecoveryGroup{
		{Name: "db", Resources: []v1alpha1.RecipeResources{{Kind: v1alpha1.RecipeStatefulSet, Names: []string{"db"}}}},
		{Name: "web", Resources: []v1alpha1.RecipeResources{
			{Kind: v1alpha1.RecipeDeployment, Namespace: "shop", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}},
			{Kind: v1alpha1.RecipeStatefulSet},
		}},
		{Name: "elsewhere", Resources: []v1alpha1.RecipeResources{{Kind: v1alpha1.RecipeJob, Namespace: "other"}}},
	}}
	objects := []*unstructured.Unstructured{
		captured("v1", "Namespace", "shop", nil),
		captured("v1", "ConfigMap", "conf", nil),
		captured("apps/v1", "Deployment", "front", map[string]string{"tier": "web"}),
		captured("apps/v1", "Deployment", "pgbench", map[string]string{"tier": "load"}),
		captured("apps/v1", "StatefulSet", "cache", nil),
		captured("apps/v1", "StatefulSet", "db", map[string]string{"tier": "web"}),
		captured("batch/v1", "Job", "migrate", nil),
		captured("v1", "Service", "db", nil),
	}
	objects[0].SetNamespace("")
	plan := planOrder(spec, "shop", objects)
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"the objects that run no pods", keysOf(plan.base), []string{"Namespace shop", "ConfigMap shop/conf", "Service shop/db"}},
		{"group db, by name: the first group that picks an object has it", keysOf(plan.groups[0]), []string{"StatefulSet.apps shop/db"}},
		{"group web, by selector and by kind", keysOf(plan.groups[1]), []string{"Deployment.apps shop/front", "StatefulSet.apps shop/cache"}},
		{"a group of another namespace", keysOf(plan.groups[2]), []string{}},
		{"the workloads of no group", keysOf(plan.rest), []string{"Deployment.apps shop/pgbench", "Job.batch shop/migrate"}},
	} {
		if len(c.got) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
			continue
		}
		for i := range c.got {
			if c.got[i] != c.want[i] {
				t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
				break
			}
		}
	}
}

func TestTheRestoreOrderGoesOnFromTheStepItRecordedForTheRecipesAction(t *testing.T) {
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	began := now.Add(-time.Minute)
	vrg := &v1alpha1.VolumeReplicationGroup{Spec: v1alpha1.VolumeReplicationGroupSpec{
		Recipe: &v1alpha1.VRGRecipe{Name: "shop", Action: "2026-12-07T08:59:00Z"}}}
	for _, c := range []struct {
		name, annotation string
		want             orderAt
	}{
		{"none recorded: the first step, from now", "", orderAt{step: stepObjects, since: now}},
		{"recorded for the action", orderAt{step: stepGroups + 1, since: began}.annotation(vrg.Spec.Recipe.Action), orderAt{step: stepGroups + 1, since: began}},
		{"recorded for another action", orderAt{step: stepGroups + 1, since: began}.annotation("2026-12-06T08:00:00Z"), orderAt{step: stepObjects, since: now}},
		{"not one the agent wrote", "3/yesterday/2026-12-07T08:59:00Z", orderAt{step: stepObjects, since: now}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vrg.Annotations = map[string]string{AnnotationRestoreOrder: c.annotation}
			if got := recordedOrder(vrg, now); got.step != c.want.step || !got.since.Equal(c.want.since) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestAGroupPastItsReadyTimeoutHoldsTheRestoreWithItsWorkloadsReason(t *testing.T) {
	vrg := &v1alpha1.VolumeReplicationGroup{Spec: v1alpha1.VolumeReplicationGroupSpec{Recipe: &v1alpha1.VRGRecipe{Name: "shop",
		Spec: v1alpha1.DRRecipeSpec{Groups: []v1alpha1.RecoveryGroup{{Name: "db"}, {Name: "web"}}}}}}
	c := orderCondition(vrg, true, lateReason(v1alpha1.ReasonProgressing), stepGroups+1, "not Ready within its readyTimeout 10m0s: ...")
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonPodsNotRunning {
		t.Fatalf("condition = %+v", c)
	}
	want := "the objects are restored in the order of recipe shop, at group web (2 of 2): not Ready within its readyTimeout 10m0s: ...; " +
		"what comes after it starts once it is Ready: fix what it lacks"
	if c.Message != want {
		t.Fatalf("message = %q, want %q", c.Message, want)
	}
	if got := lateReason(v1alpha1.ReasonPodsRefused); got != v1alpha1.ReasonPodsRefused {
		t.Fatalf("a refused workload's reason is kept: %s", got)
	}
}

func TestAHooksJobIsNeitherRestoredNorStoppedAsAWorkload(t *testing.T) {
	job := captured("batch/v1", "Job", "hook-migrate-0123456789", map[string]string{hooks.LabelHook: "migrate"})
	if !kubeobjects.HookJob(job) {
		t.Fatal("a Job labelled with its hook is a hook's Job")
	}
	if kubeobjects.HookJob(captured("batch/v1", "Job", "migrate", nil)) || kubeobjects.HookJob(captured("apps/v1", "Deployment", "web", map[string]string{hooks.LabelHook: "x"})) {
		t.Fatal("only a Job labelled with its hook is a hook's Job")
	}
}
