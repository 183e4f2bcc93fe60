package volsync

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage/driver"
)

// The lab's multi-cluster network: a stand-in for a Multi-Cluster Services implementation
// (KEP-1645; Submariner, a cloud's) joining the two managed clusters in one clusterset. The
// ServiceExport CRD is always served; only while the network is on (Options.MultiClusterFlag
// exists: `drover lab up --multicluster-network`, lab.Options.MultiClusterNetwork) does this
// controller act on ServiceExports, as an MCS controller would:
//   - an export named like the Service of a ReplicationDestination in its namespace
//     (VolSync's volsync-rsync-tls-dst-<rd>, serviceName) is Valid (reason Valid) and Ready
//     (Exported), and its clusterset address NAME.NAMESPACE.svc.clusterset.local resolves on the
//     peer to the destination's own address: an export file in the VolSync directory names it;
//   - an export of no such Service is Valid=False, reason NoService, and resolves nowhere.
//
// With the network off nothing marks an export (as on clusters without an MCS implementation)
// and no clusterset address resolves: a source given one fails saying so. The lab makes no
// Service objects: the export is matched to its destination by name.
const (
	// exportPoll is how often an export is looked at again: the network flag has no watch.
	exportPoll = volsyncRetry
	// clustersetSuffix ends every clusterset address.
	clustersetSuffix = "." + mcsv1alpha1.ClustersetDomain
)

// export is what an exported Service's clusterset address resolves to on the peer.
type export struct {
	// Address is the destination's own address, which its listener serves.
	Address string `json:"address"`
	Cluster string `json:"cluster"`
}

// serviceName is the name VolSync gives a destination's Service (backube/volsync
// internal/controller/utils/utils.go, GetServiceName): the prefix and the name, or the CRC-32 of
// the name when that is longer than a Service name may be.
func serviceName(rdName string) string {
	const prefix = "volsync-rsync-tls-dst-"
	if name := prefix + rdName; len(name) <= 63 {
		return name
	}
	return fmt.Sprintf("%s%08x", prefix, crc32.ChecksumIEEE([]byte(rdName)))
}

func clustersetAddress(namespace, service string) string {
	return service + "." + namespace + clustersetSuffix
}

func exportPath(dataDir, address string) string {
	return filepath.Join(dataDir, "volsync", "exports", address+".json")
}

// networkOn reports whether the multi-cluster network joins the clusters.
func (s *store) networkOn() bool {
	if s.Opts.MultiClusterFlag == "" {
		return false
	}
	_, err := os.Stat(s.Opts.MultiClusterFlag)
	return err == nil
}

func setupServiceExports(mgr ctrl.Manager, s *store) error {
	if err := os.MkdirAll(filepath.Join(s.Opts.DataDir, "volsync", "exports"), 0o750); err != nil {
		return fmt.Errorf("failed to create the exports directory: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).Named("lab-mcs-serviceexport").
		For(&mcsv1alpha1.ServiceExport{}).Complete(driver.ReconcilerFunc(s.reconcileExport))
}

func (s *store) reconcileExport(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	address := clustersetAddress(req.Namespace, req.Name)
	se := &mcsv1alpha1.ServiceExport{}
	if err := s.Client.Get(ctx, req.NamespacedName, se); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, s.unexport(address)
		}
		return ctrl.Result{}, err
	}
	if !s.networkOn() || se.DeletionTimestamp != nil {
		return ctrl.Result{RequeueAfter: exportPoll}, s.unexport(address)
	}
	rd, err := s.exportedDestination(ctx, se)
	if err != nil {
		return ctrl.Result{}, err
	}
	base := se.DeepCopy()
	if rd == nil {
		setExportConditions(se, metav1.ConditionFalse, mcsv1alpha1.ReasonNoService,
			fmt.Sprintf("Service %s/%s does not exist", se.Namespace, se.Name))
		err = s.unexport(address)
	} else {
		target, _ := destinationAddress(rd)
		setExportConditions(se, metav1.ConditionTrue, mcsv1alpha1.ReasonValid, "")
		err = s.writeExport(address, export{Address: target, Cluster: s.Opts.Cluster})
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if !equality.Semantic.DeepEqual(base.Status, se.Status) {
		if err := s.Client.Status().Patch(ctx, se, client.MergeFrom(base)); err != nil {
			return ctrl.Result{}, fmt.Errorf("failed to patch status of ServiceExport %s: %w", klog.KObj(se), err)
		}
	}
	return ctrl.Result{RequeueAfter: exportPoll}, nil
}

// exportedDestination is the ReplicationDestination whose Service the export names, or nil.
func (s *store) exportedDestination(ctx context.Context, se *mcsv1alpha1.ServiceExport) (*volsyncv1alpha1.ReplicationDestination, error) {
	list := &volsyncv1alpha1.ReplicationDestinationList{}
	if err := s.Client.List(ctx, list, client.InNamespace(se.Namespace)); err != nil {
		return nil, fmt.Errorf("failed to list ReplicationDestinations in %s: %w", se.Namespace, err)
	}
	for i := range list.Items {
		rd := &list.Items[i]
		if serviceName(rd.Name) == se.Name && rd.Spec.RsyncTLS != nil && rd.DeletionTimestamp == nil {
			return rd, nil
		}
	}
	return nil, nil
}

// setExportConditions sets Valid, and Ready as MCS implementations do: Exported when valid.
func setExportConditions(se *mcsv1alpha1.ServiceExport, valid metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&se.Status.Conditions, metav1.Condition{Type: mcsv1alpha1.ConditionValid, Status: valid,
		Reason: reason, Message: msg, ObservedGeneration: se.Generation})
	ready := metav1.Condition{Type: mcsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: mcsv1alpha1.ReasonExported,
		Message: "Service is exported to the clusterset", ObservedGeneration: se.Generation}
	if valid != metav1.ConditionTrue {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, mcsv1alpha1.ReasonPending, "the export is not valid"
	}
	meta.SetStatusCondition(&se.Status.Conditions, ready)
}

func (s *store) writeExport(address string, e export) error {
	var have export
	if err := driver.ReadJSON(exportPath(s.Opts.DataDir, address), &have); err == nil && have == e {
		return nil
	}
	return driver.WriteJSON(exportPath(s.Opts.DataDir, address), e)
}

func (s *store) unexport(address string) error {
	if err := os.Remove(exportPath(s.Opts.DataDir, address)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove export %s: %w", address, err)
	}
	return nil
}

// resolve is the address whose listener on the peer serves address, and whether it was reached
// through an export: address itself, or for a clusterset address the exported destination's,
// when the network is on and the peer exports it.
func (s *store) resolve(address string) (string, bool, error) {
	if !strings.HasSuffix(address, clustersetSuffix) {
		return address, false, nil
	}
	if !s.networkOn() {
		return "", false, driver.WaitFor(volsyncRetry,
			"Cannot resolve %s: no multi-cluster network joins this cluster (%s) and its peer, so no clusterset address resolves (as without a Multi-Cluster Services implementation): use a LoadBalancer destination, or start the lab with --multicluster-network",
			address, s.Opts.Cluster)
	}
	var e export
	if err := driver.ReadJSON(exportPath(s.Opts.PeerDataDir, address), &e); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", false, driver.WaitFor(volsyncRetry,
				"Cannot resolve %s: the peer cluster exports no such Service: create a ServiceExport of the destination's Service there", address)
		}
		return "", false, err
	}
	return e.Address, true, nil
}
