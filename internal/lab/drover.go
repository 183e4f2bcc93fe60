package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/config/rbac"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volrep"
)

// With Options.RunDrover the lab runs drover itself, from the same binary as the lab storage:
// `drover hub` is a component of the hub cluster and `drover agent` one of each managed
// cluster, so they start, stop and are reported with their cluster (a stopped cluster loses its
// agent, as a lost cluster would). Bootstrap creates what an administrator creates once, so a
// user can protect an application with a DRPlacementControl right after `drover lab up`.
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
	// HubUser is the user of the hub's credential on a managed cluster (the kubeconfig in a
	// DRCluster's Secret), bound to config/rbac/hub-on-managed-cluster.
	HubUser = "drover-hub"

	hubVerb   = "hub"
	agentVerb = "agent"
	// hubKubeconfigFile, in a managed cluster's directory, keeps the hub's credential for that
	// cluster, generated once so the Secret that carries it does not change at every start.
	hubKubeconfigFile = "kubeconfig-" + HubUser
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

// hubComponent is `drover hub` on the hub cluster, with its administrator kubeconfig.
func (c *Cluster) hubComponent() component {
	args := []string{hubVerb, "--kubeconfig=" + c.KubeconfigPath()}
	if d := c.lab.opts.HubProbeInterval; d > 0 {
		args = append(args, "--probe-interval="+d.String())
	}
	if d := c.lab.opts.HubUnreachableAfter; d > 0 {
		args = append(args, "--unreachable-after="+d.String())
	}
	return component{name: componentHub, binary: c.lab.opts.DroverBinary, args: args}
}

// agentComponent is `drover agent` on a managed cluster. Its fence listens on the cluster's
// reserved webhook port, on the loopback that kube-apiserver shares.
func (c *Cluster) agentComponent() component {
	return component{name: componentAgent, binary: c.lab.opts.DroverBinary, args: []string{
		agentVerb,
		"--kubeconfig=" + c.KubeconfigPath(),
		"--cluster-name=" + c.Name,
		fmt.Sprintf("--webhook-address=127.0.0.1:%d", c.Ports.Webhook),
	}}
}

// agentListening succeeds once the agent's fence completes a TLS handshake: the agent has loaded
// its configuration and built its manager. A handshake rather than a bare connection, which the
// server would log as a failed handshake.
func (c *Cluster) agentListening(ctx context.Context) error {
	d := tls.Dialer{
		NetDialer: &net.Dialer{Timeout: time.Second},
		// Liveness only: the agent's self-signed certificate is not what is checked here.
		Config: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // see above
	}
	conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", c.Ports.Webhook))
	if err != nil {
		return err
	}
	return conn.Close()
}

// bootstrapManagedForDrover applies what the hub and the agent need on a managed cluster: the
// hub's role (config/rbac/hub-on-managed-cluster, as `kubectl apply -k` would) and a
// VolumeReplicationClass for the VolRep policy's interval.
func (c *Cluster) bootstrapManagedForDrover(ctx context.Context, cl client.Client) error {
	if c.lab.installsManifests() {
		// Joining the cluster gives the hub its role there.
		return apply(ctx, cl, replicationClass(PolicyInterval))
	}
	docs, err := rbac.Manifests(rbac.HubOnManagedCluster, rbac.HubOnManagedClusterDir)
	if err != nil {
		return err
	}
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return fmt.Errorf("failed to decode the hub's role on a managed cluster: %w", err)
		}
		if err := apply(ctx, cl, u); err != nil {
			return err
		}
	}
	return apply(ctx, cl, replicationClass(PolicyInterval))
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

// bootstrapDrover applies, on the hub, the DRClusters east and west with their kubeconfig
// Secrets (the user HubUser) and the policies PolicyVolRep and PolicyVolSync. It needs every
// cluster's certificates and S3 credentials, so it runs once all clusters have started.
func (l *Lab) bootstrapDrover(ctx context.Context) error {
	if !l.opts.RunDrover {
		return nil
	}
	hub, err := l.Cluster(Hub)
	if err != nil {
		return err
	}
	cl, err := hub.client()
	if err != nil {
		return err
	}
	profiles, err := l.S3Profiles()
	if err != nil {
		return err
	}
	var objs []client.Object
	var clusters []string
	for _, c := range l.clusters {
		if c.Role != RoleManaged {
			continue
		}
		kubeconfig, err := c.hubKubeconfig()
		if err != nil {
			return err
		}
		objs = append(objs, kubeconfigSecret(c.Name, kubeconfig), drCluster(c.Name))
		clusters = append(clusters, c.Name)
	}
	objs = append(objs,
		drPolicy(PolicyVolRep, clusters, profiles, v1alpha1.StorageClassBackend{Provisioner: BlockDriver, Backend: v1alpha1.BackendVolRep}),
		drPolicy(PolicyVolSync, clusters, profiles, v1alpha1.StorageClassBackend{Provisioner: FileDriver, Backend: v1alpha1.BackendVolSync}),
	)
	for _, obj := range objs {
		if err := apply(ctx, cl, obj); err != nil {
			return fmt.Errorf("cluster %s: %w", Hub, err)
		}
	}
	return nil
}

// hubKubeconfig returns the hub's kubeconfig for a managed cluster, generating it at the first
// call.
func (c *Cluster) hubKubeconfig() ([]byte, error) {
	path := filepath.Join(c.dir, hubKubeconfigFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		return raw, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to read the hub's kubeconfig for %s: %w", c.Name, err)
	}
	if raw, err = c.Kubeconfig(HubUser, nil); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return nil, fmt.Errorf("failed to write the hub's kubeconfig for %s: %w", c.Name, err)
	}
	return raw, nil
}

func kubeconfigSecret(cluster string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: DroverNamespace, Name: KubeconfigSecretName(cluster)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{v1alpha1.KubeconfigSecretKey: kubeconfig},
	}
}

func drCluster(name string) *v1alpha1.DRCluster {
	return &v1alpha1.DRCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.DRClusterSpec{
			KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: DroverNamespace, Name: KubeconfigSecretName(name)},
			S3ProfileName:       S3ProfileName(name),
			Region:              name,
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
			Name: prof.Name, Endpoint: prof.Endpoint, Bucket: prof.Bucket, Region: prof.Region,
			SecretRef: v1alpha1.SecretRef{Namespace: DroverNamespace, Name: prof.Name},
		})
	}
	return p
}
