package join

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/drover-io/drover/internal/kubeconfig"
	"github.com/drover-io/drover/internal/objectstore"
)

// Names and labels of what join creates.
const (
	// DefaultNamespace holds, on both clusters, everything join creates that is namespaced.
	DefaultNamespace = "drover-system"
	// ServiceAccountName is the hub's identity on a managed cluster.
	ServiceAccountName = "drover-hub"
	// TokenSecretName is the Secret every token of ServiceAccountName is bound to: deleting it
	// revokes them. It holds no data.
	TokenSecretName = ServiceAccountName + "-token" //nolint:gosec // a name, not a credential
	// AnnotationBinds on TokenSecretName says what it is for.
	AnnotationBinds = "drover.io/binds"
	// FieldOwner is the server-side apply field manager of everything join writes.
	FieldOwner = "drover-cluster-join"
	// LabelManagedBy and ManagedByValue mark what join created; LabelCluster names the cluster
	// it was created for, which is how unjoin finds it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "drover"
	LabelCluster   = "drover.io/cluster"
	// DefaultTokenTimeout bounds obtaining the hub's token and, when the managed cluster's
	// kubeconfig names no CA, the wait for the CA the cluster publishes.
	DefaultTokenTimeout = 30 * time.Second
	// DefaultTokenLifetime is the life of the hub's token; the hub renews it after 80 % of it,
	// so a hub stopped for less than a fifth of it (about 1.5 h) finds its token still valid.
	DefaultTokenLifetime = 8 * time.Hour
	// MinTokenLifetime is the shortest token the TokenRequest API issues.
	MinTokenLifetime = 10 * time.Minute
	// requestTimeout bounds every request, so an address that drops packets fails in seconds.
	requestTimeout = 15 * time.Second
)

// KubeconfigSecretName is the name of the Secret on the hub that holds the hub's kubeconfig for
// cluster.
func KubeconfigSecretName(cluster string) string { return "kubeconfig-" + cluster }

// DefaultS3ProfileName is the S3 profile of cluster when none is given; it is also the name of
// the profile's credentials Secret.
func DefaultS3ProfileName(cluster string) string { return "s3-" + cluster }

// Cluster is how join reaches one cluster.
type Cluster struct {
	// Config is the REST configuration; on the managed cluster its user must be allowed to
	// create namespaces, ServiceAccounts, Secrets and RBAC (cluster-admin, in practice).
	Config *rest.Config
	// Source says where Config came from, for messages, such as
	// "kubeconfig /home/me/.kube/east (context east, user admin)".
	Source string
}

// Options are the inputs of Join.
type Options struct {
	// Name is the DRCluster's name, also the value of LabelCluster.
	Name string
	// Hub is the hub cluster; Managed is the cluster to join.
	Hub, Managed Cluster
	// Server is the managed cluster's API address as the hub reaches it; empty means
	// Managed.Config.Host.
	Server string
	// Region is the DRCluster's spec.region (its failure domain); empty means Name.
	Region string
	// Namespace holds what join creates on both clusters; empty means DefaultNamespace.
	Namespace string
	// S3 is the cluster's S3 profile. Name empty means DefaultS3ProfileName(Name); its Secret
	// has the profile's name.
	S3 objectstore.Profile
	// Peers are the clusters joined before, by DRCluster name, each reached with a kubeconfig
	// of the operator's (--peer-kubeconfig NAME=FILE): join copies the new S3 profile's Secret
	// onto each, and refuses before writing anything when one lacks a kubeconfig. The hub's
	// credential on them may not write Secrets.
	Peers map[string]Cluster
	// Silent are clusters joined before that do not answer, which `drover hub restore`
	// declared lost (docs/decisions/0018): they need no kubeconfig in Peers and get nothing
	// now; each gets the new S3 profile's Secret when it is joined again (join copies every
	// joined profile onto the cluster it joins).
	Silent []string
	// AllowInsecureKubeconfig lets join use a hub, managed or peer kubeconfig that skips TLS
	// verification (insecure-skip-tls-verify). The hub's kubeconfig for the managed cluster then
	// trusts the CA the cluster publishes (ConfigMap kube-root-ca.crt), read over that unverified
	// connection: it never skips verification itself, which the hub refuses.
	AllowInsecureKubeconfig bool
	// DryRun prints what join would apply, as YAML, after the checks, and writes nothing.
	DryRun bool
	// TokenTimeout bounds obtaining the token; zero means DefaultTokenTimeout.
	TokenTimeout time.Duration
	// TokenLifetime is how long the hub's token is valid (the hub renews it); zero means
	// DefaultTokenLifetime. The managed cluster may shorten it
	// (--service-account-max-token-expiration).
	TokenLifetime time.Duration
	// BoundsTimeout bounds the wait for the managed cluster to enforce the admission policy
	// that bounds the hub's credential; zero means DefaultBoundsTimeout.
	BoundsTimeout time.Duration
	// Out receives the report (and, with DryRun, the objects); nil means os.Stdout.
	Out io.Writer
	// NoPolicyHint leaves out what a DRPolicy pairing the cluster must define, for a caller
	// that writes the DRPolicies itself (`drover hub restore`).
	NoPolicyHint bool
}

