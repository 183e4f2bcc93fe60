package join

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/identitypolicy"
	"github.com/drover-io/drover/internal/kubeconfig"
)

const (
	// DefaultBoundsTimeout is how long join waits for the managed cluster's API server to
	// enforce the admission policy that bounds the hub's credential. An API server loads a new
	// policy through an informer and type-checks it first: usually well under a second.
	DefaultBoundsTimeout = 2 * time.Minute
	// boundsPoll is the time between two probes.
	boundsPoll = 250 * time.Millisecond
	// probeNamespace is the name of the namespace the probe asks, as a dry run, to create.
	probeNamespace = "drover-join-probe"
)

// awaitCredentialBounds returns once the managed cluster refuses, to the credential the hub is
// about to get (kubeconfig), a write that ValidatingAdmissionPolicy drover-hub-on-managed-cluster
// forbids: a namespace labelled as a drill's sandbox, asked as a dry run. RBAC alone lets that
// credential write far more than drover does; an API server enforces a policy only some time
// after it was created, and join hands the hub its credential only once it is bounded.
func (o Options) awaitCredentialBounds(ctx context.Context, managed *target, raw []byte) error {
	// The hub reads its kubeconfig Secret through kubeconfig.FromSecret: the probe does too.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: KubeconfigSecretName(o.Name)},
		Data: map[string][]byte{v1alpha1.KubeconfigSecretKey: raw}}
	cfg, err := kubeconfig.FromSecret(secret)
	if err != nil {
		return fmt.Errorf("failed to read the hub's kubeconfig for %s: %w", managed.role, err)
	}
	cfg.Timeout = requestTimeout
	asHub, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("failed to create a client of %s with the hub's credential: %w", managed.role, err)
	}
	// The deadline ends the waiting, not a probe: each probe runs to its own answer (bounded by
	// requestTimeout), so that the error names what the API server last said rather than a probe
	// cut off by the deadline on a slow server.
	deadline := time.Now().Add(o.BoundsTimeout)
	said := false
	for {
		bounded, last := probeBounds(ctx, asHub)
		if bounded {
			return nil
		}
		if !said {
			fmt.Fprintf(o.Out, "Waiting for %s to enforce ValidatingAdmissionPolicy %s on the hub's credential...\n",
				managed.role, identitypolicy.HubOnManagedCluster)
			said = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for %s to enforce ValidatingAdmissionPolicy %s (last answer to the probe: %s): %w",
				managed.role, identitypolicy.HubOnManagedCluster, last, ctx.Err())
		case <-time.After(min(boundsPoll, time.Until(deadline))):
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%s does not enforce ValidatingAdmissionPolicy %s after %s (last answer to the probe: %s): "+
				"without it the hub's credential may write more than drover does, so join did not give it to the hub; "+
				"check that the API server runs Kubernetes 1.30 or later with the ValidatingAdmissionPolicy admission plugin "+
				"enabled and that the policy and its binding exist, then join again", managed.role, identitypolicy.HubOnManagedCluster, o.BoundsTimeout, last)
		}
	}
}

// probeBounds asks cl, as a dry run, to create a namespace labelled drover.io/drill, and says
// whether drover-hub-on-managed-cluster refused it, with the answer in words.
func probeBounds(ctx context.Context, cl client.Client) (bool, string) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace, Labels: map[string]string{"drover.io/drill": "join-probe"}}}
	err := cl.Create(ctx, ns, client.DryRunAll)
	switch {
	case err == nil:
		return false, "admitted"
	case strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+identitypolicy.HubOnManagedCluster+"'"):
		return true, err.Error()
	default:
		return false, err.Error()
	}
}
