package join

import (
	"errors"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// target is one of the two clusters join writes to, with what messages say about it.
type target struct {
	// role is "the hub" or "managed cluster NAME".
	role   string
	source string
	host   string
	cl     client.Client
}

func newTarget(role string, c Cluster) (*target, error) {
	cfg := rest.CopyConfig(c.Config)
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("failed to register Kubernetes' types: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("failed to register drover's types: %w", err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client of %s at %s: %w", role, cfg.Host, explainErr(err, role, c.Source, cfg.Host))
	}
	source := c.Source
	if source == "" {
		source = "the given configuration"
	}
	return &target{role: role, source: source, host: cfg.Host, cl: cl}, nil
}

// explain turns an error of a request to t into one that says what to check.
func (t *target) explain(err error) error { return explainErr(err, t.role, t.source, t.host) }

// explainErr says what to do about the errors a user can fix: an unreachable server and
// refused credentials. Other errors are returned as they are.
func explainErr(err error, role, source, host string) error {
	var urlErr *url.Error
	switch {
	case err == nil:
		return nil
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s at %s refused the credentials of %s (401 Unauthorized): the token or client certificate is not valid there; check that this kubeconfig is for that cluster and not expired: %w",
			role, host, source, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s at %s refused a request of %s (403 Forbidden): use a kubeconfig whose user may create namespaces, ServiceAccounts, Secrets and RBAC (cluster-admin): %w",
			role, host, source, err)
	case errors.As(err, &urlErr):
		return fmt.Errorf("cannot reach %s at %s (from %s): check the server address, that the API server runs and that this machine can reach it (VPN, firewall, port): %w",
			role, host, source, err)
	}
	return err
}
