package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The agent's own certificate (release manifests): it fills the Secret and injects the CA into the
// manifests' ValidatingWebhookConfiguration. Watch and update the Secret in the agent's namespace;
// read every configuration (the rotator's cache watches the kind) and update the fence's.
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=secrets,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=list;watch;update

// Defaults of a CertRotation, those of a real installation.
const (
	// DefaultCAValidity is how long the fence's CA lasts.
	DefaultCAValidity = 10 * 365 * 24 * time.Hour
	// DefaultServerValidity is how long a serving certificate lasts.
	DefaultServerValidity = 365 * 24 * time.Hour
	// DefaultRenewBefore renews a certificate (CA or serving) this long before it expires.
	DefaultRenewBefore = 90 * 24 * time.Hour
	// DefaultCheckInterval is how often the rotator checks the certificates.
	DefaultCheckInterval = 12 * time.Hour
	// rotatorFieldOwner names the agent in the managedFields of the caBundle it injects.
	rotatorFieldOwner = "drover-agent"
	// certReloadInterval is how often the serving certificate's files are re-read besides
	// file events (a kubelet swaps a Secret volume's files by a symlink).
	certReloadInterval = 10 * time.Second
	// certLoadRetry is how often a serving certificate that cannot be loaded yet is retried.
	certLoadRetry = time.Second
)

// CertRotation says how the agent manages the fence's certificate itself, as the release
// manifests install it: a CA and a serving certificate for the fence's Service in a Secret, the
// CA injected as the caBundle of the configuration, both renewed before they expire.
type CertRotation struct {
	// Secret holds ca.crt, ca.key, tls.crt and tls.key. It must exist (the manifests create it
	// empty); the rotator fills and renews it.
	Secret types.NamespacedName
	// DNSName is the serving certificate's name: the Service's <name>.<namespace>.svc.
	DNSName string
	// Configuration names the ValidatingWebhookConfiguration whose caBundle is injected.
	Configuration string
	// CertDir is where the Secret is mounted: the server reads tls.crt and tls.key from there.
	// The rotator is ready once the files exist and the CA is injected.
	CertDir string
	// CAValidity, ServerValidity, RenewBefore and CheckInterval default to the Default
	// constants; tests shorten them.
	CAValidity, ServerValidity, RenewBefore, CheckInterval time.Duration
}

// AddCertRotator adds open-policy-agent/cert-controller's rotator to mgr and returns a channel
// closed once the serving certificate is in CertDir and the CA injected. Every replica rotates
// (no leader election), as every replica serves; the Secret's resourceVersion settles races.
func AddCertRotator(mgr manager.Manager, r CertRotation) (<-chan struct{}, error) {
	if r.Secret.Namespace == "" || r.Secret.Name == "" || r.DNSName == "" || r.Configuration == "" || r.CertDir == "" {
		return nil, errors.New("the fence's certificate rotation needs a Secret, a DNS name, a configuration and a directory")
	}
	ready := make(chan struct{})
	cr := &rotator.CertRotator{
		SecretKey:              r.Secret,
		CertDir:                r.CertDir,
		CAName:                 "drover-fence-ca",
		CAOrganization:         "drover",
		DNSName:                r.DNSName,
		ExtraDNSNames:          []string{r.DNSName + ".cluster.local"},
		IsReady:                ready,
		Webhooks:               []rotator.WebhookInfo{{Name: r.Configuration, Type: rotator.Validating}},
		FieldOwner:             rotatorFieldOwner,
		CaCertDuration:         orDefault(r.CAValidity, DefaultCAValidity),
		ServerCertDuration:     orDefault(r.ServerValidity, DefaultServerValidity),
		LookaheadInterval:      orDefault(r.RenewBefore, DefaultRenewBefore),
		RotationCheckFrequency: orDefault(r.CheckInterval, DefaultCheckInterval),
		CertName:               CertFile,
		KeyName:                KeyFile,
		// The webhook reconciler waits for the files before injecting, so that the API server
		// trusts a CA only once the server can present a certificate it signed.
		EnableReadinessCheck: true,
		ControllerName:       "fence-cert-rotator",
	}
	if err := rotator.AddRotator(mgr, cr); err != nil {
		return nil, fmt.Errorf("failed to add the fence's certificate rotator: %w", err)
	}
	return ready, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// ReadyCheck is a readiness check (healthz.Checker) that passes once ready is closed.
func ReadyCheck(ready <-chan struct{}) func(*http.Request) error {
	return func(*http.Request) error {
		select {
		case <-ready:
			return nil
		default:
			return errors.New("the fence's serving certificate is not in place yet")
		}
	}
}

// CertFiles serves the certificate in a directory (tls.crt, tls.key) that may be empty when
// the process starts: once ready is closed it loads the files and reloads them when they
// change. Until then a handshake fails. Add it to the manager; it needs no leader.
type CertFiles struct {
	dir     string
	ready   <-chan struct{}
	watcher atomic.Pointer[certwatcher.CertWatcher]
}

var _ manager.LeaderElectionRunnable = (*CertFiles)(nil)

// NewCertFiles serves the certificate in dir once ready is closed.
func NewCertFiles(dir string, ready <-chan struct{}) *CertFiles {
	return &CertFiles{dir: dir, ready: ready}
}

// GetCertificate fits ServerOptions.GetCertificate.
func (c *CertFiles) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	w := c.watcher.Load()
	if w == nil {
		return nil, errors.New("the fence's serving certificate is not in place yet")
	}
	return w.GetCertificate(hello)
}

// Start waits for ready, loads the files and watches them until ctx is done. The rotator calls
// the certificate ready once tls.crt exists; the key may not be there or readable yet (seen in
// CI: "failed to find any PEM data in key input" right after ready, which stopped the agent), so
// a load that fails is retried every second, logged, until it succeeds.
func (c *CertFiles) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-c.ready:
	}
	var w *certwatcher.CertWatcher
	err := wait.PollUntilContextCancel(ctx, certLoadRetry, true, func(context.Context) (bool, error) {
		var err error
		if w, err = certwatcher.New(filepath.Join(c.dir, CertFile), filepath.Join(c.dir, KeyFile)); err != nil {
			ctrl.Log.WithName("fence").Info("The fence's serving certificate cannot be loaded yet; retrying", "dir", c.dir, "error", err.Error())
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil //nolint:nilerr // ctx is done: the manager is stopping
	}
	c.watcher.Store(w.WithWatchInterval(certReloadInterval))
	if err := w.Start(ctx); err != nil {
		return fmt.Errorf("failed to watch the fence's serving certificate in %s: %w", c.dir, err)
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves.
func (*CertFiles) NeedLeaderElection() bool { return false }
