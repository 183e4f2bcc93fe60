//go:build monitoring

package lab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/config/grafana"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// TestTheSyncDelayAlertFiresWhileThePrimaryIsLostAndClearsAfterFailoverAndReturn runs a real
// Prometheus (bin/prometheus, make tools-monitoring) that scrapes the hub and both agents through
// their release manifests' endpoints with a drover-metrics-reader token and evaluates
// config/prometheus/rules.yaml. With a protected application, east is stopped: the critical
// DroverSyncDelay of the application must fire (3 intervals and the rule's minute); then drover
// fails over to west, east comes back, and the alert must clear. Then drover relocates the
// application home and drills it, and every query of the dashboard (config/grafana/drover.json)
// must return data over the story's time range. make test-monitoring runs it.
func TestTheSyncDelayAlertFiresWhileThePrimaryIsLostAndClearsAfterFailoverAndReturn(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	const ns = "monitoring-story"
	prom := startPrometheus(ctx, t, g)
	began := time.Now()
	firing := func(g Gomega, severity string) bool {
		for _, a := range prom.alerts(g) {
			if a.Labels["alertname"] == "DroverSyncDelay" && a.Labels["namespace"] == ns && a.Labels["severity"] == severity && a.State == "firing" {
				return true
			}
		}
		return false
	}
	var firedAfter time.Duration
	stop := func(name string) error {
		lost := time.Now()
		if err := testLab.Stop(name); err != nil {
			return err
		}
		// The failover is asked only once the alert pages.
		g.Eventually(func(g Gomega) { g.Expect(firing(g, "critical")).To(BeTrue()) }).
			WithTimeout(4*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "DroverSyncDelay fires while east is lost")
		firedAfter = time.Since(lost)
		t.Logf("DroverSyncDelay (critical) fired %s after east was stopped", firedAfter.Round(time.Second))
		return nil
	}
	r := newStory(ctx, g, t, ns, stop)
	defer func() { g.Expect(r.Close()).To(Succeed()) }()
	s := r.Protect(ctx)
	g.Expect(s.Err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(prom.value(g, `drover_drpc_rpo_lag_intervals{namespace="`+ns+`"}`)).To(BeNumerically("<", 2))
	}).WithTimeout(2*time.Minute).Should(Succeed(), "Prometheus scrapes the protected application's lag")
	g.Expect(firing(g, "warning") || firing(g, "critical")).To(BeFalse(), "no sync delay while protected")
	runSteps(t, g,
		func() story.Step { return r.Failover(ctx, lab.East) },
		func() story.Step { return r.Recover(ctx, lab.East) })
	g.Expect(firedAfter).To(BeNumerically(">", 0))
	cleared := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(firing(g, "warning")).To(BeFalse())
		g.Expect(firing(g, "critical")).To(BeFalse())
	}).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "DroverSyncDelay clears once west syncs to the returned east")
	t.Logf("DroverSyncDelay cleared %s after east was back and drover settled", time.Since(cleared).Round(time.Second))
	// So that every panel of the dashboard has something to draw: a relocation home (long enough
	// for a scrape to see it run), a readiness drill, a full drill.
	runSteps(t, g,
		func() story.Step { return r.Relocate(ctx, lab.West) },
		func() story.Step { return r.Drill(ctx, lab.East) })
	fullDrill(ctx, t, g, prom)
	expectEveryPanelDraws(t, g, prom, began)
}

// fullDrill protects a StatefulSet of VolSync-replicated volumes, whose drill copies them into
// its sandbox and starts the workloads (Full mode): the one drill that measures an RTO and an
// RPO (a VolRep drill runs in Readiness mode); it waits until Prometheus scraped them.
func fullDrill(ctx context.Context, t *testing.T, g Gomega, prom *prometheus) {
	const ns = "monitoring-drill"
	r := startCase(ctx, g, t, story.Case{
		Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass,
		Mode: story.SelfContained, Namespace: ns,
	}, nil)
	defer func() { g.Expect(r.Close()).To(Succeed()) }()
	runSteps(t, g,
		func() story.Step { return r.Protect(ctx) },
		func() story.Step { return r.Drill(ctx, lab.East) })
	g.Eventually(func(g Gomega) {
		g.Expect(prom.evaluate(g, `drover_drill_rto_seconds{namespace="`+ns+`"}`, true, time.Now(), time.Now())).NotTo(BeEmpty())
	}).WithTimeout(time.Minute).WithPolling(2*time.Second).Should(Succeed(), "Prometheus scrapes the drill's RTO")
}