// complete fills the defaults and validates, before any request.
func (o Options) complete() (Options, error) {
	var problems []string
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("cluster name %q is not a valid object name: %s", o.Name, strings.Join(errs, "; ")))
	}
	if o.Hub.Config == nil {
		problems = append(problems, "no kubeconfig for the hub cluster: pass --hub-kubeconfig or set KUBECONFIG")
	}
	if o.Managed.Config == nil {
		problems = append(problems, "no kubeconfig for the managed cluster: pass --cluster-kubeconfig")
	}
	for _, c := range []struct {
		cluster Cluster
		flag    string
	}{{o.Hub, "--hub-kubeconfig"}, {o.Managed, "--cluster-kubeconfig"}} {
		if c.cluster.Config != nil && c.cluster.Config.Insecure && !o.AllowInsecureKubeconfig {
			problems = append(problems, fmt.Sprintf("%s sets insecure-skip-tls-verify: anyone on the path to the cluster could read its credentials "+
				"and the token join creates; give %s the cluster's CA (certificate-authority-data), or pass --allow-insecure-kubeconfig", c.cluster.Source, c.flag))
		}
	}
	problems = append(problems, insecurePeers(o.Peers, PeerKubeconfigFlag, o.AllowInsecureKubeconfig)...)
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Region == "" {
		o.Region = o.Name
	}
	if o.Server == "" && o.Managed.Config != nil {
		o.Server = o.Managed.Config.Host
	}
	if o.S3.Name == "" {
		o.S3.Name = DefaultS3ProfileName(o.Name)
	}
	o.S3.SecretNamespace, o.S3.SecretName = o.Namespace, o.S3.Name
	if err := o.S3.Validate(); err != nil {
		problems = append(problems, err.Error()+" (pass --s3-endpoint, --s3-bucket and the credentials)")
	}
	if o.TokenTimeout == 0 {
		o.TokenTimeout = DefaultTokenTimeout
	}
	if o.BoundsTimeout == 0 {
		o.BoundsTimeout = DefaultBoundsTimeout
	}
	if o.TokenLifetime == 0 {
		o.TokenLifetime = DefaultTokenLifetime
	}
	if o.TokenLifetime < MinTokenLifetime {
		problems = append(problems, fmt.Sprintf("token lifetime %s is shorter than %s, the least the TokenRequest API issues: pass a longer --token-lifetime", o.TokenLifetime, MinTokenLifetime))
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if len(problems) > 0 {
		return o, errors.New(strings.Join(problems, "\n"))
	}
	return o, nil
}

// LoadKubeconfig loads the REST configuration of a kubeconfig the way kubectl does: path, else
// $KUBECONFIG, else ~/.kube/config; its current context unless context names another. The
// returned Cluster's Source names the file, the context and the user for messages.
func LoadKubeconfig(path, context string) (Cluster, error) {
	cc := kubeconfig.Person(path, &clientcmd.ConfigOverrides{CurrentContext: context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return Cluster{}, errors.New("no kubeconfig found: pass the file or set KUBECONFIG")
		}
		return Cluster{}, fmt.Errorf("failed to load kubeconfig %s: %w", describePath(path), err)
	}
	raw, err := cc.RawConfig()
	if err != nil {
		return Cluster{}, fmt.Errorf("failed to load kubeconfig %s: %w", describePath(path), err)
	}
	ctxName := context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	user := ""
	if c, ok := raw.Contexts[ctxName]; ok {
		user = c.AuthInfo
	}
	return Cluster{Config: cfg, Source: fmt.Sprintf("kubeconfig %s (context %q, user %q)", describePath(path), ctxName, user)}, nil
}

func describePath(path string) string {
	switch {
	case path != "":
		return path
	case os.Getenv(clientcmd.RecommendedConfigPathEnvVar) != "":
		return "$" + clientcmd.RecommendedConfigPathEnvVar + "=" + os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	default:
		return clientcmd.RecommendedHomeFile
	}
}

// The ConfigMap on the managed cluster from which the agent of the release manifests
// (config/agent) reads the name of its cluster, the DRCluster's.
const (
	AgentConfigMapName  = "drover-agent"
	AgentClusterNameKey = "cluster-name"
)
