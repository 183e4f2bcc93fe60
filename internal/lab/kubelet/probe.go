package kubelet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// probeState counts a probe's consecutive failures and remembers when it last ran.
type probeState struct {
	failures int32
	last     time.Time
}

// probe runs the container's readiness and liveness probes when their periods have passed.
func (c *container) probe(ctx context.Context, podIP netip.Addr) {
	c.readiness(ctx, podIP)
	c.liveness(ctx, podIP)
}

// runnable says whether the lab runs the probe: HTTP GET, TCP and exec probes, not gRPC ones.
func runnable(p *corev1.Probe) bool {
	return p != nil && (p.HTTPGet != nil || p.TCPSocket != nil || p.Exec != nil)
}

// readiness makes a container Ready after a probe's success and not Ready after
// failureThreshold failures in a row. A container without a readiness probe (or with a gRPC
// probe, which the lab does not run) is Ready while its process runs.
func (c *container) readiness(ctx context.Context, podIP netip.Addr) {
	p := c.spec.ReadinessProbe
	if !runnable(p) {
		c.mu.Lock()
		c.ready = c.running
		c.mu.Unlock()
		return
	}
	ran, ok, failed := c.runProbe(ctx, "Readiness", p, podIP, &c.readyProbe)
	if !ran {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.ready = c.running
	} else if failed {
		c.ready = false
	}
}

// liveness restarts a process whose liveness probe failed failureThreshold times in a row: SIGTERM,
// then SIGKILL after the pod's termination grace period, as a kubelet does.
func (c *container) liveness(ctx context.Context, podIP netip.Addr) {
	p := c.spec.LivenessProbe
	if !runnable(p) {
		return
	}
	_, _, failed := c.runProbe(ctx, "Liveness", p, podIP, &c.liveProbe)
	if !failed {
		return
	}
	c.mu.Lock()
	pid := c.pid
	c.liveProbe = probeState{}
	c.mu.Unlock()
	if pid == 0 {
		return
	}
	grace := time.Duration(ptr.Deref(c.w.currentPod().Spec.TerminationGracePeriodSeconds, 30)) * time.Second
	klog.FromContext(ctx).Info("Liveness probe failed, restarting container", "container", c.spec.Name, "pid", pid)
	_ = syscall.Kill(pid, syscall.SIGTERM) // the container's process alone, as terminate signals it
	time.AfterFunc(grace, func() {
		c.mu.Lock()
		same := c.pid == pid
		c.mu.Unlock()
		if same {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
}

// runProbe runs p when the process runs, its initial delay and period have passed; it reports
// whether it ran, whether it succeeded, and whether failures reached the threshold. A failure
// is an Unhealthy Warning event on the pod, as a kubelet's prober records it
// (pkg/kubelet/prober/prober.go).
func (c *container) runProbe(ctx context.Context, kind string, p *corev1.Probe, podIP netip.Addr, st *probeState) (ran, ok, failed bool) {
	c.mu.Lock()
	running, startedAt, last := c.running, c.startedAt, st.last
	c.mu.Unlock()
	now := time.Now()
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	if !running || now.Before(startedAt.Add(time.Duration(p.InitialDelaySeconds)*time.Second)) || now.Sub(last) < period {
		return false, false, false
	}
	err := c.check(ctx, p, podIP, time.Duration(max(p.TimeoutSeconds, 1))*time.Second)
	if err != nil {
		c.w.k.recorder.Eventf(c.w.currentPod(), corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %v", kind, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st.last = now
	if err == nil {
		st.failures = 0
		return true, true, false
	}
	st.failures++
	return true, false, st.failures >= max(p.FailureThreshold, 1)
}

func (c *container) check(ctx context.Context, p *corev1.Probe, podIP netip.Addr, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.Exec != nil {
		return c.execProbe(ctx, p.Exec.Command)
	}
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
	defer func() { _ = resp.Body.Close() }()
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
