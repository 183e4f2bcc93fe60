package kubelet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/klog/v2"
	utilexec "k8s.io/utils/exec"
)

const (
	// streamIdleTimeout ends an exec stream with no traffic, as a kubelet's
	// --streaming-connection-idle-timeout (default 4h) does.
	streamIdleTimeout = 4 * time.Hour
	// defaultServingAddress is where the kubelet listens when Serving.Address is empty: a free
	// port on the node's address, which the Node's status.daemonEndpoints reports.
	defaultServingAddress = "127.0.0.1:0"
)

// Serving is the kubelet's HTTPS server, which the API server reaches for pods/exec at the
// Node's InternalIP and status.daemonEndpoints.kubeletEndpoint.port.
type Serving struct {
	// Cert is the kubelet's serving certificate (a kubelet's --tls-cert-file): the API server
	// checks it against its --kubelet-certificate-authority for the address it dials, 127.0.0.1.
	Cert tls.Certificate
	// ClientCAs verify the callers' client certificates (a kubelet's --client-ca-file): the API
	// server presents its --kubelet-client-certificate. A caller without one is refused.
	ClientCAs *x509.CertPool
	// Address is where to listen; default 127.0.0.1:0, a free port.
	Address string
}

// listen opens the kubelet's server socket, so that the Node can report its port.
func (k *Kubelet) listen() error {
	s := k.opts.Serving
	if s == nil {
		return nil
	}
	addr := s.Address
	if addr == "" {
		addr = defaultServingAddress
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("failed to listen at %s for the API server's exec requests: %w", addr, err)
	}
	k.listener = tls.NewListener(l, &tls.Config{
		Certificates: []tls.Certificate{s.Cert}, ClientCAs: s.ClientCAs,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})
	k.port = int32(l.Addr().(*net.TCPAddr).Port) //nolint:gosec // a TCP port fits
	return nil
}

// serve answers the API server's requests until ctx ends: /exec/ (pkg/kubelet/server/server.go
// getExec) and /healthz. A kubelet's other endpoints (logs, attach, port-forward, stats) are not
// served: a request for one gets 404.
func (k *Kubelet) serve(ctx context.Context) {
	if k.listener == nil {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/exec/", k.handleExec)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := &http.Server{
		Handler: k.authorized(mux), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(k.listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		klog.FromContext(ctx).Error(err, "Kubelet server stopped")
	}
}

// authorized lets a request through when its client certificate's user (common name) and groups
// (organizations) may reach the node's proxy subresource with the request's verb, as a kubelet
// with --authorization-mode=Webhook asks the API server with a SubjectAccessReview
// (pkg/kubelet/server/auth.go: every path but /stats, /metrics, /logs and /spec maps to
// nodes/proxy).
func (k *Kubelet) authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		subject := r.TLS.VerifiedChains[0][0].Subject
		verb := requestVerb(r.Method)
		review, err := k.client.AuthorizationV1().SubjectAccessReviews().Create(r.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: subject.CommonName, Groups: subject.Organization,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: verb, Resource: "nodes", Subresource: "proxy", Name: k.opts.NodeName,
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=proxy): %v",
				subject.CommonName, verb, err), http.StatusInternalServerError)
			return
		}
		if !review.Status.Allowed {
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=proxy)",
				subject.CommonName, verb), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requestVerb is the authorization verb of an HTTP method on a kubelet's endpoint.
func requestVerb(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	default:
		return "get"
	}
}

// handleExec serves /exec/{namespace}/{pod}/{container} (and /exec/{namespace}/{pod}/{uid}/
// {container}) with the command in the command query parameters, streams negotiated over SPDY
// or WebSocket by the same library a container runtime's streaming server uses.
func (k *Kubelet) handleExec(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/exec/"), "/")
	var ns, name, uid, ctr string
	switch len(parts) {
	case 3:
		ns, name, ctr = parts[0], parts[1], parts[2]
	case 4:
		ns, name, uid, ctr = parts[0], parts[1], parts[2], parts[3]
	default:
		http.NotFound(w, r)
		return
	}
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	if k.podLister == nil {
		http.Error(w, "the kubelet is starting", http.StatusServiceUnavailable)
		return
	}
	if _, err := k.podLister(key); err != nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	remotecommand.ServeExec(w, r, execer{k}, key.String(), uid, ctr, r.URL.Query()["command"], opts,
		streamIdleTimeout, remotecommand.DefaultStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// execer runs exec requests in the kubelet's containers (remotecommand.Executor).
type execer struct{ k *Kubelet }

// ExecInContainer runs cmd in the running container of pod name ("namespace/pod"), as
// container.execCommand does for exec probes, with the request's streams. A non-zero exit is
// returned as a utilexec.ExitError, which the stream reports as the exit code.
func (e execer) ExecInContainer(ctx context.Context, name, uid, containerName string, cmd []string, in io.Reader,
	out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize, timeout time.Duration,
) error {
	if tty {
		return errors.New("the lab kubelet gives exec no terminal: run the command without a TTY (kubectl exec without -t)")
	}
	ns, pod, _ := strings.Cut(name, "/")
	c, err := e.k.runningContainer(types.NamespacedName{Namespace: ns, Name: pod}, types.UID(uid), containerName)
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	command, err := c.execCommand(ctx, cmd)
	if err != nil {
		return err
	}
	if in != nil {
		command.Stdin = in
	}
	if out != nil {
		command.Stdout = out
	}
	if errOut != nil {
		command.Stderr = errOut
	}
	return execExit(command.Run())
}

// execExit is the error of an exec's command as a container runtime reports it: a non-zero exit
// as a utilexec.ExitError of its code, and a command killed by a signal (as every process of a
// container is when its first process ends, an exec's too) as the shell's 128 + the signal's
// number, as runc's exec reports it (137 for SIGKILL).
func execExit(err error) error {
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return err
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return utilexec.CodeExitError{Err: exitErr, Code: 128 + int(ws.Signal())}
	}
	return utilexec.ExitErrorWrapper{ExitError: exitErr}
}

// runningContainer is the container named containerName (the pod's first when empty) of a pod
// this kubelet runs, refused when its process does not run.
func (k *Kubelet) runningContainer(key types.NamespacedName, uid types.UID, containerName string) (*container, error) {
	k.mu.Lock()
	w := k.workers[key]
	k.mu.Unlock()
	if w == nil || (uid != "" && w.uid != uid) {
		return nil, fmt.Errorf("pod %s does not run on node %s", key, k.opts.NodeName)
	}
	all := append(append([]*container{}, w.containers...), w.inits...)
	for _, c := range all {
		if containerName != "" && c.spec.Name != containerName {
			continue
		}
		c.mu.Lock()
		running := c.running && c.pid != 0
		c.mu.Unlock()
		if !running {
			return nil, fmt.Errorf("container %s of pod %s is not running", c.spec.Name, key)
		}
		return c, nil
	}
	return nil, fmt.Errorf("container %q not found in pod %s", containerName, key)
}
