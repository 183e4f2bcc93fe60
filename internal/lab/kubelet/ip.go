package kubelet

import (
	"fmt"
	"net/netip"
	"sync"
)

// ipPool hands out loopback addresses of one prefix as pod IPs.
type ipPool struct {
	prefix netip.Prefix
	mu     sync.Mutex
	used   map[netip.Addr]bool
}

func newIPPool(prefix netip.Prefix) *ipPool {
	return &ipPool{prefix: prefix.Masked(), used: map[netip.Addr]bool{}}
}

// allocate returns want when it is a free address of the pool (a pod keeps its IP across kubelet
// restarts), else the first free address after the prefix's first two.
func (p *ipPool) allocate(want string) (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, err := netip.ParseAddr(want); err == nil && p.prefix.Contains(a) && !p.used[a] {
		p.used[a] = true
		return a, nil
	}
	for a := p.prefix.Addr().Next().Next(); p.prefix.Contains(a); a = a.Next() {
		if !p.used[a] {
			p.used[a] = true
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free pod IP left in %s", p.prefix)
}

func (p *ipPool) release(a netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.used, a)
}
