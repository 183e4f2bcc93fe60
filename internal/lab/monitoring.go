package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/config"
	"github.com/drover-io/drover/internal/lab/process"
)

// With Options.Monitoring the lab runs a real Prometheus (bin/prometheus, `make
// tools-monitoring`) once drover is installed: it scrapes the hub and both agents through their
// release manifests' metrics endpoints, each with a token of a ServiceAccount of its cluster
// bound to the manifests' ClusterRole drover-metrics-reader, and evaluates drover's alert rules
// (config/prometheus/rules.yaml, as this binary embeds them).
const (
	// MetricsReaderRole is the release manifests' ClusterRole that may read drover's metrics.
	MetricsReaderRole = "drover-metrics-reader"
	// metricsPort is the metrics port of drover's pods in the release manifests.
	metricsPort = 8443
	// scraperAccount is the lab Prometheus's ServiceAccount on each cluster, in DroverNamespace.
	scraperAccount = "drover-lab-prometheus"
	// scrapeInterval is both the scrape and the rule evaluation interval: short, so a lab story
	// sees an alert change within seconds.
	scrapeInterval = 2 * time.Second
	// scraperTokenLifetime bounds the scrape tokens; `drover lab up` renews them.
	scraperTokenLifetime = 24 * time.Hour
	prometheusFile       = "prometheus"
)

// prometheusDir is where the lab's Prometheus keeps its configuration, tokens and data.
func (l *Lab) prometheusDir() string { return filepath.Join(l.opts.Dir, prometheusFile) }

// prometheusPortFile records the port the lab's Prometheus listens on.
func (l *Lab) prometheusPortFile() string { return filepath.Join(l.prometheusDir(), "port") }

// MonitoringURL is the address of the lab's Prometheus; ok is false when it does not run.
func (l *Lab) MonitoringURL() (url string, ok bool) {
	raw, err := os.ReadFile(l.prometheusPortFile())
	if err != nil {
		return "", false
	}
	procs, err := findProcesses(l.prometheusDir() + string(filepath.Separator))
	if err != nil || len(procs) == 0 {
		return "", false
	}
	return "http://127.0.0.1:" + strings.TrimSpace(string(raw)), true
}

// StartMonitoring starts the lab's Prometheus unless it runs already, with fresh scrape tokens
// and the current pod IPs of drover's pods, and waits until it scrapes all three clusters. It
// needs a lab that runs drover.
func (l *Lab) StartMonitoring(ctx context.Context) (string, error) {
	if !l.opts.RunDrover {
		return "", errors.New("monitoring needs drover in the lab: Prometheus scrapes drover's pods")
	}
	if url, ok := l.MonitoringURL(); ok {
		return url, nil
	}
	binary := filepath.Join(l.opts.BinDir, "prometheus")
	if _, err := os.Stat(binary); err != nil {
		return "", fmt.Errorf("%s is missing: run `make tools-monitoring` to build Prometheus", binary)
	}
	began := time.Now()
	dir := l.prometheusDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o750); err != nil {
		return "", err
	}
	if err := l.writePrometheusConfig(ctx, dir); err != nil {
		return "", err
	}
	port, err := process.ReservePort(l.opts.Dir)
	if err != nil {
		return "", err
	}
	if _, err := prometheusComponent(binary, dir, port).start(filepath.Join(dir, "logs"), l.opts.TieToParent); err != nil {
		return "", err
	}
	if err := os.WriteFile(l.prometheusPortFile(), []byte(strconv.Itoa(port)), 0o600); err != nil {
		return "", err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitPrometheusReady(ctx, url); err != nil {
		return "", fmt.Errorf("%w: see %s", err, filepath.Join(dir, "logs", componentPrometheus+".log"))
	}
	l.progress("prometheus: up at %s with drover's alert rules (%.1f s)", url, time.Since(began).Seconds())
	return url, nil
}

// writePrometheusConfig writes the rules, a scrape token per cluster and prometheus.yml.
func (l *Lab) writePrometheusConfig(ctx context.Context, dir string) error {
	rules, err := config.Tree.ReadFile("prometheus/rules.yaml")
	if err != nil {
		return fmt.Errorf("this drover embeds no alert rules: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		return err
	}
	var jobs []string
	for _, c := range l.clusters {
		token, err := c.MetricsReaderToken(ctx)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		tokenFile := filepath.Join(dir, c.Name+".token")
		if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
			return err
		}
		ip, err := c.droverPodIP(ctx)
		if err != nil {
			return err
		}
		jobs = append(jobs, fmt.Sprintf(`  - job_name: drover-%s
    scheme: https
    tls_config: {insecure_skip_verify: true}
    authorization: {credentials_file: %s}
    static_configs: [{targets: ["%s"], labels: {lab_cluster: %s}}]
`, c.Name, tokenFile, net.JoinHostPort(ip, strconv.Itoa(metricsPort)), c.Name))
	}
	cfg := fmt.Sprintf("global: {scrape_interval: %s, evaluation_interval: %s}\nrule_files: [%s]\nscrape_configs:\n%s",
		scrapeInterval, scrapeInterval, filepath.Join(dir, "rules.yaml"), strings.Join(jobs, ""))
	return os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600)
}

// MetricsReaderToken returns a token of the lab Prometheus's ServiceAccount on the cluster,
// bound to MetricsReaderRole, creating both when missing: what a Prometheus scrapes drover with.
func (c *Cluster) MetricsReaderToken(ctx context.Context) (string, error) {
	cl, err := c.client()
	if err != nil {
		return "", err
	}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: DroverNamespace, Name: scraperAccount}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: scraperAccount},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: DroverNamespace, Name: scraperAccount}},
		},
	} {
		if err := client.IgnoreAlreadyExists(cl.Create(ctx, obj)); err != nil {
			return "", fmt.Errorf("failed to create %T %s for Prometheus: %w", obj, obj.GetName(), err)
		}
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(DroverNamespace).CreateToken(ctx, scraperAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(scraperTokenLifetime.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("failed to request a token for Prometheus: %w", err)
	}
	return tr.Status.Token, nil
}

// droverPodIP is the pod IP of the cluster's Ready drover pod (the hub's or the agent's).
func (c *Cluster) droverPodIP(ctx context.Context) (string, error) {
	cl, err := c.client()
	if err != nil {
		return "", err
	}
	pod, why, err := c.readyDroverPod(ctx, cl)
	if err != nil {
		return "", err
	}
	if pod != nil && pod.Status.PodIP == "" {
		pod, why = nil, "its pod has no IP yet"
	}
	if pod == nil {
		return "", fmt.Errorf("cluster %s: %s has no Ready pod to scrape (%s): see `drover lab status`", c.Name, c.droverDeployment(), why)
	}
	return pod.Status.PodIP, nil
}

// waitPrometheusReady waits for Prometheus's readiness endpoint.
func waitPrometheusReady(ctx context.Context, url string) error {
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/-/ready", nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: poll again
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("prometheus at %s did not become ready within a minute", url)
	}
	return nil
}
