package hub_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// drillFloodTestDrills is the number of drills a tenant creates at once in the flood test.
const drillFloodTestDrills = 100

// hubLists reads the hub API server's count of LIST requests of a resource.
func hubLists(g Gomega, resource string) float64 {
	c, err := testLab.Cluster(lab.Hub)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	sum := 0.0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="`+resource+`"`) ||
			!strings.Contains(line, `verb="LIST"`) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// TestAFloodOfDrillsCostsTheHubsAPIServerNoListEach: while a drill of an application runs, its
// tenant creates drillFloodTestDrills more of it at once. Each is refused (DrillRunning: one
// drill of an application runs or waits at a time), judged from the hub's own index: the hub
// lists DRDrills from its API server less than once per 4 of them (it used to list the
// namespace's drills, uncached, for each).
func TestAFloodOfDrillsCostsTheHubsAPIServerNoListEach(t *testing.T) {
	a := protectedOnEast(t, "hub-drill-flood")
	ctx := context.Background()
	running := a.drill("overtaken", "") // kept for 10 minutes
	a.g.Eventually(func(g Gomega) {
		g.Expect(a.getDrill(g, running).Status.Phase).To(Equal(v1alpha1.DrillRunning))
	}).Should(Succeed(), "a drill of the application runs")
	t.Cleanup(func() {
		_ = a.hub.Delete(context.Background(), &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: running.Namespace, Name: running.Name}})
		a.g.Eventually(func(g Gomega) {
			err := a.hub.Get(context.Background(), running, &v1alpha1.DRDrill{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the running drill is torn down and gone: %v", err)
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})

	before := hubLists(a.g, "drdrills")
	started := time.Now()
	n := drillFloodTestDrills
	keys := make([]int, n)
	for i := range keys {
		keys[i] = i
	}
	inParallel(keys, func(i int) {
		d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: fmt.Sprintf("flood-%03d", i)},
			Spec: v1alpha1.DRDrillSpec{DRPCName: a.key.Name}}
		a.g.Expect(a.hub.Create(ctx, d)).To(Succeed())
	})
	reasons := map[string]int{}
	a.g.Eventually(func(g Gomega) {
		reasons = map[string]int{}
		for i := range n {
			d := &v1alpha1.DRDrill{}
			err := a.hub.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: fmt.Sprintf("flood-%03d", i)}, d)
			if apierrors.IsNotFound(err) {
				reasons["deleted beyond the history limit"]++ // only final drills are
				continue
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.DrillRefused), "drill %s: %s", d.Name, drillAccepted(d).Message)
			reasons[drillAccepted(d).Reason]++
		}
	}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "the hub refuses every drill of the flood")
	lists := hubLists(a.g, "drdrills") - before
	t.Logf("%d drills of one application created while one runs, judged in %s: %v; %.0f LISTs of DRDrills by the hub",
		n, time.Since(started).Round(time.Millisecond), reasons, lists)
	a.g.Expect(a.getDrill(a.g, running).Status.Phase).To(Equal(v1alpha1.DrillRunning), "the running drill runs on")
	a.g.Expect(reasons[v1alpha1.ReasonDrillRunning]).To(BeNumerically(">", 0))
	a.g.Expect(lists).To(BeNumerically("<", n/4), "the hub lists DRDrills for each drill it judges")
}
