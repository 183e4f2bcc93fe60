package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is where the server serves the fence.
const Path = "/fence/pods"

const (
	// readHeaderTimeout bounds a client that opens a connection and sends nothing.
	readHeaderTimeout = 5 * time.Second
	// shutdownTimeout bounds the wait for requests in flight when the server stops.
	shutdownTimeout = 5 * time.Second
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Address is host:port to listen on; port 0 picks a free port (see Server.Addr).
	Address string
	// GetCertificate returns the serving certificate for each handshake: SelfSigned's in the lab
	// and tests, a certwatcher.CertWatcher over the flag-provided files in production (it
	// reloads rotated certificates; add it to the manager so it watches).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Fences decides which PVCs are fenced.
	Fences Fences
	// Movers admits drover's own VolSync movers on fenced PVCs; nil admits none.
	Movers Movers
	// Logger logs refusals the fence could not decide; the zero value uses controller-runtime's.
	Logger logr.Logger
}

// Server serves the fence over HTTPS. It implements manager.Runnable, so the agent adds it to
// its manager; it needs no leader election (every replica may answer the API server).
type Server struct {
	listener net.Listener
	server   *http.Server
}

var _ manager.LeaderElectionRunnable = (*Server)(nil)

// NewServer listens on opts.Address at once, so Addr is known before Start (the
// configuration's URL needs it). Start serves and closes the listener when it returns.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.GetCertificate == nil {
		return nil, errors.New("the fence's server needs a serving certificate")
	}
	if opts.Fences == nil {
		return nil, errors.New("the fence's server needs Fences")
	}
	hook, err := admission.StandaloneWebhook(&admission.Webhook{Handler: NewPodFence(opts.Fences, opts.Movers)},
		admission.StandaloneOptions{Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("failed to build the fence's webhook: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, hook)
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: opts.GetCertificate}
	listener, err := tls.Listen("tcp", opts.Address, tlsConfig)
	if err != nil {
		return nil, fmt.Errorf("failed to listen on %s for the fence's webhook: %w", opts.Address, err)
	}
	return &Server{
		listener: listener,
		server:   &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout},
	}, nil
}

// Addr is the address the server listens on, host:port.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// URL is the fence's URL for a configuration whose API server reaches the server directly (the
// lab: kube-apiserver and the agent share 127.0.0.1).
func (s *Server) URL() string { return "https://" + s.Addr() + Path }

// Start serves until ctx is done, then lets requests in flight finish (at most
// shutdownTimeout) and returns.
func (s *Server) Start(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.server.Serve(s.listener) }()
	select {
	case err := <-done:
		return fmt.Errorf("the fence's webhook server on %s stopped: %w", s.Addr(), err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := s.server.Shutdown(shutdown); err != nil {
		return fmt.Errorf("failed to stop the fence's webhook server on %s: %w", s.Addr(), err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("the fence's webhook server on %s stopped: %w", s.Addr(), err)
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every agent replica serves.
func (s *Server) NeedLeaderElection() bool { return false }
