// Package s3fault is lab code: an HTTP proxy in front of a lab S3 server that injects the faults
// an object store shows in production, one at a time and switchable while it runs: refused
// connections, 503 SlowDown, latency, a PUT that is applied but whose response is lost, a
// GET whose body is cut short, and writes acknowledged at once but applied late. Tests point an S3 profile's endpoint at the proxy and prove that
// drover's conditions name the store, nothing is lost, and protection resumes when it heals.
package s3fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Fault is what the proxy does to the requests it receives.
type Fault int

const (
	// None forwards every request untouched.
	None Fault = iota
	// Refuse closes the listening socket: connections are refused, as for a store that is down.
	Refuse
	// SlowDown answers every request 503 with S3's SlowDown error, forwarding nothing.
	SlowDown
	// Latency forwards every request after the proxy's delay.
	Latency
	// LoseResponse forwards a PUT (the store applies it) and then closes the connection
	// without answering; other requests are forwarded.
	LoseResponse
	// TruncateBody forwards a GET and sends only the first half of the object's body, with the
	// full Content-Length, before closing the connection; other requests are forwarded.
	TruncateBody
	// DelayWrites answers a PUT or a DELETE at once as done, and applies it only when the fault
	// is switched to another, in the order received: the writes of a client that read the
	// store before land late, as a request held in a network or in a store's queue does.
	// Reads are forwarded.
	DelayWrites
)

func (f Fault) String() string {
	return [...]string{"None", "Refuse", "SlowDown", "Latency", "LoseResponse", "TruncateBody", "DelayWrites"}[f]
}

// slowDownBody is S3's answer to a client that sends too many requests.
const slowDownBody = `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`

// Proxy is a fault-injecting proxy for one S3 server.
type Proxy struct {
	addr    string
	backend *httputil.ReverseProxy

	mu       sync.Mutex
	fault    Fault
	delay    time.Duration
	listener net.Listener
	server   *http.Server
	// applied counts the PUTs forwarded whose response was then dropped.
	applied int
	// delayed are the writes DelayWrites acknowledged and has not applied yet.
	delayed []*http.Request
}

// Start starts a proxy on a free loopback port in front of the S3 server at target.
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("invalid S3 endpoint %q: %w", target, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: l.Addr().String(), backend: httputil.NewSingleHostReverseProxy(u)}
	p.serve(l)
	return p, nil
}

// URL is the proxy's endpoint, for an S3 profile.
func (p *Proxy) URL() string { return "http://" + p.addr }

// Set switches the fault; delay applies to Latency. Refuse closes the listener, any other
// fault reopens it on the same address.
func (p *Proxy) Set(f Fault, delay time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fault == DelayWrites && f != DelayWrites {
		p.applyDelayed()
	}
	p.fault, p.delay = f, delay
	switch {
	case f == Refuse && p.listener != nil:
		err := p.server.Close()
		p.listener, p.server = nil, nil
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		return err
	case f != Refuse && p.listener == nil:
		l, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("failed to listen on %s again: %w", p.addr, err)
		}
		p.serveLocked(l)
	}
	return nil
}

// LostResponses is how many PUTs the store applied whose response the proxy dropped.
func (p *Proxy) LostResponses() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

// Delayed is how many writes DelayWrites holds, acknowledged and not applied yet.
func (p *Proxy) Delayed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.delayed)
}

// delayWrite acknowledges a write and keeps it to apply later; false when its body cannot be
// read.
func (p *Proxy) delayWrite(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return false
	}
	late := r.Clone(context.Background())
	late.Body = io.NopCloser(bytes.NewReader(body))
	p.mu.Lock()
	p.delayed = append(p.delayed, late)
	p.mu.Unlock()
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusNoContent)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	return true
}

// applyDelayed forwards the delayed writes, in order. The caller holds p.mu.
func (p *Proxy) applyDelayed() {
	for _, r := range p.delayed {
		p.backend.ServeHTTP(&recorder{header: http.Header{}}, r)
	}
	p.delayed = nil
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.Set(Refuse, 0) }

func (p *Proxy) serve(l net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serveLocked(l)
}

func (p *Proxy) serveLocked(l net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(p.handle), ReadHeaderTimeout: 10 * time.Second}
	p.listener, p.server = l, srv
	go func() { _ = srv.Serve(l) }()
}

func (p *Proxy) current() (Fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault, p.delay
}

func (p *Proxy) handle(w http.ResponseWriter, r *http.Request) {
	fault, delay := p.current()
	switch {
	case fault == SlowDown:
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, slowDownBody)
	case fault == Latency:
		select {
		case <-time.After(delay):
			p.backend.ServeHTTP(w, r)
		case <-r.Context().Done():
		}
	case fault == LoseResponse && r.Method == http.MethodPut:
		rec := &recorder{header: http.Header{}}
		p.backend.ServeHTTP(rec, r)
		p.mu.Lock()
		p.applied++
		p.mu.Unlock()
		hangUp(w)
	case fault == DelayWrites && (r.Method == http.MethodPut || r.Method == http.MethodDelete):
		if !p.delayWrite(w, r) {
			hangUp(w)
		}
	case fault == TruncateBody && r.Method == http.MethodGet:
		rec := &recorder{header: http.Header{}}
		p.backend.ServeHTTP(rec, r)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(rec.body)))
		w.WriteHeader(rec.code())
		_, _ = w.Write(rec.body[:len(rec.body)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		hangUp(w)
	default:
		p.backend.ServeHTTP(w, r)
	}
}

// hangUp closes the client's connection without a (complete) answer.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
	}
}

// recorder keeps a response the proxy decides what to do with.
type recorder struct {
	header http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) Write(b []byte) (int, error) {
	r.body = append(r.body, b...)
	return len(b), nil
}

func (r *recorder) WriteHeader(status int) { r.status = status }

func (r *recorder) code() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}
