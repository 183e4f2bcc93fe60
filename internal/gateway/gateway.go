// Package gateway is how the hub reaches the managed clusters: a client per DRCluster, built
// from the kubeconfig in the Secret the DRCluster names, a health probe per cluster, and one
// watch-backed cache per cluster of the VolumeReplicationGroups the hub reads. The hub never
// holds a client of a managed cluster any other way. It reads kubeconfig Secrets only in
// drover-system and its own namespace, and refuses a kubeconfig that runs a plugin, reads a
// file, skips TLS verification, uses a proxy or impersonates (kubeconfig.go).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeconfig"
)

// ErrNoKubeconfig wraps every error that says a DRCluster's kubeconfig Secret is missing or
// unusable: a person must fix it, retrying does not help.
var ErrNoKubeconfig = errors.New("no usable kubeconfig")

// Gateway gives the hub a client of each managed cluster and its health.
type Gateway interface {
	// Client returns a client of the named DRCluster. Its reads of VolumeReplicationGroups may
	// be served from a watch-backed cache; while the cluster is known not to answer, they fail
	// with the error that says why. Writes go to the cluster. An error wrapping ErrNoKubeconfig
	// says the cluster's Secret must be fixed; other errors are transient.
	Client(ctx context.Context, cluster string) (client.Client, error)
	// Probe re-reads the cluster's DRCluster and kubeconfig Secret, checks that the cluster
	// answers and serves drover's API, and records the outcome as the cluster's health. It
	// returns the cluster's client when the probe succeeded.
	Probe(ctx context.Context, cluster string) (client.Client, error)
	// Forget drops what the gateway holds for a cluster whose DRCluster is gone.
	Forget(cluster string)
	// RenewToken renews the cluster's expiring ServiceAccount token once enough of its life
	// has passed, and says where it stands; a kubeconfig without one is left as it is.
	RenewToken(ctx context.Context, cluster string, now time.Time) (Token, error)
}

// Notifier is a Gateway that tells the hub what changed on the clusters: an event whose object
// is a VolumeReplicationGroup (namespace and name only) when that group changed on some
// cluster, one whose object is a DRCluster (name only) when the cluster stopped answering or
// answers again with its cache synced.
type Notifier interface {
	Changes() <-chan event.GenericEvent
}

// requestTimeout bounds every request to a managed cluster, so a lost cluster costs a reconcile
// a few seconds at most.
const requestTimeout = 5 * time.Second

// Default client-side rate limits of each managed cluster's client. The hub reads the groups
// from a watch, so these only bound its writes (and probes): a settled hub sends about one probe
// per probe interval to each cluster; a mass failover or relocation sends a few writes per
// application to each cluster (create or patch the group, a namespace).
// 50/s with bursts of 100 lets 100 applications start an action within about 2 s without
// queueing behind client-go's default 5/s, and still leaves the cluster's own API priority and
// fairness the last word.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// Limits are the client-side rate limits of each managed cluster's client.
type Limits struct {
	// QPS is the sustained rate of requests per second; zero takes DefaultQPS.
	QPS float32
	// Burst is the number of requests that may go at once; zero takes DefaultBurst.
	Burst int
}

func (l Limits) orDefault() Limits {
	if l.QPS == 0 {
		l.QPS = DefaultQPS
	}
	if l.Burst == 0 {
		l.Burst = DefaultBurst
	}
	return l
}

// RESTConfig builds the configuration of a managed cluster from the kubeconfig Secret of its
// DRCluster (kubeconfig.FromSecret, which refuses what Check refuses), with the gateway's
// request timeout and the default rate limits.
func RESTConfig(secret *corev1.Secret) (*rest.Config, error) {
	cfg, err := kubeconfig.FromSecret(secret)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = requestTimeout
	cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	return cfg, nil
}

// CheckKubeconfig is kubeconfig.Check: it refuses a kubeconfig that uses a plugin, a file,
// insecure TLS, a proxy or impersonation.
func CheckKubeconfig(cfg *clientcmdapi.Config) error { return kubeconfig.Check(cfg) }

// ErrUnsafeKubeconfig wraps every refusal of CheckKubeconfig.
var ErrUnsafeKubeconfig = kubeconfig.ErrUnsafe

// Probe checks that the cluster answers and serves drover's API with the hub's credential: it
// lists at most one VolumeReplicationGroup, from the cluster itself.
func Probe(ctx context.Context, cl client.Reader) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := cl.List(ctx, &v1alpha1.VolumeReplicationGroupList{}, client.Limit(1)); err != nil {
		return fmt.Errorf("failed to list VolumeReplicationGroups: %w", err)
	}
	return nil
}
