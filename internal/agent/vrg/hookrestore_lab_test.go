package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
)

// drainRecipe stops the clients of a database before a relocation, as the PostgreSQL example of
// docs/hooks.md does: a BeforeStop Job, then a BeforeStop scale of the Deployment web to 0, both
// of no group, so both run before the final capture.
func drainRecipe(ns string) *v1alpha1.VRGRecipe {
	return &v1alpha1.VRGRecipe{Name: "drain", Action: "relocate-drain", Spec: v1alpha1.DRRecipeSpec{Hooks: []v1alpha1.Hook{
		{Name: "flush", Point: v1alpha1.HookBeforeStop, Timeout: &metav1.Duration{Duration: time.Minute},
			Job: &v1alpha1.JobHook{Namespace: ns, Template: kwokJob()}},
		{Name: "drain-clients", Point: v1alpha1.HookBeforeStop, Timeout: &metav1.Duration{Duration: time.Minute},
			Scale: &v1alpha1.ScaleHook{Kind: v1alpha1.ScaleDeployment, Namespace: ns, Name: "web", Replicas: ptr.To[int32](0)}},
	}}}
}

// capturedObject is the object of a capture with the key, nil when it holds none.
func capturedObject(c *kubeobjects.Capture, key string) *unstructured.Unstructured {
	for _, o := range c.Objects {
		if kubeobjects.Key(o) == key {
			return o
		}
	}
	return nil
}

// A relocation whose BeforeStop hooks run a Job and scale the client Deployment web from 2 to 0
// before the final capture: the final capture holds no hook Job (restored elsewhere it would run
// again) and holds web with the 2 replicas it had before the hook, without the hook's record of
// them; the target, west, runs web with 2 replicas again, and the hook's record is not on it.
func TestAWorkloadAStopHookScaledDownRunsWithItsReplicasOnTheTarget(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	// The capture's checks report every defect they find, not only the first.
	soft := NewGomega(func(message string, _ ...int) { t.Error(message) })
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	ns, groupNS := "drain-app", "drain-dr"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, adminNamespace(groupNS))).To(Succeed())
		g.Expect(cl.Create(ctx, hooksNamespace(ns))).To(Succeed())
	}
	g.Expect(east.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 1, 100*time.Millisecond))).To(Succeed())
	web := webDeployment(ns)
	web.Spec.Replicas = ptr.To[int32](2)
	g.Expect(east.Create(ctx, web)).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	eastGroup := selfContainedVRG(groupNS, ns, profiles)
	eastGroup.Spec.Recipe = drainRecipe(ns)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := selfContainedVRG(groupNS, ns, profiles)
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	westGroup.Spec.Recipe = drainRecipe(ns)
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady).Status).To(Equal(metav1.ConditionTrue))
		for _, store := range stores {
			g.Expect(captureKeys(storedCapture(ctx, g, store, eastGroup))).To(ContainElement("Deployment.apps " + ns + "/web"))
		}
		d := &appsv1.Deployment{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(2)))
	}).Should(Succeed(), "east captures the application and runs web's 2 pods")

	relocateFrom(ctx, g, east, eastGroup)
	g.Eventually(func(g Gomega) {
		got, runs := runsOf(g, ctx, east, eastGroup)
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		g.Expect(got.Status.FinalSync).NotTo(BeNil())
		g.Expect(runs["flush"].Result).To(Equal(v1alpha1.HookSucceeded))
		g.Expect(runs["drain-clients"].Result).To(Equal(v1alpha1.HookSucceeded))
	}).Should(Succeed(), "east runs both stop hooks, writes the final capture and is Secondary with the final sync")
	for _, store := range stores {
		c := storedCapture(ctx, g, store, eastGroup)
		for _, o := range c.Objects {
			soft.Expect(o.GetLabels()).NotTo(HaveKey(hooks.LabelHook), "the final capture holds the hook's %s", kubeobjects.Key(o))
		}
		w := capturedObject(c, "Deployment.apps "+ns+"/web")
		g.Expect(w).NotTo(BeNil(), "the final capture holds web")
		replicas, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas")
		soft.Expect(replicas).To(BeEquivalentTo(2), "the final capture holds web with the replicas it had before the hook")
		soft.Expect(w.GetAnnotations()).NotTo(HaveKey(kubeobjects.AnnotationScaledByHook))
	}
	if t.Failed() {
		t.FailNow()
	}

	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionKubeObjectsReady, v1alpha1.ConditionWorkloadsReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
		d := &appsv1.Deployment{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
		g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(2))))
		g.Expect(d.Annotations).NotTo(HaveKey(kubeobjects.AnnotationScaledByHook))
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(2)))
	}).Should(Succeed(), "west runs web with the 2 replicas it had before the stop hook")
	jobs := &batchv1.JobList{}
	g.Expect(west.List(ctx, jobs, client.InNamespace(ns), client.HasLabels{hooks.LabelHook})).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty(), "no hook Job is restored on west")
}
