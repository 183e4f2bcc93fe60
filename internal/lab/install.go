package lab

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/config"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab/kubelet"
	"github.com/drover-io/drover/internal/objectstore"
)

// installedFromManifests is what a lab records of how it runs drover (labState.Install): from
// the release manifests, with their ServiceAccounts as drover's only identities. Labs of earlier
// drovers ran drover's processes with lab credentials and record "processes"; New refuses them.
const installedFromManifests = "manifests"

const (
	// DroverImage is the image of the release manifests (config/*/kustomization.yaml: a local
	// reference, no registry publishes one; make release-manifests IMG=... names yours), which
	// the lab kubelet maps to Options.DroverBinary.
	DroverImage = "drover"
	// HubDeployment is the release manifests' Deployment of the hub in DroverNamespace, also
	// the value of its pods' app.kubernetes.io/name label.
	HubDeployment = "drover-hub"
	// AgentDeployment is the same for the agent.
	AgentDeployment = "drover-agent"
	// fenceService is the agent's webhook Service that the lab turns into an ExternalName on
	// the agent's pinned pod IP.
	fenceService = "drover-fence"
	// nameLabel selects the pods of drover's Deployments.
	nameLabel = "app.kubernetes.io/name"
	// installFieldOwner is the field manager of the release manifests, as kubectl's would be.
	installFieldOwner = "drover-lab-install"
	// installReadyTimeout bounds the wait for drover's pods to be Ready after the install.
	installReadyTimeout = 3 * time.Minute
	// agentHostByte is the last byte of the agent's pinned pod IP in its cluster's pod range.
	agentHostByte = 10
)

// PodCIDR is the loopback range of the lab kubelet's pod IPs on this cluster: 127.H.L.0/24 with
// H.L the API server's port, reserved machine-wide, so that neither two clusters nor two labs
// share an address (the kubelet narrows a pod's `:8081` binds to its pod IP).
func (c *Cluster) PodCIDR() netip.Prefix {
	var port [2]byte
	binary.BigEndian.PutUint16(port[:], uint16(c.Ports.APIServer)) //nolint:gosec // a TCP port fits 16 bits
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{127, port[0], port[1], 0}), 24)
}

// AgentPodIP is the pod IP the lab kubelet gives the agent's pod, so the fence's ExternalName
// Service stays valid when the pod is replaced.
func (c *Cluster) AgentPodIP() netip.Addr {
	b := c.PodCIDR().Addr().As4()
	b[3] = agentHostByte
	return netip.AddrFrom4(b)
}

// noProxyEnv keeps the API server's calls to webhooks (drover-fence.drover-system.svc, resolved
// to a loopback pod IP) off any proxy the machine's environment names.
var noProxyEnv = []string{
	"NO_PROXY=127.0.0.0/8,localhost,.svc,.svc.cluster.local",
	"no_proxy=127.0.0.0/8,localhost,.svc,.svc.cluster.local",
}

// placementProbe is a pod the namespace's restricted Pod Security admits, for a dry run.
func placementProbe() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: DroverNamespace, GenerateName: "lab-placement-probe-"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "probe", Image: DroverImage, SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		}}
}

// placementTimeout bounds the wait for the placement policy to act on new pods.
const placementTimeout = 30 * time.Second

