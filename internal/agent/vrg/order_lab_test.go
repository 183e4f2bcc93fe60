package vrg_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/hooks"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
)

// webDeployment is the web tier of a two-tier application: one pod labelled tier=web.
func webDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "web", "tier": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: "lab/web"}}}}},
	}
}

// kwokJob is a Job hook's template for a cluster of kwok's nodes, which complete a Job's pod
// once it runs.
func kwokJob() *batchv1.JobSpec {
	return &batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "job", Image: "lab/migrate"}}}}}
}

// twoTierRecipe orders a database StatefulSet db before the web tier (the Deployments labelled
// tier=web), with a migration Job after the restore, a Job once the database is Ready, and a
// Job before the database stops.
func twoTierRecipe(ns, action string) *v1alpha1.VRGRecipe {
	return &v1alpha1.VRGRecipe{Name: "shop", Action: action, Spec: v1alpha1.DRRecipeSpec{
		Groups: []v1alpha1.RecoveryGroup{
			{Name: "db", Resources: []v1alpha1.RecipeResources{{Kind: v1alpha1.RecipeStatefulSet, Namespace: ns, Names: []string{"db"}}}},
			{Name: "web", Resources: []v1alpha1.RecipeResources{{Kind: v1alpha1.RecipeDeployment, Namespace: ns,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}}}},
		},
		Hooks: []v1alpha1.Hook{
			{Name: "migrate", Point: v1alpha1.HookAfterRestore, Timeout: &metav1.Duration{Duration: time.Minute},
				Job: &v1alpha1.JobHook{Namespace: ns, Template: kwokJob()}},
			{Name: "db-ready", Point: v1alpha1.HookAfterReady, Group: "db", Timeout: &metav1.Duration{Duration: time.Minute},
				Job: &v1alpha1.JobHook{Namespace: ns, Template: kwokJob()}},
			{Name: "stop-db", Point: v1alpha1.HookBeforeStop, Group: "db", Timeout: &metav1.Duration{Duration: time.Minute},
				Job: &v1alpha1.JobHook{Namespace: ns, Template: kwokJob()}},
		},
	}}
}

// auditOf is what west's API server logged of namespace ns since from.
type auditOf []lab.AuditRequest

// first is the first request that matches; the test fails when none does.
func (a auditOf) first(g Gomega, match func(lab.AuditRequest) bool, what string) lab.AuditRequest {
	for _, r := range a {
		if match(r) {
			return r
		}
	}
	g.Expect(false).To(BeTrue(), "the audit log shows %s", what)
	return lab.AuditRequest{}
}

// last is the last request that matches; the test fails when none does.
func (a auditOf) last(g Gomega, match func(lab.AuditRequest) bool, what string) lab.AuditRequest {
	for i := len(a) - 1; i >= 0; i-- {
		if match(a[i]) {
			return a[i]
		}
	}
	g.Expect(false).To(BeTrue(), "the audit log shows %s", what)
	return lab.AuditRequest{}
}

// req matches a request by verb (any when empty), resource and name (any when empty).
func req(verb, resource, name string) func(lab.AuditRequest) bool {
	return func(r lab.AuditRequest) bool {
		return (verb == "" || r.Verb == verb) && r.Resource == resource && (name == "" || r.Name == name) && r.Code < 300
	}
}

// podCreatedBy matches the creation of a pod by a controller of kube-controller-manager.
func podCreatedBy(controller string) func(lab.AuditRequest) bool {
	return func(r lab.AuditRequest) bool {
		return r.Verb == "create" && r.Resource == "pods" && strings.Contains(r.Client, controller) && r.Code < 300
	}
}

func completed(r lab.AuditRequest) time.Time { return r.Received.Add(r.Latency) }

