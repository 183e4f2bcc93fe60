package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

const (
	// nodeLeaseDuration is the node Lease's duration, as a kubelet's default; it is renewed every
	// quarter of it.
	nodeLeaseDuration = 40 * time.Second
	// nodeStatusPeriod is how often the Ready condition's heartbeat is written; the Lease is what
	// the node lifecycle controller watches in between.
	nodeStatusPeriod = time.Minute
	nodeLeaseNS      = "kube-node-lease"
)

// ensureNode registers the node (without kwok's annotation, so kwok leaves it and its pods alone)
// and marks it Ready.
func (k *Kubelet) ensureNode(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: k.opts.NodeName,
			Labels: map[string]string{
				NodeLabel:                 "true",
				corev1.LabelHostname:      k.opts.NodeName,
				corev1.LabelOSStable:      runtime.GOOS,
				corev1.LabelArchStable:    runtime.GOARCH,
				"node.kubernetes.io/role": "lab-kubelet",
			},
		},
		Spec: corev1.NodeSpec{Taints: k.opts.NodeTaints},
	}
	_, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to register node %s: %w", k.opts.NodeName, err)
	}
	if err := k.patchNodeStatus(ctx); err != nil {
		return err
	}
	return k.renewLease(ctx)
}

// heartbeat renews the node's Lease and refreshes its Ready condition until ctx ends.
func (k *Kubelet) heartbeat(ctx context.Context) {
	log := klog.FromContext(ctx)
	lease := time.NewTicker(nodeLeaseDuration / 4)
	defer lease.Stop()
	status := time.NewTicker(nodeStatusPeriod)
	defer status.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			err = k.renewLease(ctx)
		case <-status.C:
			err = k.patchNodeStatus(ctx)
		}
		if err != nil && ctx.Err() == nil {
			log.Error(err, "Failed to report node health")
		}
	}
}

func (k *Kubelet) patchNodeStatus(ctx context.Context) error {
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	status := corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message:           "lab kubelet is posting ready status",
			LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: k.opts.NodeName},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: k.port}},
		NodeInfo: corev1.NodeSystemInfo{
			OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
			KubeletVersion: "lab", ContainerRuntimeVersion: "lab://processes",
		},
	}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return fmt.Errorf("failed to encode status of node %s: %w", k.opts.NodeName, err)
	}
	_, err = k.client.CoreV1().Nodes().Patch(ctx, k.opts.NodeName, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("failed to patch status of node %s: %w", k.opts.NodeName, err)
	}
	return nil
}

// renewLease creates or renews the node's Lease in kube-node-lease, as a kubelet does.
func (k *Kubelet) renewLease(ctx context.Context) error {
	leases := k.client.CoordinationV1().Leases(nodeLeaseNS)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, k.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.opts.NodeName, Namespace: nodeLeaseNS},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(k.opts.NodeName),
				LeaseDurationSeconds: ptr.To(int32(nodeLeaseDuration / time.Second)),
				RenewTime:            &now,
			},
		}
		if node, err := k.client.CoreV1().Nodes().Get(ctx, k.opts.NodeName, metav1.GetOptions{}); err == nil {
			lease.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}}
		}
		if err := k.ensureNamespace(ctx, nodeLeaseNS); err != nil {
			return err
		}
		if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create lease of node %s: %w", k.opts.NodeName, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to get lease of node %s: %w", k.opts.NodeName, err)
	}
	lease.Spec.HolderIdentity = ptr.To(k.opts.NodeName)
	lease.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to renew lease of node %s: %w", k.opts.NodeName, err)
	}
	return nil
}

// ensureNamespace creates kube-node-lease where no controller does (an API server alone).
func (k *Kubelet) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := k.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create namespace %s: %w", name, err)
	}
	return nil
}
