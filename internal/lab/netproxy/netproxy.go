// Package netproxy is the lab's network between clusters: loopback TCP proxies in front of a
// managed cluster's API server and S3 store, through which the hub and the peer cluster reach
// it. While a flag file exists the cluster is partitioned: the proxies close every connection
// they carry and refuse new ones (their listeners are closed, so a dial is refused at once, as
// a host behind a dropped route is unreachable); once the file is gone they listen again on the
// same addresses. The cluster itself keeps running and answers on its direct addresses.
//
// Only loopback addresses are accepted, to listen on and to forward to.
package netproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// PollInterval is how often the proxy looks at the partition flag.
const PollInterval = 50 * time.Millisecond

// Route forwards connections accepted on Listen to Target, both host:port on loopback.
type Route struct {
	Listen string
	Target string
}

// ParseRoute reads LISTEN=TARGET.
func ParseRoute(s string) (Route, error) {
	listen, target, ok := strings.Cut(s, "=")
	if !ok {
		return Route{}, fmt.Errorf("invalid route %q: want LISTEN=TARGET, both host:port on loopback", s)
	}
	r := Route{Listen: listen, Target: target}
	for _, addr := range []string{listen, target} {
		if err := checkLoopback(addr); err != nil {
			return Route{}, fmt.Errorf("invalid route %q: %w", s, err)
		}
	}
	return r, nil
}

// String is the route as ParseRoute reads it.
func (r Route) String() string { return r.Listen + "=" + r.Target }

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q is not host:port: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q is not a loopback IP address: the lab's network stays on this machine", addr)
	}
	return nil
}

// Partitioned reports whether the flag file exists.
func Partitioned(flag string) bool {
	_, err := os.Stat(flag)
	return err == nil
}

// Run serves routes until ctx ends, closed while flag exists.
func Run(ctx context.Context, flag string, routes []Route) error {
	proxies := make([]*proxy, 0, len(routes))
	for _, r := range routes {
		if err := checkLoopback(r.Listen); err != nil {
			return err
		}
		if err := checkLoopback(r.Target); err != nil {
			return err
		}
		proxies = append(proxies, &proxy{route: r, conns: map[net.Conn]struct{}{}})
	}
	defer func() {
		for _, p := range proxies {
			p.close()
		}
	}()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		cut := Partitioned(flag)
		for _, p := range proxies {
			if cut {
				p.close()
			} else if err := p.open(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// proxy is one route: its listener while open and the connections it carries.
type proxy struct {
	route Route

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// open listens, if it does not already.
func (p *proxy) open() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		return nil
	}
	ln, err := net.Listen("tcp", p.route.Listen)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", p.route.Listen, err)
	}
	p.ln = ln
	go p.accept(ln)
	return nil
}

// close stops listening and cuts every connection.
func (p *proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *proxy) accept(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		go p.forward(ln, in)
	}
}

// forward carries one connection to the target until either side closes or the route is cut.
func (p *proxy) forward(ln net.Listener, in net.Conn) {
	out, err := net.DialTimeout("tcp", p.route.Target, 5*time.Second)
	if err != nil {
		_ = in.Close()
		return
	}
	if !p.track(ln, in, out) {
		_ = in.Close()
		_ = out.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	_ = in.Close()
	_ = out.Close()
	<-done
	p.untrack(in, out)
}

// track records a connection pair, unless the listener that accepted it was closed meanwhile
// (the route was cut between the accept and the dial).
func (p *proxy) track(ln net.Listener, conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != ln {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}