// A two-tier application, a database StatefulSet (group db) and a web Deployment (group web),
// relocated to west, whose recipe orders them: west's API server's audit log shows the
// AfterRestore migration Job completed before any workload exists, the database's pod Ready
// before the database group's AfterReady Job is created, that Job completed before the web
// Deployment is created, and so every web pod created after both. East, the source, stopped
// them the other way round: the web tier and its pods gone before the database group's
// BeforeStop Job is created, that Job completed before the database is deleted. Until the web
// tier is created, KubeObjectsReady (what the hub's promotion waits for) and WorkloadsReady say
// which step the restore stands at.
func TestARelocationStopsAndRestoresTheRecipesGroupsInOrder(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	ns, groupNS, action := "order-app", "order-dr", "relocate-order"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, adminNamespace(groupNS))).To(Succeed())
		g.Expect(cl.Create(ctx, hooksNamespace(ns))).To(Succeed())
	}
	for _, o := range appObjects(ns) {
		g.Expect(east.Create(ctx, o)).To(Succeed())
	}
	g.Expect(east.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 1, 100*time.Millisecond))).To(Succeed())
	g.Expect(east.Create(ctx, webDeployment(ns))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	eastGroup := selfContainedVRG(groupNS, ns, profiles)
	eastGroup.Spec.Recipe = twoTierRecipe(ns, action)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := selfContainedVRG(groupNS, ns, profiles)
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	westGroup.Spec.Recipe = twoTierRecipe(ns, action)
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(1))
		for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionKubeObjectsReady} {
			g.Expect(vrglab.ConditionOf(got.Status.Conditions, ct).Status).To(Equal(metav1.ConditionTrue), ct)
		}
		for _, store := range stores {
			g.Expect(captureKeys(storedCapture(ctx, g, store, eastGroup))).To(ContainElements(
				"StatefulSet.apps "+ns+"/db", "Deployment.apps "+ns+"/web"))
		}
	}).Should(Succeed(), "east protects the database's PVC and captures both tiers")

	stopping := time.Now()
	relocateFrom(ctx, g, east, eastGroup)
	g.Eventually(func(g Gomega) {
		got, runs := runsOf(g, ctx, east, eastGroup)
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		g.Expect(got.Status.FinalSync).NotTo(BeNil())
		g.Expect(runs["stop-db"].Result).To(Equal(v1alpha1.HookSucceeded))
	}).Should(Succeed(), "east stops both tiers in order and is Secondary with the final sync")
	expectStopOrderInAudit(t, g, ns, action, stopping)
	began := time.Now()
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate)

	sawOrder := false
	g.Eventually(func(g Gomega) {
		got, runs := runsOf(g, ctx, west, westGroup)
		if c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady); c.Status == metav1.ConditionFalse &&
			strings.Contains(c.Message, "in the order of recipe shop") {
			sawOrder = true
		}
		for _, ct := range []string{v1alpha1.ConditionKubeObjectsReady, v1alpha1.ConditionWorkloadsReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
		g.Expect(runs["migrate"].Result).To(Equal(v1alpha1.HookSucceeded))
		g.Expect(runs["db-ready"].Result).To(Equal(v1alpha1.HookSucceeded))
		g.Expect(got.Annotations).To(HaveKeyWithValue(vrg.AnnotationRestoreOrder, HavePrefix("4/")))
		d := &appsv1.Deployment{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(1)))
	}).Should(Succeed(), "west restores both tiers in order and runs the hooks")
	expectOrderInAudit(t, g, ns, action, began)
	g.Expect(sawOrder).To(BeTrue(), "KubeObjectsReady said the restore stood at a step of the order")
}

