package labinstall

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	charttest "github.com/drover-io/drover/hack/helm"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

const (
	timeout = 3 * time.Minute
	polling = 500 * time.Millisecond
	// upgradedVersion is the version of the chart the releases are upgraded to: a new chart
	// version naming a new image tag, as the next release's chart would.
	upgradedVersion = "0.0.1-upgraded"
)

func newG(t *testing.T) *WithT {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(timeout)
	g.SetDefaultEventuallyPollingInterval(polling)
	return g
}

// testWriter sends the story's lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func cluster(g Gomega, name string) *lab.Cluster {
	c, err := testLab.Cluster(name)
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

func clientOf(g Gomega, name string) client.Client {
	s := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	cfg, err := cluster(g, name).RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cl, err := client.New(cfg, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	return cl
}

// TestTheChartsInstallUpgradeRunAFailoverAndUninstall: the lab installed drover on the hub, east
// and west through Helm (TestMain); the hub's and east's releases are upgraded to a new chart
// version with a new image tag; a StatefulSet is protected on east, east is lost and drover fails
// it over to west; then the releases are uninstalled, and the hub's installed again into a
// namespace Helm creates, as `helm install --create-namespace` does.
func TestTheChartsInstallUpgradeRunAFailoverAndUninstall(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	for _, name := range []string{lab.Hub, lab.East, lab.West} {
		expectInstalled(ctx, t, g, name)
	}
	for _, name := range []string{lab.Hub, lab.East} {
		upgrade(ctx, t, g, name)
	}
	failover(ctx, t, g)
	for _, name := range []string{lab.Hub, lab.East, lab.West} {
		uninstall(ctx, t, g, name)
	}
	installIntoANewNamespace(ctx, t, g)
}

// expectInstalled checks the cluster's release, revision 1, and drover's pod from it.
func expectInstalled(ctx context.Context, t *testing.T, g Gomega, name string) {
	c := cluster(g, name)
	chart := charttest.ChartOf(c)
	history, err := installer.History(c, chart)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history).To(HaveLen(1))
	g.Expect(string(history[0].Info.Status)).To(Equal("deployed"))
	cl := clientOf(g, name)
	d := &appsv1.Deployment{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: charttest.Namespace, Name: chart}, d)).To(Succeed())
	g.Expect(d.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
	g.Expect(d.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", chart))
	image := d.Spec.Template.Spec.Containers[0].Image
	g.Expect(image).To(Equal(lab.DroverImage+":"+history[0].Chart.Metadata.AppVersion), "the chart's appVersion names the image")
	pod := readyPod(ctx, g, cl, chart, image)
	ns := &corev1.Namespace{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: charttest.Namespace}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	t.Logf("%s: release %s revision %d %s (chart %s), pod %s Ready with %s", name, chart, history[0].Version,
		history[0].Info.Status, history[0].Chart.Metadata.Version, pod.Name, image)
}

// readyPod waits for a Ready pod of the Deployment running image and returns it.
func readyPod(ctx context.Context, g Gomega, cl client.Client, deployment, image string) *corev1.Pod {
	var ready *corev1.Pod
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(cl.List(ctx, pods, client.InNamespace(charttest.Namespace), client.MatchingLabels{"app.kubernetes.io/name": deployment})).To(Succeed())
		ready = nil
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == image && isReady(p) {
				ready = p
			}
		}
		g.Expect(ready).NotTo(BeNil(), "a Ready pod of %s with %s", deployment, image)
	}).Should(Succeed())
	return ready
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// upgrade upgrades the cluster's release to the chart of upgradedVersion, with the lab's tuning
// and a pod annotation, and waits as `helm upgrade --wait` does; the new pod must run the new
// image and, on a managed cluster, keep the agent's pinned IP the fence is reached at.
func upgrade(ctx context.Context, t *testing.T, g Gomega, name string) {
	c := cluster(g, name)
	root, err := charttest.Root()
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := charttest.Load(charttest.ChartDir(root, charttest.ChartOf(c)))
	g.Expect(err).NotTo(HaveOccurred())
	ch.Metadata.Version, ch.Metadata.AppVersion = upgradedVersion, "v"+upgradedVersion
	vals := charttest.TuningValues(c)
	vals["podAnnotations"] = map[string]any{"drover.io/upgraded": "true"}
	began := time.Now()
	rel, err := installer.Upgrade(ctx, c, ch, vals)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rel.Version).To(Equal(2))
	g.Expect(string(rel.Info.Status)).To(Equal("deployed"))
	cl := clientOf(g, name)
	pod := readyPod(ctx, g, cl, ch.Name(), lab.DroverImage+":v"+upgradedVersion)
	g.Expect(pod.Annotations).To(HaveKeyWithValue("drover.io/upgraded", "true"))
	if c.Role == lab.RoleManaged {
		g.Expect(pod.Status.PodIP).To(Equal(c.AgentPodIP().String()), "the agent's pinned pod IP, where the fence is reached")
	}
	t.Logf("%s: upgraded %s to revision %d (chart %s) in %s; pod %s Ready with %s", name, ch.Name(), rel.Version,
		upgradedVersion, time.Since(began).Round(100*time.Millisecond), pod.Name, pod.Spec.Containers[0].Image)
}

