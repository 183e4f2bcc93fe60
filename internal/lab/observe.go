package lab

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/lab/process"
)

// What a benchmark reads of a running lab: the API server's and drover's Prometheus metrics
// and the memory of drover's processes.

// metricsBodyLimit bounds a /metrics body read (an API server's is a few MB).
const metricsBodyLimit = 64 << 20

// APIServerMetrics returns the cluster's kube-apiserver /metrics (Prometheus text format),
// read as the administrator.
func (c *Cluster) APIServerMetrics(ctx context.Context) (string, error) {
	hc, err := c.adminHTTPClient()
	if err != nil {
		return "", err
	}
	hc.Timeout = 30 * time.Second
	return readMetrics(ctx, hc, c.Endpoint()+"/metrics", "")
}

// DroverMetrics returns the /metrics of the cluster's Ready drover pod (the hub's or the
// agent's), read with token (MetricsReaderToken), as Prometheus scrapes it.
func (c *Cluster) DroverMetrics(ctx context.Context, token string) (string, error) {
	ip, err := c.droverPodIP(ctx)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // drover's metrics certificate is self-signed, as Prometheus's insecure_skip_verify
		Proxy:           nil,
	}}
	return readMetrics(ctx, hc, "https://"+net.JoinHostPort(ip, strconv.Itoa(metricsPort))+"/metrics", token)
}

func readMetrics(ctx context.Context, hc *http.Client, url, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("failed to read %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, metricsBodyLimit))
	if err != nil {
		return "", fmt.Errorf("failed to read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body[:min(len(body), 512)])))
	}
	return string(body), nil
}

// DroverRSS returns the resident memory (VmRSS) of the cluster's drover processes in bytes,
// summed over the containers of drover's pods that the lab kubelet runs.
func (c *Cluster) DroverRSS() (int64, error) {
	pods, err := c.DroverPods()
	if err != nil {
		return 0, err
	}
	var total int64
	found := false
	for _, p := range pods {
		for _, ct := range p.Containers {
			if ct.PID == 0 {
				continue
			}
			rss, err := process.RSS(ct.PID)
			if err != nil {
				return 0, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			total += rss
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("cluster %s runs no drover process", c.Name)
	}
	return total, nil
}

// ComponentDrover names drover's own processes (the containers of the hub's or the agent's
// pods) in ProcessCPU.
const ComponentDrover = "drover"

// ProcessCPU is the CPU time one running lab process has used since it started.
type ProcessCPU struct {
	PID       int
	Cluster   string
	Component string
	CPU       time.Duration
}

// CPUTimes returns the CPU time used so far by each of the cluster's running processes: its
// control plane and lab components by name, and drover's containers as ComponentDrover. A
// benchmark takes two and subtracts them (bench's cpuProfileOf) to see where a step spent the machine.
func (c *Cluster) CPUTimes() ([]ProcessCPU, error) {
	procs, err := c.processes()
	if err != nil {
		return nil, err
	}
	var out []ProcessCPU
	for name, p := range procs {
		if cpu, err := process.CPU(p.PID); err == nil {
			out = append(out, ProcessCPU{PID: p.PID, Cluster: c.Name, Component: name, CPU: cpu})
		}
	}
	pods, err := c.DroverPods()
	if err != nil {
		return nil, err
	}
	for _, pod := range pods {
		for _, ct := range pod.Containers {
			if ct.PID == 0 {
				continue
			}
			if cpu, err := process.CPU(ct.PID); err == nil {
				out = append(out, ProcessCPU{PID: ct.PID, Cluster: c.Name, Component: ComponentDrover, CPU: cpu})
			}
		}
	}
	return out, nil
}