// expectOrderInAudit reads west's audit log of namespace ns since began and checks the order of
// the restore: the AfterRestore Job completed before any workload or pod of the application was
// created; the database pod was made Ready before the db group's AfterReady Job was created;
// that Job completed before the web Deployment was created, whose pods came after.
func expectOrderInAudit(t *testing.T, g *WithT, ns, action string, began time.Time) {
	c, err := vrglab.Lab().Cluster(lab.West)
	g.Expect(err).NotTo(HaveOccurred())
	trace, err := lab.AuditTrace(lab.West, c.AuditLogPath(), ns, began.Add(-time.Second), time.Now().Add(time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	log := auditOf(trace)
	var writes []lab.AuditRequest
	for _, r := range trace {
		if r.Verb == "create" || r.Verb == "update" || r.Verb == "patch" {
			writes = append(writes, r)
		}
	}
	var b strings.Builder
	g.Expect(lab.WriteAuditTrace(&b, writes, began)).To(Succeed())
	t.Logf("west's audit log of %s from the promotion on, its writes:\n%s", ns, b.String())

	migrate, dbReady := hooks.JobName("shop", "migrate", action, 1), hooks.JobName("shop", "db-ready", action, 1)
	migrateCreated := log.first(g, req("create", "jobs", migrate), "the AfterRestore Job's creation")
	migrateDone := log.last(g, req("", "jobs/status", migrate), "the AfterRestore Job's completion by the Job controller")
	dbCreated := log.first(g, req("create", "statefulsets", "db"), "the database StatefulSet's creation")
	dbPod := log.first(g, podCreatedBy("statefulset-controller"), "the database pod's creation")
	dbPodReady := log.first(g, req("", "pods/status", "db-0"), "the database pod's status written Running and Ready")
	dbReadyCreated := log.first(g, req("create", "jobs", dbReady), "the db group's AfterReady Job's creation")
	dbReadyDone := log.last(g, req("", "jobs/status", dbReady), "the db group's AfterReady Job's completion")
	webCreated := log.first(g, req("create", "deployments", "web"), "the web Deployment's creation")
	webPod := log.first(g, podCreatedBy("replicaset-controller"), "a web pod's creation")

	g.Expect(migrateCreated.Received).To(BeTemporally("<", migrateDone.Received))
	for _, r := range trace {
		if r.Verb == "create" && kubeobjects.IsWorkload(workloadKind(r.Resource)) && r.Name != migrate && r.Name != dbReady {
			g.Expect(r.Received).To(BeTemporally(">", completed(migrateDone)), "%s %s created after the AfterRestore Job completed", r.Resource, r.Name)
		}
	}
	g.Expect(dbCreated.Received).To(BeTemporally(">", completed(migrateDone)))
	g.Expect(dbPod.Received).To(BeTemporally(">", completed(migrateDone)), "no pod of a workload exists before the AfterRestore Job completed")
	g.Expect(dbReadyCreated.Received).To(BeTemporally(">", completed(dbPodReady)), "the db group's hook starts once its pod is Ready")
	g.Expect(webCreated.Received).To(BeTemporally(">", completed(dbReadyDone)), "the web tier is created once the db group's hook completed")
	g.Expect(webPod.Received).To(BeTemporally(">", completed(dbReadyDone)), "the web tier's pods come after the database is Ready and its hook ran")
}

// workloadKind is the kind a resource of the audit log names, for the workload resources.
func workloadKind(resource string) (gk schema.GroupKind) {
	switch resource {
	case "deployments":
		return kubeobjects.KindDeployment
	case "statefulsets":
		return kubeobjects.KindSTS
	case "daemonsets":
		return kubeobjects.KindDaemonSet
	case "jobs":
		return kubeobjects.KindJob
	case "cronjobs":
		return kubeobjects.KindCronJob
	}
	return gk
}

// expectStopOrderInAudit reads east's audit log of namespace ns since began and checks the stop
// order of the relocation's source: the web Deployment deleted and its pods gone before the db
// group's BeforeStop Job was created, that Job completed before the database was deleted.
func expectStopOrderInAudit(t *testing.T, g *WithT, ns, action string, began time.Time) {
	c, err := vrglab.Lab().Cluster(lab.East)
	g.Expect(err).NotTo(HaveOccurred())
	trace, err := lab.AuditTrace(lab.East, c.AuditLogPath(), ns, began.Add(-time.Second), time.Now().Add(time.Second))
	g.Expect(err).NotTo(HaveOccurred())
	log := auditOf(trace)
	var lines []lab.AuditRequest
	for _, r := range trace {
		if r.Verb == "delete" || r.Verb == "create" {
			lines = append(lines, r)
		}
	}
	var b strings.Builder
	g.Expect(lab.WriteAuditTrace(&b, lines, began)).To(Succeed())
	t.Logf("east's audit log of %s from the relocation on, its creates and deletes:\n%s", ns, b.String())

	stopDB := hooks.JobName("shop", "stop-db", action, 1)
	webDeleted := log.first(g, req("delete", "deployments", "web"), "the web Deployment's deletion")
	webPodGone := log.last(g, func(r lab.AuditRequest) bool {
		return r.Verb == "delete" && r.Resource == "pods" && strings.HasPrefix(r.Name, "web-") && r.Code < 300
	}, "the web pod's deletion")
	stopDBCreated := log.first(g, req("create", "jobs", stopDB), "the db group's BeforeStop Job's creation")
	stopDBDone := log.last(g, req("", "jobs/status", stopDB), "the db group's BeforeStop Job's completion")
	dbDeleted := log.first(g, req("delete", "statefulsets", "db"), "the database StatefulSet's deletion")

	g.Expect(stopDBCreated.Received).To(BeTemporally(">", completed(webDeleted)), "the web tier stops first")
	g.Expect(stopDBCreated.Received).To(BeTemporally(">", completed(webPodGone)), "the db group's hook runs once no web pod is left")
	g.Expect(dbDeleted.Received).To(BeTemporally(">", completed(stopDBDone)), "the database stops once its hook completed")
}
