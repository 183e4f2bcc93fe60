//go:build monitoring

package lab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// TestTheSyncDelayAlertFiresWhileThePrimaryIsLostAndClearsAfterFailoverAndReturn runs a real
// Prometheus (bin/prometheus, make tools-monitoring) that scrapes the hub and both agents through
// their release manifests' endpoints with a drover-metrics-reader token and evaluates
// config/prometheus/rules.yaml. With a protected application, east is stopped: the critical
// DroverSyncDelay of the application must fire (3 intervals and the rule's minute); then drover
// fails over to west, east comes back, and the alert must clear. make test-monitoring runs it.
func TestTheSyncDelayAlertFiresWhileThePrimaryIsLostAndClearsAfterFailoverAndReturn(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	const ns = "monitoring-story"
	prom := startPrometheus(ctx, t, g)
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
