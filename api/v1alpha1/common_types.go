package v1alpha1

import (
	"fmt"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SecretRef names a Secret by namespace and name.
type SecretRef struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// namespace of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// schedulingIntervalPattern is the shape of a SchedulingInterval: whole hours, minutes and seconds.
// At most five digits per unit and 32 characters keep every valid value far below the int64
// nanoseconds that time.Duration and CEL's duration() can hold.
const schedulingIntervalPattern = `^([0-9]{1,5}(h|m|s))+$`

var schedulingIntervalRE = regexp.MustCompile(schedulingIntervalPattern)

// SchedulingInterval is how often drover replicates an application's volumes, its target recovery
// point objective (RPO): a positive duration in whole hours, minutes and seconds, such as "10s",
// "5m" or "1h30m".
// +kubebuilder:validation:MinLength=2
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(h|m|s))+$`
// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]{1,5}(h|m|s))+$') && duration(self) > duration('0s')",message="schedulingInterval must be a positive duration in hours, minutes and seconds, such as 10s, 5m or 1h30m"
type SchedulingInterval string

// Duration returns the interval as a time.Duration. It fails for every value the API server
// rejects, so callers may treat an error as a spec that bypassed validation.
func (i SchedulingInterval) Duration() (time.Duration, error) {
	if !schedulingIntervalRE.MatchString(string(i)) {
		return 0, fmt.Errorf("schedulingInterval %q is not a duration in hours, minutes and seconds, such as 10s, 5m or 1h30m", string(i))
	}
	d, err := time.ParseDuration(string(i))
	if err != nil {
		return 0, fmt.Errorf("failed to parse schedulingInterval %q: %w", string(i), err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("schedulingInterval %q must be positive", string(i))
	}
	return d, nil
}

// SyncStaleAfter is the age past which an application's last group sync is stale: twice the
// policy's interval (one sync missed) plus refresh, how often the storage refreshes the sync
// times it reports (a DRPlacementControl's or VolumeReplicationGroup's syncRefreshInterval; nil
// when it reports each sync as it completes). A healthy last sync is up to the interval, the
// sync's own duration and the refresh old: with csi-addons and an interval of a minute, about
// two minutes, which twice the interval alone would call stale every other refresh.
func SyncStaleAfter(interval time.Duration, refresh *metav1.Duration) time.Duration {
	if refresh == nil || refresh.Duration < 0 {
		return 2 * interval
	}
	return 2*interval + refresh.Duration
}

// SyncStaleAllowance says, for a person, what SyncStaleAfter is made of: "twice the interval
// 10s", and "plus the storage's status refresh 10s" when there is one.
func SyncStaleAllowance(interval time.Duration, refresh *metav1.Duration) string {
	if refresh == nil || refresh.Duration <= 0 {
		return fmt.Sprintf("twice the interval %s", interval)
	}
	return fmt.Sprintf("twice the interval %s plus the storage's status refresh %s", interval, refresh.Duration)
}

// ReplicationBackend names the mechanism that replicates a PVC's data to the peer cluster.
// +kubebuilder:validation:Enum=VolRep;VolSync
type ReplicationBackend string

const (
	// BackendVolRep replicates with one csi-addons VolumeReplication per PVC: the storage system
	// mirrors the volume (for example Ceph RBD mirroring).
	BackendVolRep ReplicationBackend = "VolRep"
	// BackendVolSync replicates with VolSync over rsync-tls: a ReplicationSource on the primary
	// sends snapshots of the volume to a ReplicationDestination on the secondary.
	BackendVolSync ReplicationBackend = "VolSync"
)

// StorageClassBackend chooses the replication backend for the PVCs of matching StorageClasses.
// It names either one StorageClass or one provisioner, never both.
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) != has(self.provisioner)",message="each storageClassBackends entry must set exactly one of storageClassName or provisioner"
type StorageClassBackend struct {
	// storageClassName matches the StorageClass of this name. It wins over an entry that matches
	// the class's provisioner.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	StorageClassName string `json:"storageClassName,omitempty"`

	// provisioner matches every StorageClass of this provisioner (the CSI driver name, such as
	// rbd.csi.ceph.com).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Provisioner string `json:"provisioner,omitempty"`

	// backend replicates the PVCs of the matching StorageClasses.
	// +required
	Backend ReplicationBackend `json:"backend,omitempty"`
}

// SelectBackend returns the backend for PVCs of the StorageClass with the given name and
// provisioner: the entry naming the class wins, else the entry naming its provisioner. It returns
// false when no entry matches; the API server guarantees at most one entry of each kind matches.
func SelectBackend(entries []StorageClassBackend, storageClassName, provisioner string) (ReplicationBackend, bool) {
	var byProvisioner ReplicationBackend
	found := false
	for _, e := range entries {
		switch {
		case e.StorageClassName != "" && e.StorageClassName == storageClassName:
			return e.Backend, true
		case e.Provisioner != "" && e.Provisioner == provisioner && !found:
			byProvisioner, found = e.Backend, true
		}
	}
	return byProvisioner, found
}

// S3Profile is an S3-compatible object store where drover keeps the PV/PVC metadata and the
// captured Kubernetes objects of the applications it protects.
type S3Profile struct {
	// name identifies the profile; DRCluster.spec.s3ProfileName refers to it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// endpoint is the store's URL, such as https://s3.example.com:9000. An http:// endpoint is
	// refused unless insecure is true.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https']",message="endpoint must be an http:// or https:// URL, such as https://s3.example.com:9000"
	Endpoint string `json:"endpoint,omitempty"`

	// bucket is the name of the bucket, which must exist.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	Bucket string `json:"bucket,omitempty"`

	// region of the bucket. Many S3-compatible stores accept any value; empty means us-east-1.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// insecure accepts an http:// endpoint. Requests and every stored object (captured Secrets
	// included) then cross the network in clear, and anyone on the path can answer as the
	// store: set it only for a store on a trusted network, such as a test lab.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// caBundle is the PEM certificates (text, not base64) to trust for an https:// endpoint
	// besides the system's roots, for a store whose certificate a private CA signed.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CABundle string `json:"caBundle,omitempty"`

	// secretRef names the Secret holding the store's credentials under the keys
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY. The Secret must exist under this namespace and
	// name on every cluster whose drover reads or writes the store.
	// +required
	SecretRef SecretRef `json:"secretRef"`
}

// KubeObjectProtectionSpec selects the Kubernetes objects that drover captures to the object
// stores and restores on the peer cluster. Kinds are written Kind for the core group and
// Kind.group otherwise, such as ConfigMap or Deployment.apps.
type KubeObjectProtectionSpec struct {
	// includedKinds limits the capture to these kinds, custom resources included. Empty
	// captures the application kinds of Kubernetes' own API groups (ConfigMap, Secret,
	// ServiceAccount, Role, RoleBinding, Service, PodDisruptionBudget, HorizontalPodAutoscaler,
	// NetworkPolicy, Ingress, Deployment, StatefulSet, DaemonSet, Job, CronJob) except
	// excludedKinds; custom resources are captured only when named here. PVCs, PVs and the
	// kinds controllers derive (Pods, ReplicaSets, Endpoints, Events...) are never captured.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[A-Z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`
	IncludedKinds []string `json:"includedKinds,omitempty"`

	// excludedKinds are never captured.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[A-Z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`
	ExcludedKinds []string `json:"excludedKinds,omitempty"`

	// objectSelector captures only the objects whose labels match. Empty captures all.
	// +optional
	ObjectSelector *metav1.LabelSelector `json:"objectSelector,omitempty"`
}

