package hub_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crash"
)

// BenchmarkSettledRequestsToAManagedCluster measures what a settled hub costs a managed
// cluster: N applications (empty groups, so the agents write nothing) are protected on east,
// then, settled, the API servers' request counters are read over a window. The hub runs with
// its default options (probe every 5 s). Reported per managed cluster: the requests on
// VolumeReplicationGroups other than the agents' own status patches and watches (what the hub
// reads: GET, LIST), and everything the hub's ServiceAccount sent (the API server's priority
// and fairness counter of flow schema service-accounts; the agents here use the administrator's
// credential). Run: go test ./internal/hub -run '^$' -bench SettledRequests -benchtime 1x
// (DROVER_BENCH_APPS sets N, default 20; DROVER_BENCH_WINDOW the window, default 60s).
func BenchmarkSettledRequestsToAManagedCluster(b *testing.B) {
	n, window := benchEnvInt("DROVER_BENCH_APPS", 20), benchEnvDuration("DROVER_BENCH_WINDOW", time.Minute)
	g := NewWithT(b)
	g.SetDefaultEventuallyTimeout(5 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(time.Second)
	ctx := context.Background()
	stop("hub")
	b.Cleanup(func() {
		stop("bench-hub")
		if err := startHub(); err != nil {
			b.Errorf("failed to start the suite's hub again: %v", err)
		}
	})
	startDefaultHub(g)
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	keys := createEmptyApps(g, h, n)
	b.Cleanup(func() { deleteApps(g, h, keys) })
	g.Eventually(func(g Gomega) {
		for _, k := range keys {
			d := &v1alpha1.DRPlacementControl{}
			g.Expect(h.Get(ctx, k, d)).To(Succeed())
			g.Expect(d.Status.Phase).To(Equal(v1alpha1.PhaseDeployed), k.String())
			g.Expect(cond(d, v1alpha1.ConditionPeerReady).Reason).NotTo(Equal(v1alpha1.ReasonPeerUnreachable))
		}
	}).Should(Succeed(), "all applications deployed")
	time.Sleep(15 * time.Second)
	for range b.N {
		start := map[string]requestCounts{}
		for _, c := range []string{lab.East, lab.West} {
			start[c] = readRequestCounts(g, c)
		}
		time.Sleep(window)
		for _, c := range []string{lab.East, lab.West} {
			end := readRequestCounts(g, c)
			reads := (end.groupReads - start[c].groupReads) / window.Seconds()
			hubAll := (end.hubAll - start[c].hubAll) / window.Seconds()
			b.ReportMetric(reads, c+"-group-reads/s")
			b.ReportMetric(hubAll, c+"-hub-requests/s")
			b.Logf("%d applications settled, %s over %s: %.2f GET/LIST of groups/s, %.2f requests/s from the hub's ServiceAccount",
				n, c, window, reads, hubAll)
		}
	}
}

func startDefaultHub(g *WithT) {
	c, err := testLab.Cluster(lab.Hub)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	mgr, err := hub.NewManager(cfg, hub.Options{InProcess: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(launch("bench-hub", crash.New("bench-hub"), mgr.Start, nil)).To(Succeed())
}

func createEmptyApps(g *WithT, h client.Client, n int) []client.ObjectKey {
	ctx := context.Background()
	east, err := testLab.Client(lab.East)
	g.Expect(err).NotTo(HaveOccurred())
	var keys []client.ObjectKey
	for i := range n {
		ns := fmt.Sprintf("bench-settled-%d", i)
		for _, cl := range []client.Client{h, east} {
			g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
		}
		d := &v1alpha1.DRPlacementControl{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
			Spec: v1alpha1.DRPlacementControlSpec{
				DRPolicyRef: v1alpha1.PolicyReference{Name: policyVolRep}, PreferredCluster: lab.East,
				PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}, ProtectedNamespaces: []string{ns},
			},
		}
		g.Expect(h.Create(ctx, d)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(d))
	}
	return keys
}

func deleteApps(g *WithT, h client.Client, keys []client.ObjectKey) {
	ctx := context.Background()
	for _, k := range keys {
		d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		g.Expect(client.IgnoreNotFound(h.Delete(ctx, d))).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		list := &v1alpha1.DRPlacementControlList{}
		g.Expect(h.List(ctx, list)).To(Succeed())
		for _, d := range list.Items {
			g.Expect(strings.HasPrefix(d.Namespace, "bench-settled-")).To(BeFalse(), "%s/%s is still there", d.Namespace, d.Name)
		}
	}).Should(Succeed())
}

// requestCounts are counters of a managed cluster's API server.
type requestCounts struct {
	// groupReads counts GET and LIST requests on VolumeReplicationGroups.
	groupReads float64
	// hubAll counts the requests of flow schema service-accounts: the hub's.
	hubAll float64
}

func readRequestCounts(g *WithT, cluster string) requestCounts {
	c, err := testLab.Cluster(cluster)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	var out requestCounts
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{") && strings.Contains(line, `resource="volumereplicationgroups"`) &&
			strings.Contains(line, `subresource=""`) && (strings.Contains(line, `verb="GET"`) || strings.Contains(line, `verb="LIST"`)):
			out.groupReads += v
		case strings.HasPrefix(line, "apiserver_flowcontrol_dispatched_requests_total{") && strings.Contains(line, `flow_schema="service-accounts"`):
			out.hubAll += v
		}
	}
	return out
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func benchEnvDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
