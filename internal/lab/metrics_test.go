package lab_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// metricsPort is the port of the release manifests' --metrics-bind-address.
const metricsPort = "8443"

// TestTheHubAndAnAgentServeTheirMetricsToAMetricsReader scrapes /metrics of the hub and of
// west's agent as a Prometheus would, through the endpoint the release manifests configure
// (HTTPS, authenticated and authorized by the API server): a ServiceAccount bound to the
// ClusterRole drover-metrics-reader gets them, a token without that role is refused (403), no
// token is refused (401). After a failover east → west, the hub reports the application's RPO
// lag and the failover's duration, and west's agent its primary group.
func TestTheHubAndAnAgentServeTheirMetricsToAMetricsReader(t *testing.T) {
	g := newG(t)
	ctx := context.Background()
	const ns = "install-metrics"
	r := newStory(ctx, g, t, ns, nil)
	defer func() { g.Expect(r.Close()).To(Succeed()) }()
	runSteps(t, g,
		func() story.Step { return r.Protect(ctx) },
		func() story.Step { return r.Failover(ctx, lab.East) },
		func() story.Step { return r.Recover(ctx, lab.East) })

	for _, name := range []string{lab.Hub, lab.West} {
		reader, stranger := scraperTokens(ctx, g, name)
		url := "https://" + net.JoinHostPort(readyPod(ctx, g, name).Status.PodIP, metricsPort) + "/metrics"
		code, _ := scrape(g, url, "")
		g.Expect(code).To(Equal(http.StatusUnauthorized), "%s: no token", name)
		code, _ = scrape(g, url, stranger)
		g.Expect(code).To(Equal(http.StatusForbidden), "%s: a token without drover-metrics-reader", name)
		if name == lab.Hub {
			g.Eventually(func(g Gomega) {
				code, body := scrape(g, url, reader)
				g.Expect(code).To(Equal(http.StatusOK))
				lag := sample(g, body, "drover_drpc_rpo_lag_seconds", `namespace="`+ns+`"`)
				g.Expect(lag).To(BeNumerically(">=", 0))
				g.Expect(lag).To(BeNumerically("<", 60), "west syncs to east again")
				g.Expect(sample(g, body, "drover_drpc_rpo_lag_intervals", `namespace="`+ns+`"`)).To(BeNumerically(">=", 0))
				took := sample(g, body, "drover_drpc_last_action_duration_seconds", `action="Failover"`, `namespace="`+ns+`"`)
				g.Expect(took).To(BeNumerically(">", 0))
				g.Expect(sample(g, body, "drover_drpc_protected", `namespace="`+ns+`"`)).To(Equal(1.0))
				g.Expect(sample(g, body, "drover_drpc_phase", `namespace="`+ns+`"`, `phase="FailedOver"`)).To(Equal(1.0))
				g.Expect(sample(g, body, "drover_action_duration_seconds_count", `action="Failover"`, `result="Succeeded"`)).To(BeNumerically(">=", 1))
				g.Expect(sample(g, body, "drover_drcluster_reachable", `cluster="east"`)).To(Equal(1.0))
				t.Logf("hub: RPO lag %.1fs, failover took %.3fs", lag, took)
			}).Should(Succeed(), "the hub's metrics after the failover")
			continue
		}
		g.Eventually(func(g Gomega) {
			code, body := scrape(g, url, reader)
			g.Expect(code).To(Equal(http.StatusOK))
			group := []string{`cluster="west"`, `namespace="` + ns + `"`}
			g.Expect(sample(g, body, "drover_vrg_primary", group...)).To(Equal(1.0))
			g.Expect(sample(g, body, "drover_vrg_protected_pvcs", group...)).To(BeNumerically(">", 0))
			g.Expect(sample(g, body, "drover_vrg_last_group_sync_timestamp_seconds", group...)).To(BeNumerically(">", 0))
			g.Expect(sample(g, body, "drover_vrg_pvc_last_sync_timestamp_seconds", group...)).To(BeNumerically(">", 0))
			g.Expect(sample(g, body, "drover_s3_writes_total", `cluster="west"`)).To(BeNumerically(">", 0))
		}).Should(Succeed(), "west's agent's metrics after the failover")
	}
}

// scraperTokens returns, on the cluster, the token the lab's Prometheus scrapes with (a
// ServiceAccount bound to the release manifests' drover-metrics-reader) and a token of a
// ServiceAccount without that role.
func scraperTokens(ctx context.Context, g Gomega, name string) (reader, stranger string) {
	c := cluster(g, name)
	reader, err := c.MetricsReaderToken(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	const ns = "monitoring"
	cl := clusterClient(g, name)
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stranger"}},
	} {
		g.Expect(client.IgnoreAlreadyExists(cl.Create(ctx, obj))).To(Succeed())
	}
	admin, err := c.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := kubernetes.NewForConfigOrDie(admin).CoreV1().ServiceAccounts(ns).CreateToken(ctx, "stranger", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return reader, tr.Status.Token
}

// scrape GETs url with the bearer token (none when empty), as Prometheus does with
// insecure_skip_verify: the endpoint's certificate is self-signed.
func scrape(g Gomega, url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the metrics endpoint's certificate is self-signed
		Proxy:           nil,
	}}
	resp, err := hc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}

// sample returns the value of the one sample of metric whose labels contain each of labels
// (`name="value"`), failing when there is none.
func sample(g Gomega, body, metric string, labels ...string) float64 {
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(metric) + `\{([^}]*)\} (\S+)$`)
	for _, m := range line.FindAllStringSubmatch(body, -1) {
		all := true
		for _, l := range labels {
			if !regexp.MustCompile(`(^|,)` + regexp.QuoteMeta(l) + `(,|$)`).MatchString(m[1]) {
				all = false
				break
			}
		}
		if all {
			v, err := strconv.ParseFloat(m[2], 64)
			g.Expect(err).NotTo(HaveOccurred())
			return v
		}
	}
	g.Expect(fmt.Sprintf("no sample of %s with %v", metric, labels)).To(BeEmpty())
	return 0
}