// VolSyncMoverSecurityContext is who VolSync's unprivileged movers run as for a PVC: the user,
// group and fsGroup of the application that writes the volume. An unprivileged mover drops every
// capability, so it reads and writes the volume's files only as that user could; drover adds
// runAsNonRoot and the RuntimeDefault seccomp profile, so that the mover pods are admitted in a
// namespace that enforces the restricted Pod Security Standard.
type VolSyncMoverSecurityContext struct {
	// runAsUser is the UID the movers run as, the one the application writes its files as.
	// Never 0: an unprivileged mover running as root has no capability, and rsync cannot work so
	// (VolSync's docs/usage/permissionmodel.rst).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	RunAsUser int64 `json:"runAsUser,omitempty"`

	// runAsGroup is the movers' primary GID; the mover image's when unset.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`

	// fsGroup is the group that owns the volume's files (the application pods' fsGroup): the
	// movers get it as a supplementary group.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	FSGroup *int64 `json:"fsGroup,omitempty"`
}

// DRAction is a disaster-recovery action asked of a protected application.
// +kubebuilder:validation:Enum="";Failover;Relocate
type DRAction string

const (
	// ActionNone asks for no action: the application runs where it is.
	ActionNone DRAction = ""
	// ActionFailover starts the application on the failover cluster from the last replicated
	// point, without waiting for the current primary, which may be lost.
	ActionFailover DRAction = "Failover"
	// ActionRelocate moves the application to the preferred cluster with a final sync and no
	// data loss; both clusters must be healthy.
	ActionRelocate DRAction = "Relocate"
)