// applyPlacement applies the policy that binds drover-system's pods to the lab kubelet's node,
// at the cluster's bootstrap, and returns once the API server applies it to a new pod there.
//
// Why the wait: the API server takes a new admission policy into force a moment after it is
// created. The hub's bootstrap and drover's install followed each other within a second, and its
// Deployment's pod, created before the policy acted, was never placed: Pending with no node
// until the install gave up after 3 minutes (`make demo`, before c5b5871 of 2026-12-02). A
// server-side dry run of a pod in the namespace shows the node once the policy acts; the
// namespace is created for it (the release manifests apply it again).
func applyPlacement(ctx context.Context, cl client.Client) error {
	policy, binding := kubelet.PlacementPolicy(kubelet.DefaultNodeName, DroverNamespace)
	for _, obj := range []client.Object{policy, binding, &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: DroverNamespace},
	}} {
		if err := apply(ctx, cl, obj); err != nil {
			return err
		}
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, placementTimeout, true, func(ctx context.Context) (bool, error) {
		probe := placementProbe()
		if err := cl.Create(ctx, probe, client.DryRunAll); err != nil {
			last = err.Error() // the namespace's ServiceAccount may not exist yet: poll again
			return false, nil  //nolint:nilerr // see above
		}
		last = fmt.Sprintf("a new pod gets node %q", probe.Spec.NodeName)
		return probe.Spec.NodeName == kubelet.DefaultNodeName, nil
	})
	if err != nil {
		return fmt.Errorf("the policy placing %s's pods on node %s did not act within %s (%s)", DroverNamespace, kubelet.DefaultNodeName, placementTimeout, last)
	}
	return nil
}

