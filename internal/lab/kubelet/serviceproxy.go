package kubelet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
)

// serviceProxy maps the ports of Services of type ExternalName whose externalName is the IP of
// a pod on this node to their targetPorts on that pod, as kube-proxy maps a Service's port to the
// pod's: the API server calls a webhook behind such a Service at externalName:port (the port of
// the webhook's service reference, 443 by convention) while the pod listens on the targetPort
// (9443). A port equal to its target needs nothing.
type serviceProxy struct {
	mu        sync.Mutex
	listeners map[string]*forward // by listen address
}

// forward is one listener that copies connections to target.
type forward struct {
	ln     net.Listener
	target string
}

// runServiceProxy keeps the forwards in line with the Services until ctx ends.
func (k *Kubelet) runServiceProxy(ctx context.Context, factory informers.SharedInformerFactory) {
	lister := factory.Core().V1().Services().Lister()
	p := &serviceProxy{listeners: map[string]*forward{}}
	defer p.closeAll()
	tick := time.NewTicker(k.opts.SyncPeriod)
	defer tick.Stop()
	for {
		services, err := lister.List(labels.Everything())
		if err == nil {
			p.apply(ctx, k.wantedForwards(services))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// wantedForwards lists listen address → target for every ExternalName Service that names one of
// this node's pod IPs.
func (k *Kubelet) wantedForwards(services []*corev1.Service) map[string]string {
	k.mu.Lock()
	byIP := map[netip.Addr]*podWorker{}
	for _, w := range k.workers {
		byIP[w.ip] = w
	}
	k.mu.Unlock()
	want := map[string]string{}
	for _, svc := range services {
		if svc.Spec.Type != corev1.ServiceTypeExternalName {
			continue
		}
		ip, err := netip.ParseAddr(svc.Spec.ExternalName)
		w := byIP[ip]
		if err != nil || w == nil {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			target, ok := w.containerPort(sp.TargetPort)
			if !ok || target == int(sp.Port) {
				continue
			}
			want[net.JoinHostPort(ip.String(), strconv.Itoa(int(sp.Port)))] = net.JoinHostPort(ip.String(), strconv.Itoa(target))
		}
	}
	return want
}

// containerPort resolves a Service's targetPort against the pod's containers.
func (w *podWorker) containerPort(target intstr.IntOrString) (int, bool) {
	if target.Type == intstr.Int {
		return target.IntValue(), target.IntValue() != 0
	}
	for _, c := range w.containers {
		for _, p := range c.spec.Ports {
			if p.Name == target.StrVal {
				return int(p.ContainerPort), true
			}
		}
	}
	return 0, false
}

// apply closes the forwards no longer wanted and opens the new ones.
func (p *serviceProxy) apply(ctx context.Context, want map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, f := range p.listeners {
		if want[addr] != f.target {
			_ = f.ln.Close()
			delete(p.listeners, addr)
		}
	}
	for addr, target := range want {
		if _, ok := p.listeners[addr]; ok {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Failed to forward a Service port", "address", addr, "target", target)
			continue
		}
		f := &forward{ln: ln, target: target}
		p.listeners[addr] = f
		go f.serve()
	}
}

func (p *serviceProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, f := range p.listeners {
		_ = f.ln.Close()
		delete(p.listeners, addr)
	}
}

// serve copies each accepted connection to and from the target until the listener closes.
func (f *forward) serve() {
	for {
		conn, err := f.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go func() {
			defer func() { _ = conn.Close() }()
			upstream, err := net.DialTimeout("tcp", f.target, 5*time.Second)
			if err != nil {
				return
			}
			defer func() { _ = upstream.Close() }()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(upstream, conn); done <- struct{}{} }()
			go func() { _, _ = io.Copy(conn, upstream); done <- struct{}{} }()
			<-done
		}()
	}
}
