package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
)

// podsOf lists the names of a namespace's pods that are not finished.
func podsOf(g Gomega, cl client.Client, ns string) []string {
	pods := &corev1.PodList{}
	g.Expect(cl.List(context.Background(), pods, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p.Name)
		}
	}
	return out
}

// TestAForgedQuotalessCaptureGetsTheAdministratorsFloorOnThePeer: west's agent runs with the
// administrator's floor (`drover agent --restore-quota pods=3,... --restore-default-request
// cpu=10m,memory=32Mi`). A holder of west's store key writes a capture of the application
// without the primary's quota, holding instead a ResourceQuota named drover-floor that allows
// 1,000 pods, another quota of the source's, and a Deployment of 10 replicas. West's restore
// creates the floor before anything else, keeps it to the administrator's limits (the forged
// object of that name is never created), restores the source's other quota, and starts no
// more than 3 of the 10 pods.
func TestAForgedQuotalessCaptureGetsTheAdministratorsFloorOnThePeer(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	floor := vrg.NamespaceFloor{
		Quota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3"), corev1.ResourceRequestsCPU: resource.MustParse("1"),
			corev1.ResourceRequestsMemory: resource.MustParse("1Gi")},
		DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
	}
	vrglab.StopAgent(lab.West)
	g.Expect(vrglab.StartAgentWith(lab.West, func(o *agent.Options) { o.RestoreFloor = floor })).To(Succeed())
	t.Cleanup(func() {
		vrglab.StopAgent(lab.West)
		if err := vrglab.StartAgent(lab.West); err != nil {
			t.Errorf("failed to start west's agent again: %v", err)
		}
	})
	west := vrglab.ClusterClient(t, lab.West)
	ns, app := "forged-floor-dr", "forged-floor-app"
	g.Expect(west.Create(ctx, adminNamespace(ns))).To(Succeed())
	group, store := forgedGroup(g, ns, app)
	group.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{
		IncludedKinds: []string{"ResourceQuota", "LimitRange", "ConfigMap", "Deployment.apps"},
	}
	putJSON(g, store, vrg.StorePrefix(group)+kubeobjects.StoreKey, map[string]any{"version": 1, "capturedAt": "2026-01-02T03:04:05Z",
		"namespaces": []string{app}, "objects": []any{
			rawObject("v1", "Namespace", "", app, nil),
			rawObject("v1", "ResourceQuota", app, vrg.FloorName, map[string]any{"spec": map[string]any{"hard": map[string]string{"pods": "1000"}}}),
			rawObject("v1", "ResourceQuota", app, "source-quota", map[string]any{"spec": map[string]any{"hard": map[string]string{"count/configmaps": "50"}}}),
			rawObject("v1", "ConfigMap", app, "conf", map[string]any{"data": map[string]string{"k": "v"}}),
			manyReplicas(g, app, 10),
		}})
	g.Expect(west.Create(ctx, group)).To(Succeed())

	var ko metav1.Condition
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		ko = vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(ko.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ko.Reason, ko.Message)
	}).Should(Succeed(), "west restores the capture")
	t.Logf("KubeObjectsReady: %s", ko.Message)
	quota, limits, source, deploy := &corev1.ResourceQuota{}, &corev1.LimitRange{}, &corev1.ResourceQuota{}, &appsv1.Deployment{}
	quotaErr := west.Get(ctx, client.ObjectKey{Namespace: app, Name: vrg.FloorName}, quota)
	limitsErr := west.Get(ctx, client.ObjectKey{Namespace: app, Name: vrg.FloorName}, limits)
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: app, Name: "source-quota"}, source)).To(Succeed(), "the source's own quota is restored")
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: app, Name: "many"}, deploy)).To(Succeed(), "the Deployment is restored")
	time.Sleep(5 * time.Second) // the ReplicaSet controller creates the pods within seconds
	pods := podsOf(g, west, app)
	t.Logf("ResourceQuota %s: %v, hard %v (created %s); LimitRange %s: %v, %v; Deployment created %s; pods of the 10 replicas: %d",
		vrg.FloorName, quotaErr, quota.Spec.Hard, quota.CreationTimestamp, vrg.FloorName, limitsErr, limits.Spec.Limits, deploy.CreationTimestamp, len(pods))

	g.Expect(quotaErr).NotTo(HaveOccurred(), "the floor's ResourceQuota is made")
	g.Expect(equality.Semantic.DeepEqual(quota.Spec.Hard, floor.Quota)).To(BeTrue(), "the floor's limits, not the forged ones: %v", quota.Spec.Hard)
	g.Expect(quota.Labels).To(HaveKeyWithValue(vrg.LabelFloor, "true"))
	g.Expect(quota.CreationTimestamp.Time).NotTo(BeTemporally(">", deploy.CreationTimestamp.Time), "the floor comes before the workloads")
	g.Expect(limitsErr).NotTo(HaveOccurred(), "the floor's LimitRange is made")
	g.Expect(limits.Spec.Limits).To(HaveLen(1))
	g.Expect(equality.Semantic.DeepEqual(limits.Spec.Limits[0].DefaultRequest, floor.DefaultRequest)).To(BeTrue(), "%v", limits.Spec.Limits)
	g.Expect(pods).To(HaveLen(3), "the floor admits 3 of the 10 pods")
	g.Consistently(func(g Gomega) { g.Expect(len(podsOf(g, west, app))).To(BeNumerically("<=", 3)) }).
		WithTimeout(3*time.Second).Should(Succeed(), "never more than the floor")
}

// manyReplicas is a captured Deployment of n replicas whose pods the baseline level admits and
// that request nothing (the floor's LimitRange gives them their requests).
func manyReplicas(g Gomega, ns string, n int32) map[string]any {
	labels := map[string]string{"app": "many"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "many", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/lab/podprobe"}}},
			},
		},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	g.Expect(err).NotTo(HaveOccurred())
	u["apiVersion"], u["kind"] = "apps/v1", "Deployment"
	return u
}
