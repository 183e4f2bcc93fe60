// Package metrics adds drover's Prometheus collectors to controller-runtime's registry, which
// the manager's metrics endpoint serves, for as long as the manager runs. docs/metrics.md
// lists every metric.
package metrics

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ServerOptions are the options of the manager's metrics endpoint at addr ("0" disables it).
// Unless insecure, it serves HTTPS (a self-signed certificate: Prometheus scrapes it with
// insecure_skip_verify, or a cert-manager certificate can be mounted later) and lets in only
// clients whose bearer token the API server authenticates (TokenReview) and authorizes to get
// the nonResourceURL /metrics (SubjectAccessReview): the ClusterRole drover-metrics-reader of
// the release manifests. Insecure serves plain HTTP to anyone, for a local Prometheus.
func ServerOptions(addr string, insecure bool) metricsserver.Options {
	if insecure {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
}

// Register adds the collectors to controller-runtime's registry when the manager becomes the
// leader and removes them when it stops: only the replica that reconciles reports, and a
// manager started again in the same process (tests) registers its own collectors afresh. A
// collector that cannot be registered (another one with the same metrics and constant labels
// is there) is logged and left out; metrics never stop the manager.
func Register(mgr manager.Manager, collectors ...prometheus.Collector) error {
	return mgr.Add(&registration{registry: crmetrics.Registry, collectors: collectors})
}

type registration struct {
	registry   prometheus.Registerer
	collectors []prometheus.Collector
}

var _ manager.LeaderElectionRunnable = (*registration)(nil)

// NeedLeaderElection: only the leader reconciles, so only the leader has something to report.
func (r *registration) NeedLeaderElection() bool { return true }

// Start registers the collectors and unregisters them when ctx ends.
func (r *registration) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("metrics")
	var added []prometheus.Collector
	for _, c := range r.collectors {
		if err := r.registry.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				log.Info("Metrics already registered by another manager of this process: not reported twice")
			} else {
				log.Error(err, "Failed to register metrics")
			}
			continue
		}
		added = append(added, c)
	}
	<-ctx.Done()
	for _, c := range added {
		r.registry.Unregister(c)
	}
	return nil
}