// failover protects a StatefulSet on east, loses east, fails it over to west, brings east back
// and unprotects it, with the story's checks of the data.
func failover(ctx context.Context, t *testing.T, g Gomega) {
	env, err := story.LabEnv(testLab.Lab, testWriter{t})
	g.Expect(err).NotTo(HaveOccurred())
	r := story.New(env, story.Case{
		Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass,
		Mode: story.SelfContained, Namespace: "helm-story",
	}, lab.East)
	g.Expect(r.Start(ctx)).To(Succeed())
	defer func() { g.Expect(r.Close()).To(Succeed()) }()
	for _, step := range []func() story.Step{
		func() story.Step { return r.Protect(ctx) },
		func() story.Step { return r.Failover(ctx, lab.East) },
		func() story.Step { return r.Recover(ctx, lab.East) },
		func() story.Step { return r.Unprotect(ctx) },
	} {
		s := step()
		g.Expect(s.Err).NotTo(HaveOccurred(), "%s %s→%s", s.Action, s.From, s.To)
		t.Logf("%s %s→%s in %s", s.Action, s.From, s.To, s.Duration.Round(100*time.Millisecond))
	}
}

// uninstall uninstalls the cluster's release: drover's Deployment and namespace go, the release
// is forgotten, the CRDs stay (Helm never deletes crds/).
func uninstall(ctx context.Context, t *testing.T, g Gomega, name string) {
	c := cluster(g, name)
	chart := charttest.ChartOf(c)
	g.Expect(installer.Uninstall(c, chart)).To(Succeed())
	cl := clientOf(g, name)
	g.Eventually(func() bool {
		err := cl.Get(ctx, client.ObjectKey{Namespace: charttest.Namespace, Name: chart}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue(), "the Deployment %s is deleted", chart)
	_, err := installer.History(c, chart)
	g.Expect(err).To(HaveOccurred(), "the release is forgotten")
	ns := &corev1.Namespace{}
	err = cl.Get(ctx, client.ObjectKey{Name: charttest.Namespace}, ns)
	g.Expect(apierrors.IsNotFound(err) || ns.DeletionTimestamp != nil).To(BeTrue(), "drover-system is deleted: %v", err)
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	g.Expect(cl.List(ctx, crds)).To(Succeed())
	var kept []string
	for _, crd := range crds.Items {
		if crd.Spec.Group == "drover.io" {
			kept = append(kept, crd.Name)
		}
	}
	g.Expect(kept).NotTo(BeEmpty(), "the CRDs stay")
	t.Logf("%s: uninstalled %s; drover's CRDs kept: %s", name, chart, strings.Join(kept, ", "))
}

// installIntoANewNamespace installs the hub's chart once drover-system is gone, with Helm
// creating the namespace first (--create-namespace): the chart's Namespace is applied over it
// (server-side apply) with its Pod Security labels; then it uninstalls it again.
func installIntoANewNamespace(ctx context.Context, t *testing.T, g Gomega) {
	c := cluster(g, lab.Hub)
	cl := clientOf(g, lab.Hub)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cl.Get(ctx, client.ObjectKey{Name: charttest.Namespace}, &corev1.Namespace{}))
	}).Should(BeTrue(), "drover-system is gone")
	rel, err := installer.InstallIntoNewNamespace(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: charttest.Namespace}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue("pod-security.kubernetes.io/enforce", "restricted"))
	g.Expect(ns.Annotations).To(HaveKeyWithValue("meta.helm.sh/release-name", rel.Name))
	readyPod(ctx, g, cl, rel.Name, lab.DroverImage+":"+rel.Chart.Metadata.AppVersion)
	t.Logf("hub: installed %s into a namespace created by Helm, labelled %v", rel.Name, ns.Labels)
	g.Expect(installer.Uninstall(c, rel.Name)).To(Succeed())
}