// installDrover installs drover as a user does once every cluster has started: the release
// manifests on each cluster, the fence's Service on the agents' pod IPs, east and west joined
// (which names each agent's cluster), the lab's policies; then it waits for drover's pods to be Ready.
func (l *Lab) installDrover(ctx context.Context) error {
	began := time.Now()
	hub, err := l.Cluster(Hub)
	if err != nil {
		return err
	}
	for _, c := range l.clusters {
		if err := c.installRelease(ctx); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	profiles, err := l.S3Profiles()
	if err != nil {
		return err
	}
	var clusters []string
	for i, c := range l.managed() {
		if err := hub.join(ctx, c, profiles[i]); err != nil {
			return err
		}
		clusters = append(clusters, c.Name)
	}
	cl, err := hub.client()
	if err != nil {
		return err
	}
	for _, p := range []client.Object{
		drPolicy(PolicyVolRep, clusters, profiles, v1alpha1.StorageClassBackend{Provisioner: BlockDriver, Backend: v1alpha1.BackendVolRep}),
		drPolicy(PolicyVolSync, clusters, profiles, v1alpha1.StorageClassBackend{Provisioner: FileDriver, Backend: v1alpha1.BackendVolSync}),
	} {
		if err := apply(ctx, cl, p); err != nil {
			return fmt.Errorf("cluster %s: %w", Hub, err)
		}
	}
	for _, c := range l.clusters {
		if err := c.waitDroverReady(ctx); err != nil {
			return err
		}
	}
	l.progress("drover: installed from %s and ready (%.1f s)", l.installedFrom(), time.Since(began).Seconds())
	return nil
}

// managed returns the managed clusters in lab order.
func (l *Lab) managed() []*Cluster {
	var out []*Cluster
	for _, c := range l.clusters {
		if c.Role == RoleManaged {
			out = append(out, c)
		}
	}
	return out
}

// Join registers the managed cluster name with the hub as `drover cluster join` does, with the
// lab's S3 profile of that cluster: the hub's identity on the cluster and its token, the
// DRCluster, its kubeconfig Secret and the S3 Secrets. A lab that runs drover joins east and
// west itself; suites that run drover in-process call it to get the same credentials.
func (l *Lab) Join(ctx context.Context, name string) error {
	hub, err := l.Cluster(Hub)
	if err != nil {
		return err
	}
	managed, err := l.Cluster(name)
	if err != nil {
		return err
	}
	if managed.Role != RoleManaged {
		return fmt.Errorf("%s is not a managed cluster of the lab: join %s or %s", name, East, West)
	}
	p, err := managed.ensureS3Profile()
	if err != nil {
		return err
	}
	return hub.join(ctx, managed, p)
}

// join registers managed with the hub c as `drover cluster join` does, with the lab's S3
// profile of managed.
func (c *Cluster) join(ctx context.Context, managed *Cluster, p S3Profile) error {
	hubCfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	managedCfg, err := managed.RESTConfig()
	if err != nil {
		return err
	}
	peers, err := c.lab.peerKubeconfigs(managed.Name)
	if err != nil {
		return err
	}
	err = join.Join(ctx, join.Options{
		Name:    managed.Name,
		Hub:     join.Cluster{Config: hubCfg, Source: "lab kubeconfig " + c.KubeconfigPath()},
		Managed: join.Cluster{Config: managedCfg, Source: "lab kubeconfig " + managed.KubeconfigPath()},
		// The clusters joined before get the profile's Secret through the operator's
		// kubeconfigs, here the lab's administrator ones (`--peer-kubeconfig`).
		Peers: peers,
		// The hub reaches the cluster through its API proxy, which a partition cuts.
		Server: managed.ProxiedEndpoint(),
		S3: objectstore.Profile{
			Name: p.Name, Endpoint: p.Endpoint, Insecure: p.Insecure, Bucket: p.Bucket, Region: p.Region,
			AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey, Keys: p.StoreKeys,
		},
		Out: io.Discard,
	})
	if err != nil {
		return fmt.Errorf("failed to join %s to the hub: %w", managed.Name, err)
	}
	c.lab.progress("%s: joined to the hub as DRCluster %s", managed.Name, managed.Name)
	return nil
}

// peerKubeconfigs are the lab's administrator kubeconfigs of its managed clusters but name, by
// cluster name: what an operator gives join for the clusters joined before. Join uses those
// joined, and notes the others as unused.
func (l *Lab) peerKubeconfigs(name string) (map[string]join.Cluster, error) {
	peers := map[string]join.Cluster{}
	for _, o := range l.clusters {
		if o.Role != RoleManaged || o.Name == name {
			continue
		}
		cfg, err := o.RESTConfig()
		if err != nil {
			return nil, err
		}
		peers[o.Name] = join.Cluster{Config: cfg, Source: "lab kubeconfig " + o.KubeconfigPath()}
	}
	return peers, nil
}

// Installer installs drover's release on one cluster of a lab that runs drover, in place of the
// release manifests the lab applies by default: the hub's on the hub, the agent's on a managed
// cluster, such as drover's Helm charts installed through Helm (hack/helm). Whatever installs it,
// the Deployments' pods must name the image DroverImage (any tag), which the lab kubelet runs, and
// carry the Cluster's DroverTuning.
type Installer interface {
	// InstallDrover installs drover's release for c.Role on c, with c's DroverTuning, and
	// returns once the API server holds its objects. The lab then points the fence's Service at
	// the agent's pod IP, joins the managed clusters and waits for drover's pods to be Ready.
	InstallDrover(ctx context.Context, c *Cluster) error
}

// installedFrom says what installed drover, for the lab's progress lines.
func (l *Lab) installedFrom() string {
	if l.opts.Installer != nil {
		return fmt.Sprintf("%T", l.opts.Installer)
	}
	return "the release manifests"
}

// installRelease installs drover's release on the cluster: Options.Installer's, or by default
// the release manifests; on a managed cluster it then points the fence's Service at the agent's
// pod IP.
func (c *Cluster) installRelease(ctx context.Context) error {
	var err error
	if c.lab.opts.Installer != nil {
		err = c.lab.opts.Installer.InstallDrover(ctx, c)
	} else {
		err = c.installManifests(ctx)
	}
	if err != nil || c.Role != RoleManaged {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	// The agent's ConfigMap naming its cluster comes from drover cluster join, as for a user.
	return c.patchFence(ctx, cl)
}

// installManifests applies the cluster's release manifest (hub or agent), built from the
// embedded config tree with the lab's kustomize, by server-side apply.
func (c *Cluster) installManifests(ctx context.Context) error {
	tree := "hub"
	if c.Role == RoleManaged {
		tree = "agent"
	}
	docs, err := c.lab.releaseManifest(ctx, tree)
	if err != nil {
		return err
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	for _, u := range docs {
		if err := c.tuneDeployment(u); err != nil {
			return err
		}
		if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(installFieldOwner)); err != nil {
			return fmt.Errorf("failed to apply %s %s of the release manifest config/%s: %w", u.GetKind(), u.GetName(), tree, err)
		}
	}
	return nil
}

// DroverTuning is how the lab runs drover's Deployment on a cluster, beyond the release's
// defaults, as an overlay or a chart's values would say it.
type DroverTuning struct {
	// Args are added to the container's args.
	Args []string
	// Replicas, when not nil, replaces the Deployment's replicas.
	Replicas *int32
}

// DroverTuning returns the cluster's tuning: the hub gets Options.HubProbeInterval,
// HubUnreachableAfter and HubArgs as flags, so tests can shorten the hub's probes and a benchmark
// can try other flags; the agent gets Options.AgentArgs and runs one replica.
func (c *Cluster) DroverTuning() DroverTuning { return c.lab.droverTuning(c.Role) }

// droverTuning is the DroverTuning of a cluster of the role.
func (l *Lab) droverTuning(role Role) DroverTuning {
	var t DroverTuning
	if role != RoleManaged {
		if d := l.opts.HubProbeInterval; d > 0 {
			t.Args = append(t.Args, "--probe-interval="+d.String())
		}
		if d := l.opts.HubUnreachableAfter; d > 0 {
			t.Args = append(t.Args, "--unreachable-after="+d.String())
		}
		t.Args = append(t.Args, l.opts.HubArgs...)
		return t
	}
	// One agent pod per lab cluster: the lab kubelet pins one pod IP for the agent, and the
	// fence's ExternalName Service points at it, so a second replica would have no address.
	// The release manifests' two replicas are checked in config's tests.
	t.Replicas = ptr.To(int32(1))
	t.Args = append(t.Args, l.opts.AgentArgs...)
	return t
}

// tuneDeployment applies the DroverTuning of the hub or the agent to the release manifest's
// Deployment of that name.
func (c *Cluster) tuneDeployment(u *unstructured.Unstructured) error {
	if u.GetKind() != "Deployment" {
		return nil
	}
	var t DroverTuning
	switch u.GetName() {
	case HubDeployment:
		t = c.lab.droverTuning(RoleHub)
	case AgentDeployment:
		t = c.lab.droverTuning(RoleManaged)
	default:
		return nil
	}
	if t.Replicas != nil {
		if err := unstructured.SetNestedField(u.Object, int64(*t.Replicas), "spec", "replicas"); err != nil {
			return fmt.Errorf("failed to set the replicas of the release manifest's Deployment %s: %w", u.GetName(), err)
		}
	}
	if len(t.Args) == 0 {
		return nil
	}
	extra := make([]any, 0, len(t.Args))
	for _, a := range t.Args {
		extra = append(extra, a)
	}
	containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return fmt.Errorf("failed to read the containers of the release manifest's Deployment %s: %w", u.GetName(), err)
	}
	if len(containers) == 0 {
		return fmt.Errorf("the release manifest's Deployment %s has no containers", u.GetName())
	}
	first := containers[0].(map[string]any)
	args, _ := first["args"].([]any)
	first["args"] = append(args, extra...)
	return unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
}

// patchFence makes the fence's Service an ExternalName on the agent's pinned pod IP: Endpoints
// cannot hold loopback addresses, while kube-apiserver resolves an ExternalName to its host and
// still checks the webhook's certificate against drover-fence.drover-system.svc. The lab kubelet
// forwards the Service's port 443 to the pod's port 9443, as kube-proxy would.
func (c *Cluster) patchFence(ctx context.Context, cl client.Client) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: DroverNamespace, Name: fenceService}}
	patch := fmt.Sprintf(`{"spec":{"type":"ExternalName","externalName":%q,"clusterIP":null,"clusterIPs":null,"ipFamilies":null,"ipFamilyPolicy":null,"internalTrafficPolicy":null,"sessionAffinity":null}}`,
		c.AgentPodIP().String())
	if err := cl.Patch(ctx, svc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("failed to point Service %s/%s at the agent's pod IP %s: %w", DroverNamespace, fenceService, c.AgentPodIP(), err)
	}
	return nil
}

