package hub_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crash"
)

// BenchmarkMassActionsByDRPCWorkers measures how the hub's DRPlacementControl workers change the
// time N applications (empty groups: the agents have no PVC to work on, so the hub's own work
// and the round trips through the agents dominate) take to be protected, to fail over to west
// with both clusters up, and to fail back to east. Run: go test ./internal/hub -run '^$' -bench
// MassActions -benchtime 1x (DROVER_BENCH_APPS, default 50; DROVER_BENCH_WORKERS, default
// "1,4,8,16").
func BenchmarkMassActionsByDRPCWorkers(b *testing.B) {
	n := benchEnvInt("DROVER_BENCH_APPS", 50)
	workers := []int{1, 4, 8, 16}
	if v := strings.TrimSpace(envOr("DROVER_BENCH_WORKERS", "")); v != "" {
		workers = nil
		for _, f := range strings.Split(v, ",") {
			w, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("DROVER_BENCH_WORKERS: %v", err)
			}
			workers = append(workers, w)
		}
	}
	stop("hub")
	b.Cleanup(func() {
		if err := startHub(); err != nil {
			b.Errorf("failed to start the suite's hub again: %v", err)
		}
	})
	for _, w := range workers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			for range b.N {
				massActions(b, n, w)
			}
		})
	}
}

func massActions(b *testing.B, n, workers int) {
	g := NewWithT(b)
	g.SetDefaultEventuallyTimeout(10 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	c, err := testLab.Cluster(lab.Hub)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	mgr, err := hub.NewManager(cfg, hub.Options{InProcess: true, DRPCWorkers: workers, ProbeInterval: time.Second, UnreachableAfter: 3 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(launch("bench-hub", crash.New("bench-hub"), mgr.Start, nil)).To(Succeed())
	defer stop("bench-hub")
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	start := time.Now()
	keys := createEmptyApps(g, h, n)
	defer deleteApps(g, h, keys)
	waitAll(g, h, keys, v1alpha1.PhaseDeployed, lab.East)
	protect := time.Since(start)
	failover := failAll(g, h, keys, lab.West)
	back := failAll(g, h, keys, lab.East)
	b.ReportMetric(protect.Seconds(), "protect-s")
	b.ReportMetric(failover.Seconds(), "failover-s")
	b.ReportMetric(back.Seconds(), "failback-s")
	b.Logf("%d applications, %d workers: protected in %s, failed over to west in %s, back to east in %s",
		n, workers, protect.Round(time.Millisecond), failover.Round(time.Millisecond), back.Round(time.Millisecond))
}

// failAll asks every application to fail over to cluster and returns how long until all are
// FailedOver and Available there.
func failAll(g *WithT, h client.Client, keys []client.ObjectKey, cluster string) time.Duration {
	ctx := context.Background()
	start := time.Now()
	for _, k := range keys {
		g.Eventually(func(g Gomega) {
			d := &v1alpha1.DRPlacementControl{}
			g.Expect(h.Get(ctx, k, d)).To(Succeed())
			d.Spec.Action, d.Spec.FailoverCluster = v1alpha1.ActionFailover, cluster
			g.Expect(h.Update(ctx, d)).To(Succeed())
		}).Should(Succeed())
	}
	waitAll(g, h, keys, v1alpha1.PhaseFailedOver, cluster)
	return time.Since(start)
}

func waitAll(g *WithT, h client.Client, keys []client.ObjectKey, phase v1alpha1.DRPCPhase, cluster string) {
	g.Eventually(func(g Gomega) {
		list := &v1alpha1.DRPlacementControlList{}
		g.Expect(h.List(context.Background(), list)).To(Succeed())
		done := 0
		for _, d := range list.Items {
			if strings.HasPrefix(d.Namespace, "bench-settled-") && d.Status.Phase == phase && d.Status.CurrentPrimary == cluster &&
				cond(&d, v1alpha1.ConditionAvailable).Status == "True" {
				done++
			}
		}
		g.Expect(done).To(Equal(len(keys)))
	}).Should(Succeed(), "all applications %s on %s", phase, cluster)
}