// seriesLabels writes a series' labels without those of the lab's scrape jobs.
func seriesLabels(m map[string]string) string {
	var parts []string
	for k, v := range m {
		if k != "instance" && k != "job" && k != "lab_cluster" {
			parts = append(parts, k+"="+v)
		}
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// dashboardRateInterval stands for Grafana's $__rate_interval: at least four scrapes.
const dashboardRateInterval = "1m"

// dashboardQuery is q as Grafana sends it with every application and cluster selected.
func dashboardQuery(q grafana.Query, window time.Duration) string {
	return strings.NewReplacer(
		`$__rate_interval`, dashboardRateInterval,
		`$__range`, fmt.Sprintf("%ds", int(window.Seconds())),
		`$namespace`, ".*",
		`$cluster`, ".*",
	).Replace(q.Expr)
}

// expectEveryPanelDraws evaluates every query of the dashboard (config/grafana/drover.json) as
// Grafana would over the story's time range, from began to now: a range query every scrape
// interval, or an instant query at the end for the tables' and bars' instant queries; each must
// return a series with a number, and the test logs what each panel would show.
func expectEveryPanelDraws(t *testing.T, g Gomega, prom *prometheus, began time.Time) {
	queries, err := grafana.Queries()
	g.Expect(err).NotTo(HaveOccurred())
	end := time.Now()
	window := end.Sub(began)
	var empty []string
	for _, q := range queries {
		expr := dashboardQuery(q, window)
		series := prom.evaluate(g, expr, q.Instant, began, end)
		if len(series) == 0 {
			empty = append(empty, fmt.Sprintf("panel %q query %s: %s", q.Panel, q.RefID, expr))
		}
		t.Logf("panel %q %s: %d series; %s", q.Panel, q.RefID, len(series), strings.Join(series[:min(len(series), 3)], "; "))
	}
	g.Expect(empty).To(BeEmpty(), "queries of the dashboard that return no series with a number over the last %s", window.Round(time.Second))
}

// evaluate runs expr as an instant query at end or a range query from start to end at the scrape
// interval and returns, for each series with a sample that is a number, its labels and its last
// such sample.
func (p *prometheus) evaluate(g Gomega, expr string, instant bool, start, end time.Time) []string {
	var body struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
				Values [][]any           `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if instant {
		p.get(g, fmt.Sprintf("/api/v1/query?query=%s&time=%d", url.QueryEscape(expr), end.Unix()), &body)
	} else {
		p.get(g, fmt.Sprintf("/api/v1/query_range?query=%s&start=%d&end=%d&step=2", url.QueryEscape(expr), start.Unix(), end.Unix()), &body)
	}
	var out []string
	for _, r := range body.Data.Result {
		samples := r.Values
		if instant {
			samples = [][]any{r.Value}
		}
		last := ""
		for _, s := range samples {
			if v, ok := s[1].(string); ok && v != "NaN" && v != "+Inf" && v != "-Inf" {
				last = v
			}
		}
		if last != "" {
			out = append(out, fmt.Sprintf("%s %s", seriesLabels(r.Metric), last))
		}
	}
	slices.Sort(out)
	return out
}

// prometheus is a running Prometheus server.
type prometheus struct{ url string }

type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alerts returns the alerts Prometheus holds (pending and firing).
func (p *prometheus) alerts(g Gomega) []promAlert {
	var body struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	p.get(g, "/api/v1/alerts", &body)
	return body.Data.Alerts
}

// value returns the value of the one series query returns.
func (p *prometheus) value(g Gomega, query string) float64 {
	var body struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	p.get(g, "/api/v1/query?query="+url.QueryEscape(query), &body)
	g.Expect(body.Data.Result).To(HaveLen(1), "query %s", query)
	var v float64
	_, err := fmt.Sscanf(body.Data.Result[0].Value[1].(string), "%g", &v)
	g.Expect(err).NotTo(HaveOccurred())
	return v
}

func (p *prometheus) get(g Gomega, path string, into any) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := hc.Get(p.url + path)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(json.NewDecoder(resp.Body).Decode(into)).To(Succeed())
}

// startPrometheus starts the lab's Prometheus as `drover lab up --monitoring` does and waits
// until it scrapes the hub and both agents.
func startPrometheus(ctx context.Context, t *testing.T, g Gomega) *prometheus {
	url, err := testLab.StartMonitoring(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	again, ok := testLab.MonitoringURL()
	g.Expect(ok).To(BeTrue(), "status finds the running Prometheus")
	g.Expect(again).To(Equal(url))
	t.Logf("Prometheus at %s", url)
	p := &prometheus{url: url}
	g.Eventually(func(g Gomega) {
		var body struct {
			Data struct {
				ActiveTargets []struct {
					Health string `json:"health"`
					Job    string `json:"scrapePool"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		p.get(g, "/api/v1/targets", &body)
		g.Expect(body.Data.ActiveTargets).To(HaveLen(3))
		for _, target := range body.Data.ActiveTargets {
			g.Expect(target.Health).To(Equal("up"), "target %s", target.Job)
		}
	}).WithTimeout(time.Minute).Should(Succeed(), "Prometheus scrapes the hub and both agents")
	return p
}