// releaseManifest builds config/<tree> of the manifests this binary embeds (config.Tree),
// written under the lab's directory, with the kustomize in BinDir, as `make release-manifests`
// does, and decodes its objects in order.
func (l *Lab) releaseManifest(ctx context.Context, tree string) ([]*unstructured.Unstructured, error) {
	dir := filepath.Join(l.opts.Dir, "config")
	if err := config.WriteTree(dir); err != nil {
		return nil, err
	}
	kustomize := filepath.Join(l.opts.BinDir, "kustomize")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kustomize, "build", filepath.Join(dir, tree)) //nolint:gosec // the lab's own tool
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("failed to build the release manifest %s with %s (run `make tools` if it is missing): %w\n%s",
			filepath.Join(dir, tree), kustomize, err, stderr.String())
	}
	var docs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, fmt.Errorf("failed to decode the release manifest config/%s: %w", tree, err)
		}
		if len(u.Object) > 0 {
			docs = append(docs, u)
		}
	}
}

// droverDeployment is the release manifests' Deployment of drover on the cluster: the hub's on
// the hub, the agent's on a managed cluster.
func (c *Cluster) droverDeployment() string {
	if c.Role == RoleHub {
		return HubDeployment
	}
	return AgentDeployment
}

// readyDroverPod returns a Ready pod of the cluster's drover Deployment on the lab kubelet's node,
// or nil and why there is none.
func (c *Cluster) readyDroverPod(ctx context.Context, cl client.Client) (*corev1.Pod, string, error) {
	pods := &corev1.PodList{}
	if err := cl.List(ctx, pods, client.InNamespace(DroverNamespace), client.MatchingLabels{nameLabel: c.droverDeployment()}); err != nil {
		return nil, "", fmt.Errorf("cluster %s: failed to list drover's pods: %w", c.Name, err)
	}
	for i := range pods.Items {
		if podReady(&pods.Items[i]) {
			return &pods.Items[i], "", nil
		}
	}
	return nil, fmt.Sprintf("%d pods, none Ready", len(pods.Items)), nil
}

