package volsync

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// How the peer reaches a destination (the group's spec.volSync.address, from the DRPolicy's
// volSyncAddress). VolSync gives a destination a Service of spec.rsyncTLS.serviceType,
// ClusterIP when unset, and publishes its address in status.rsyncTLS.address; a ClusterIP
// address is reachable only inside its cluster (backube/volsync api/v1alpha1/rsync_tls_types.go).
// So:
//   - LoadBalancer (the default): the Service is of type LoadBalancer and the reported address
//     is VolSync's, once the load-balancer implementation gave the Service one;
//   - ServiceExport: the Service is ClusterIP, the agent exports it with a Multi-Cluster
//     Services ServiceExport of the Service's name (DestinationServiceName), owned by the
//     destination and labelled with the group, and reports its clusterset address
//     (ClustersetAddress) once the MCS implementation marked the export Valid (and not failed
//     Ready). The ServiceExport is read uncached, so a cluster without the MCS API needs no
//     watch of it; it is deleted with its destination, and when the group goes back to
//     LoadBalancer.
//
// A destination whose address the peer cannot use (a LoadBalancer Service with no address, a
// ServiceExport not exported, or no MCS API at all) is reported with reason
// VolSyncAddressUnreachable, whose message names the spec.volSyncAddress to choose, once
// addressGrace has passed: VolSync waits as long before it warns that a Service has no address
// (internal/controller/mover/events.go, ServiceAddressTimeout).
const addressGrace = 15 * time.Second

// AddressMode is the group's spec.volSync.address, LoadBalancer when unset.
func AddressMode(vrg *v1alpha1.VolumeReplicationGroup) v1alpha1.VolSyncAddress {
	if vrg.Spec.VolSync == nil || vrg.Spec.VolSync.Address == "" {
		return v1alpha1.VolSyncAddressLoadBalancer
	}
	return vrg.Spec.VolSync.Address
}

// serviceType is the type of a destination's Service for the mode.
func serviceType(mode v1alpha1.VolSyncAddress) corev1.ServiceType {
	if mode == v1alpha1.VolSyncAddressServiceExport {
		return corev1.ServiceTypeClusterIP
	}
	return corev1.ServiceTypeLoadBalancer
}

// publishedAddress is the address the peer uses to reach rd, or "" and the Result saying why
// there is none yet.
func (b *Backend) publishedAddress(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, rd *volsyncv1alpha1.ReplicationDestination) (string, replication.Result) {
	if AddressMode(vrg) == v1alpha1.VolSyncAddressServiceExport {
		return b.exportedAddress(ctx, vrg, rd)
	}
	if rd.Status != nil && rd.Status.RsyncTLS != nil && ptr.Deref(rd.Status.RsyncTLS.Address, "") != "" {
		return *rd.Status.RsyncTLS.Address, replication.Done()
	}
	key := rd.Namespace + "/" + rd.Name
	if time.Since(rd.CreationTimestamp.Time) < addressGrace {
		return "", replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for ReplicationDestination %s to publish its address", key))
	}
	return "", replication.Retry(waitForHub, v1alpha1.ReasonVolSyncAddressUnreachable, fmt.Sprintf(
		"ReplicationDestination %s has no address: its Service %s of type LoadBalancer got none, as on a cluster without a load-balancer implementation. Install one whose addresses the peer cluster can reach, or set the DRPolicy's spec.volSyncAddress to ServiceExport if the clusters share a Multi-Cluster Services implementation",
		key, DestinationServiceName(rd.Name)))
}

