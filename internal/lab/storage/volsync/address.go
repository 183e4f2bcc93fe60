package volsync

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
)

// Destination addresses by Service type. VolSync gives a destination a Service of type
// spec.rsyncTLS.serviceType, ClusterIP when unset, and publishes that Service's address in
// status.rsyncTLS.address (backube/volsync api/v1alpha1/rsync_tls_types.go); a ClusterIP
// address cannot be reached from another cluster without a multi-cluster network. The lab
// publishes, for each type, an address that is only a key looked up on disk (no connection is
// ever opened to it):
//   - ClusterIP (the default): volsync-<rd>.<namespace>.svc.cluster.local, the Service's name
//     inside its own cluster. Its listener says so (reach "cluster"), and a source on the peer
//     fails its handshake with a message saying which setting to choose;
//   - LoadBalancer: volsync-<rd>.<namespace>.lab, reachable from the peer;
//   - a ClusterIP Service exported with a ServiceExport while the lab's multi-cluster network is
//     on: its clusterset address volsync-rsync-tls-dst-<rd>.<namespace>.svc.clusterset.local
//     resolves on the peer to the ClusterIP address, then reachable (serviceexport.go, resolve).
//     Without the network a clusterset address resolves nowhere.
//
// Other types (NodePort) are taken as ClusterIP. A destination whose type changes publishes the
// new address and removes the listener of the old one.
const (
	// reachCluster: only a source in the destination's own cluster reaches the address.
	reachCluster = "cluster"
	// reachPeer: a source on the peer cluster reaches the address.
	reachPeer = "peer"
)

// destinationAddress is the address a destination publishes for its Service type, and who
// reaches it.
func destinationAddress(rd *volsyncv1alpha1.ReplicationDestination) (address, reach string) {
	serviceType := corev1.ServiceTypeClusterIP
	if rd.Spec.RsyncTLS != nil {
		serviceType = ptr.Deref(rd.Spec.RsyncTLS.ServiceType, corev1.ServiceTypeClusterIP)
	}
	if serviceType == corev1.ServiceTypeLoadBalancer {
		return rsyncTLSAddress(rd.Namespace, rd.Name), reachPeer
	}
	return clusterIPAddress(rd.Namespace, rd.Name), reachCluster
}

// clusterIPAddress is the in-cluster name of a destination's ClusterIP Service.
func clusterIPAddress(namespace, name string) string {
	return fmt.Sprintf("volsync-%s.%s.svc.cluster.local", name, namespace)
}

// forgetDestination removes the listeners (and incoming transfers) of every address a
// destination may have published, except keep.
func (s *store) forgetDestination(namespace, name, keep string) error {
	var errs []error
	for _, address := range []string{rsyncTLSAddress(namespace, name), clusterIPAddress(namespace, name)} {
		if address != keep {
			errs = append(errs, s.forgetAddress(address))
		}
	}
	return errors.Join(errs...)
}

// unreachable explains why a source on this cluster cannot reach the listener at address, or
// is nil when it can.
func (s *store) unreachable(l listener, address string, exported bool) error {
	if l.Reach != reachCluster || exported {
		return nil
	}
	return driver.WaitFor(volsyncRetry,
		"The destination's address %s is the ClusterIP Service address of ReplicationDestination %s/%s on cluster %s, which this cluster (%s) cannot reach without a multi-cluster network: set spec.rsyncTLS.serviceType to LoadBalancer on the destination, or export its Service with a ServiceExport and use its clusterset address (%s)",
		address, l.Namespace, l.Name, l.Cluster, s.Opts.Cluster, clustersetAddress(l.Namespace, serviceName(l.Name)))
}
