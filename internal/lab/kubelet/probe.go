package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probe runs the container's readiness probe when its period has passed: a container is Ready
// after a success and stops being Ready after failureThreshold failures in a row. A container
// without a readiness probe (or with an exec or gRPC probe, which the lab does not run) is Ready
// while its process runs.
func (c *container) probe(ctx context.Context, podIP netip.Addr) {
	c.mu.Lock()
	running, startedAt, lastProbe := c.running, c.startedAt, c.lastProbe
	c.mu.Unlock()
	p := c.spec.ReadinessProbe
	if !running || p == nil || (p.HTTPGet == nil && p.TCPSocket == nil) {
		c.mu.Lock()
		c.ready = c.running
		c.mu.Unlock()
		return
	}
	now := time.Now()
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	if now.Before(startedAt.Add(time.Duration(p.InitialDelaySeconds)*time.Second)) || now.Sub(lastProbe) < period {
		return
	}
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	err := c.check(ctx, p, podIP, timeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastProbe = now
	if err == nil {
		c.ready, c.failures = c.running, 0
		return
	}
	c.failures++
	if c.failures >= max(p.FailureThreshold, 1) {
		c.ready = false
	}
}

func (c *container) check(ctx context.Context, p *corev1.Probe, podIP netip.Addr, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.TCPSocket != nil {
		port, err := c.port(p.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(podIP.String(), strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	}
	g := p.HTTPGet
	port, err := c.port(g.Port)
	if err != nil {
		return err
	}
	host := podIP.String()
	if g.Host != "" {
		host = g.Host
	}
	scheme := "http"
	if g.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+g.Path, nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	// A kubelet does not verify a probe's certificate either.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as a kubelet's probes
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("probe answered %d", resp.StatusCode)
	}
	return nil
}

// port resolves a probe's port, by number or by the name of a container port.
func (c *container) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.spec.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %s", c.spec.Name, p.StrVal)
}