// exportedAddress exports rd's Service and returns its clusterset address once the export is
// valid.
func (b *Backend) exportedAddress(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, rd *volsyncv1alpha1.ReplicationDestination) (string, replication.Result) {
	key := client.ObjectKey{Namespace: rd.Namespace, Name: DestinationServiceName(rd.Name)}
	se := &mcsv1alpha1.ServiceExport{}
	err := b.reader.Get(ctx, key, se)
	switch {
	case apimeta.IsNoMatchError(err):
		return "", noMCSAPI(key)
	case apierrors.IsNotFound(err):
		se = &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name, Labels: GroupLabels(vrg),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: volsyncv1alpha1.GroupVersion.String(), Kind: "ReplicationDestination", Name: rd.Name, UID: rd.UID,
			}},
		}}
		err := b.client.Create(ctx, se, client.FieldOwner(fieldOwner))
		switch {
		case apimeta.IsNoMatchError(err):
			return "", noMCSAPI(key)
		case err != nil && !apierrors.IsAlreadyExists(err):
			return "", replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to create ServiceExport %s: %v", key, err))
		}
		return "", replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for ServiceExport %s to be exported", key))
	case err != nil:
		return "", replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get ServiceExport %s: %v", key, err))
	case !OwnedBy(se, vrg):
		return "", replication.Failed(v1alpha1.ReasonReplicationConflict, fmt.Sprintf(
			"ServiceExport %s exists and does not belong to VolumeReplicationGroup %s/%s: delete it so drover can export the Service of ReplicationDestination %s/%s",
			key, vrg.Namespace, vrg.Name, rd.Namespace, rd.Name))
	}
	return exportState(se, ClustersetAddress(rd.Namespace, rd.Name))
}

// exportState is address once the MCS implementation marked the export Valid and it has not
// failed Ready, or the Result saying why the peer cannot use it.
func exportState(se *mcsv1alpha1.ServiceExport, address string) (string, replication.Result) {
	key := se.Namespace + "/" + se.Name
	valid := apimeta.FindStatusCondition(se.Status.Conditions, mcsv1alpha1.ConditionValid)
	ready := apimeta.FindStatusCondition(se.Status.Conditions, mcsv1alpha1.ConditionReady)
	var why string
	switch {
	case valid == nil && time.Since(se.CreationTimestamp.Time) < addressGrace:
		return "", replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for ServiceExport %s to be exported", key))
	case valid == nil:
		why = "no Multi-Cluster Services implementation has marked it Valid (it never will if this cluster runs none)"
	case valid.Status != metav1.ConditionTrue:
		why = fmt.Sprintf("it is not Valid (%s: %s)", valid.Reason, valid.Message)
	case ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason != mcsv1alpha1.ReasonPending:
		why = fmt.Sprintf("its export failed (Ready %s: %s)", ready.Reason, ready.Message)
	default:
		return address, replication.Done()
	}
	return "", replication.Retry(waitForHub, v1alpha1.ReasonVolSyncAddressUnreachable, fmt.Sprintf(
		"ServiceExport %s is not exported: %s, so the peer cluster cannot reach %s. Run a Multi-Cluster Services implementation (Submariner, or a cloud's) with both clusters in one clusterset, or set the DRPolicy's spec.volSyncAddress to LoadBalancer",
		key, why, address))
}

// noMCSAPI reports a cluster that does not serve the ServiceExport kind.
func noMCSAPI(key client.ObjectKey) replication.Result {
	return replication.Failed(v1alpha1.ReasonVolSyncAddressUnreachable, fmt.Sprintf(
		"this cluster does not serve ServiceExports (multicluster.x-k8s.io/v1alpha1), so Service %s cannot be exported to the peer cluster: install a Multi-Cluster Services implementation (Submariner, or a cloud's), or set the DRPolicy's spec.volSyncAddress to LoadBalancer",
		key))
}

// deleteServiceExport deletes the group's ServiceExport of a destination, if any; a cluster
// without the MCS API has none.
func (b *Backend) deleteServiceExport(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, rdName string) error {
	key := client.ObjectKey{Namespace: namespace, Name: DestinationServiceName(rdName)}
	se := &mcsv1alpha1.ServiceExport{}
	if err := b.reader.Get(ctx, key, se); err != nil {
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("failed to get ServiceExport %s: %w", key, err)
	}
	if !OwnedBy(se, vrg) || !se.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := b.client.Delete(ctx, se); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete ServiceExport %s: %w", key, err)
	}
	return nil
}
