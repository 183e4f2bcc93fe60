package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DRPolicySpec pairs two clusters and says how the applications protected by the policy
// replicate between them.
type DRPolicySpec struct {
	// drClusters names the two DRClusters the policy pairs. It cannot change: create a new
	// DRPolicy to pair other clusters.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="size(self) == 2 && self[0] != self[1]",message="drClusters must name exactly two distinct clusters"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="drClusters is immutable: create a new DRPolicy to pair other clusters"
	DRClusters []string `json:"drClusters,omitempty"`

	// schedulingInterval is how often protected volumes replicate: the target recovery point
	// objective, such as 10s, 5m or 1h.
	// +required
	SchedulingInterval SchedulingInterval `json:"schedulingInterval,omitempty"`

	// storageClassBackends chooses the replication backend of each protected PVC from its
	// StorageClass. A PVC whose class matches no entry is reported as not protected.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(a, !has(a.storageClassName) || self.exists_one(b, has(b.storageClassName) && b.storageClassName == a.storageClassName))",message="storageClassBackends must name each storageClassName at most once"
	// +kubebuilder:validation:XValidation:rule="self.all(a, !has(a.provisioner) || self.exists_one(b, has(b.provisioner) && b.provisioner == a.provisioner))",message="storageClassBackends must name each provisioner at most once"
	StorageClassBackends []StorageClassBackend `json:"storageClassBackends,omitempty"`

	// replicationClassSelector selects, among the VolumeReplicationClasses of a PVC's
	// provisioner, the one the VolRep backend uses. Empty selects all of them.
	// +optional
	ReplicationClassSelector *metav1.LabelSelector `json:"replicationClassSelector,omitempty"`

	// volumeSnapshotClassSelector selects, among the VolumeSnapshotClasses of a PVC's provisioner,
	// the one the VolSync backend uses. Empty selects all of them.
	// +optional
	VolumeSnapshotClassSelector *metav1.LabelSelector `json:"volumeSnapshotClassSelector,omitempty"`

	// volSyncMovers says how VolSync's movers run in the protected namespaces.
	// Unprivileged (the default, VolSync's own) runs a mover with every capability dropped, as
	// the user of the application's mover security context: the DRPlacementControl's
	// volSyncMoverSecurityContext, or the runAsUser, runAsGroup and fsGroup of the pods that
	// mount the PVC. Without one the mover would run as UID 0 without capabilities on any
	// platform that assigns no UID (all but OpenShift), which rsync cannot do, so drover does not
	// start it and the DRPlacementControl says what to set. drover runs unprivileged movers with
	// runAsNonRoot and the RuntimeDefault seccomp profile, so they are admitted in namespaces
	// that enforce the restricted Pod Security Standard. An unprivileged mover cannot keep the
	// files' owners, nor copy a file its user cannot read: an application whose files belong to
	// several users, or are readable only by their owner, is restored with owners and unreadable
	// files lost. Privileged makes drover annotate each protected namespace
	// volsync.backube/privileged-movers: "true" while the application is protected (VolSync's
	// docs/usage/permissionmodel.rst; the annotation is removed on unprotect), so movers run as
	// root with the capabilities to copy every file with its owner: choose it for such
	// applications, in namespaces whose users may be given a privileged mover and whose Pod
	// Security level is baseline or privileged (restricted refuses a root mover). Only
	// DRPlacementControls of admin namespaces may name a policy with Privileged movers, and on a
	// managed cluster only groups of its admin namespaces may ask for them (docs/security.md).
	// +optional
	VolSyncMovers VolSyncMovers `json:"volSyncMovers,omitempty"`

	// volSyncAddress says how a VolSync ReplicationDestination is reached from the peer
	// cluster, whose ReplicationSource connects to it. LoadBalancer (the default) gives the
	// destination a Service of type LoadBalancer: each cluster needs a load-balancer
	// implementation whose addresses the peer can reach. ServiceExport gives it a ClusterIP
	// Service, VolSync's default, exported with a Multi-Cluster Services ServiceExport
	// (multicluster.x-k8s.io), and the source connects to NAME.NAMESPACE.svc.clusterset.local:
	// both clusters need an MCS implementation (Submariner, or a cloud's) in one clusterset. A
	// destination the peer cannot reach this way makes its group say which value to choose.
	// +optional
	VolSyncAddress VolSyncAddress `json:"volSyncAddress,omitempty"`

	// s3Profiles defines the object stores of the policy. Every application it protects writes
	// its metadata to all of them, so losing one store loses nothing. It must define the
	// s3ProfileName of both clusters.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	S3Profiles []S3Profile `json:"s3Profiles,omitempty"`
}

// Peer returns the other cluster of the pair, and false when cluster is not one of the two.
func (s *DRPolicySpec) Peer(cluster string) (string, bool) {
	if len(s.DRClusters) != 2 {
		return "", false
	}
	switch cluster {
	case s.DRClusters[0]:
		return s.DRClusters[1], true
	case s.DRClusters[1]:
		return s.DRClusters[0], true
	}
	return "", false
}

// DRPolicyStatus is the hub's view of a DRPolicy.
type DRPolicyStatus struct {
	// conditions: Validated (both clusters exist and are validated, their S3 profiles are
	// defined).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation of the spec the last successful reconcile observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DRPolicy pairs two DRClusters and sets the replication interval and backends of the
// applications it protects. It lives on the hub.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=drover
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.spec.drClusters`
// +kubebuilder:printcolumn:name="Interval",type=string,JSONPath=`.spec.schedulingInterval`
// +kubebuilder:printcolumn:name="Validated",type=string,JSONPath=`.status.conditions[?(@.type=="Validated")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DRPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the DRPolicy.
	// +required
	Spec DRPolicySpec `json:"spec"`

	// status is the observed state of the DRPolicy.
	// +optional
	Status DRPolicyStatus `json:"status,omitempty"`
}

// GetConditions returns the DRPolicy's conditions.
func (p *DRPolicy) GetConditions() []metav1.Condition { return p.Status.Conditions }

// SetConditions replaces the DRPolicy's conditions.
func (p *DRPolicy) SetConditions(conditions []metav1.Condition) { p.Status.Conditions = conditions }

// DRPolicyList is a list of DRPolicies.
//
// +kubebuilder:object:root=true
type DRPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the DRPolicies.
	Items []DRPolicy `json:"items"`
}