// waitDroverReady waits until the cluster's drover Deployment has a Ready pod on the lab
// kubelet's node.
func (c *Cluster) waitDroverReady(ctx context.Context) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, installReadyTimeout, true, func(ctx context.Context) (bool, error) {
		pod, why, err := c.readyDroverPod(ctx, cl)
		if err != nil {
			last = err.Error() // the API server may still be starting: poll again
			return false, nil  //nolint:nilerr // see above
		}
		last = why
		return pod != nil, nil
	})
	if err != nil {
		name := c.droverDeployment()
		return fmt.Errorf("cluster %s: %s did not become Ready in %s (%s): see its log drover-system_%s-*.log in %s and %s",
			c.Name, name, installReadyTimeout, last, name, c.logDir(), filepath.Join(c.logDir(), componentKubelet+".log"))
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Spec.NodeName == kubelet.DefaultNodeName && kubelet.PodReady(p)
}

// DroverPods reports the pods of drover's Deployments that the cluster's lab kubelet runs, from
// its recorded state; none when the lab does not run drover.
func (c *Cluster) DroverPods() ([]kubelet.PodState, error) {
	if !c.lab.opts.RunDrover {
		return nil, nil
	}
	pods, err := kubelet.ReadState(c.KubeletStateDir())
	if err != nil {
		return nil, err
	}
	var out []kubelet.PodState
	for _, p := range pods {
		if p.Namespace == DroverNamespace && (strings.HasPrefix(p.Name, HubDeployment+"-") || strings.HasPrefix(p.Name, AgentDeployment+"-")) {
			out = append(out, p)
		}
	}
	return out, nil
}
