package lab

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volrep"
)

// With Options.RunDrover the lab installs drover from its release manifests (install.go) and runs
// its pods with a lab kubelet of each cluster, so they start, stop and are reported with their
// cluster (a stopped cluster loses its agent, as a lost cluster would). The lab also creates what
// an administrator creates once, so a user can protect an application with a
// DRPlacementControl right after `drover lab up`.
const (
	// PolicyVolRep is the lab's DRPolicy that replicates BlockDriver's volumes with VolRep
	// (csi-addons VolumeReplication, mirrored by the lab storage).
	PolicyVolRep = "lab-volrep"
	// PolicyVolSync is the lab's DRPolicy that replicates FileDriver's volumes with VolSync.
	PolicyVolSync = "lab-volsync"
	// PolicyInterval is the schedulingInterval of both lab policies: the RPO target, short so a
	// lab story does not wait.
	PolicyInterval = 5 * time.Second
	// DroverNamespace holds, on the hub, the kubeconfig Secrets of the DRClusters and, on every
	// cluster, the S3 profile Secrets.
	DroverNamespace = S3SecretNamespace
)

// KubeconfigSecretName is the name of the Secret on the hub, in DroverNamespace, that holds
// the hub's kubeconfig for a managed cluster.
func KubeconfigSecretName(cluster string) string { return "kubeconfig-" + cluster }

// S3ProfileName is the name of a managed cluster's S3 profile and of its Secret.
func S3ProfileName(cluster string) string { return "s3-" + cluster }

// ReplicationClassName is the name of the lab's VolumeReplicationClass of BlockDriver for
// interval, such as lab-block-5s.
func ReplicationClassName(interval time.Duration) string {
	return BlockStorageClass + "-" + interval.String()
}

// GroupReplicationClassName is the name of the lab's VolumeGroupReplicationClass of
// BlockDriver: the storage's consistency groups, which a DRPlacementControl's
// consistencyGroups use on the VolRep policy.
const GroupReplicationClassName = BlockStorageClass + "-group"

// bootstrapManagedForDrover applies what drover needs on a managed cluster besides its
// manifests and what joining creates: a VolumeReplicationClass for the VolRep policy's interval
// and the VolumeGroupReplicationClass of the same driver.
func (c *Cluster) bootstrapManagedForDrover(ctx context.Context, cl client.Client) error {
	if err := apply(ctx, cl, replicationClass(PolicyInterval)); err != nil {
		return err
	}
	return apply(ctx, cl, &replicationv1alpha1.VolumeGroupReplicationClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: replicationv1alpha1.GroupVersion.String(), Kind: "VolumeGroupReplicationClass"},
		ObjectMeta: metav1.ObjectMeta{Name: GroupReplicationClassName},
		Spec:       replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: BlockDriver},
	})
}

func replicationClass(interval time.Duration) *replicationv1alpha1.VolumeReplicationClass {
	return &replicationv1alpha1.VolumeReplicationClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: replicationv1alpha1.GroupVersion.String(), Kind: "VolumeReplicationClass"},
		ObjectMeta: metav1.ObjectMeta{Name: ReplicationClassName(interval)},
		Spec: replicationv1alpha1.VolumeReplicationClassSpec{
			Provisioner: BlockDriver,
			Parameters:  map[string]string{volrep.SchedulingIntervalParameter: interval.String()},
		},
	}
}

func drPolicy(name string, clusters []string, profiles []S3Profile, backend v1alpha1.StorageClassBackend) *v1alpha1.DRPolicy {
	p := &v1alpha1.DRPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.DRPolicySpec{
			DRClusters:           clusters,
			SchedulingInterval:   v1alpha1.SchedulingInterval(PolicyInterval.String()),
			StorageClassBackends: []v1alpha1.StorageClassBackend{backend},
		},
	}
	for _, prof := range profiles {
		p.Spec.S3Profiles = append(p.Spec.S3Profiles, v1alpha1.S3Profile{
			Name: prof.Name, Endpoint: prof.Endpoint, Insecure: prof.Insecure, Bucket: prof.Bucket, Region: prof.Region,
			SecretRef: v1alpha1.SecretRef{Namespace: DroverNamespace, Name: prof.Name},
		})
	}
	return p
}
