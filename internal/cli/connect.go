package cli

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeconfig"
)

// defaultNamespace is the namespace when neither --namespace nor the kubeconfig context names one.
const defaultNamespace = "default"

// The CLI's client rate limit, to the hub and to the managed clusters, unless the kubeconfig
// sets one.
const (
	// QPS is the requests per second a client of the CLI sends.
	QPS = 50
	// Burst is the requests a client of the CLI may send at once.
	Burst = 100
)

// Connection selects the hub cluster and the namespace the way kubectl does: the kubeconfig
// from --kubeconfig, else $KUBECONFIG, else ~/.kube/config; its current context unless
// --context names another; the namespace from --namespace, else the context's, else "default";
// and kubectl's overrides of the context's server and credentials (--server, --token, --as,
// --request-timeout, ...), with kubectl's names and meanings.
type Connection struct {
	// Kubeconfig is an explicit kubeconfig file.
	Kubeconfig string
	// Context is the kubeconfig context of the hub cluster.
	Context string
	// Namespace overrides the context's namespace.
	Namespace string
	// Overrides are kubectl's other connection flags: the cluster's server and CA, the user's
	// token, client certificate and impersonation, the request timeout.
	Overrides clientcmd.ConfigOverrides
}

// AddFlags registers kubectl's connection flags and -n/--namespace, the namespace of the
// DRPlacementControls.
func (c *Connection) AddFlags(fs *pflag.FlagSet) {
	c.AddHubFlags(fs)
	fs.StringVarP(&c.Namespace, "namespace", "n", "", `namespace of the DRPlacementControls (default: the context's namespace, else "default")`)
}

// AddHubFlags registers kubectl's connection flags without -n, for verbs about cluster-scoped
// objects. kubectl's --cluster (a kubeconfig cluster) is left out: on drover's verbs --cluster
// names a DRCluster.
func (c *Connection) AddHubFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&c.Context, "context", "", "kubeconfig context of the hub cluster (default: the current context)")
	names := clientcmd.RecommendedConfigOverrideFlags("")
	clientcmd.BindAuthInfoFlags(&c.Overrides.AuthInfo, fs, names.AuthOverrideFlags)
	clientcmd.BindClusterFlags(&c.Overrides.ClusterInfo, fs, names.ClusterOverrideFlags)
	names.ContextOverrideFlags.AuthInfoName.BindStringFlag(fs, &c.Overrides.Context.AuthInfo)
	names.Timeout.BindStringFlag(fs, &c.Overrides.Timeout)
}

// AddHubFlagsWithout registers AddHubFlags' flags but those named, for a verb where a name
// means something else.
func (c *Connection) AddHubFlagsWithout(fs *pflag.FlagSet, names ...string) {
	all := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	c.AddHubFlags(all)
	all.VisitAll(func(f *pflag.Flag) {
		if !slices.Contains(names, f.Name) {
			fs.AddFlag(f)
		}
	})
}

// Describe says where the connection comes from, for messages: the kubeconfig, its context and
// user, and the server when --server overrides it.
func (c *Connection) Describe() string {
	cc := c.clientConfig()
	path := c.Kubeconfig
	if path == "" {
		path = "$KUBECONFIG or ~/.kube/config"
	}
	out := "kubeconfig " + path
	if raw, err := cc.RawConfig(); err == nil {
		name := OrDefault(c.Context, raw.CurrentContext)
		user := OrDefault(c.Overrides.Context.AuthInfo, "")
		if ctx, ok := raw.Contexts[name]; ok && user == "" {
			user = ctx.AuthInfo
		}
		out += fmt.Sprintf(" (context %q, user %q)", name, user)
	}
	if s := c.Overrides.ClusterInfo.Server; s != "" {
		out += ", server " + s
	}
	return out
}

func (c *Connection) clientConfig() clientcmd.ClientConfig {
	overrides := c.Overrides
	overrides.CurrentContext = c.Context
	overrides.Context.Namespace = c.Namespace
	return kubeconfig.Person(c.Kubeconfig, &overrides)
}

// Resolve returns the hub's REST configuration and the namespace to use.
func (c *Connection) Resolve() (*rest.Config, string, error) {
	cc := c.clientConfig()
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", errors.New("no kubeconfig found for the hub cluster: pass --kubeconfig FILE or set KUBECONFIG")
		}
		return nil, "", fmt.Errorf("failed to load the hub cluster's kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("failed to read the namespace of the kubeconfig context: %w", err)
	}
	if ns == "" {
		ns = defaultNamespace
	}
	return cfg, ns, nil
}

// Client returns a client of the hub cluster for drover's types, and the namespace to use.
func (c *Connection) Client() (client.WithWatch, string, error) {
	cfg, ns, err := c.Resolve()
	if err != nil {
		return nil, "", err
	}
	// client-go's default (5 requests/s) would make a mass action over 100 applications
	// take 20 s just to patch them; a person's CLI is not the hub's load.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = QPS, Burst
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", fmt.Errorf("failed to register drover's types: %w", err)
	}
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("failed to create a client of the hub cluster at %s: %w", cfg.Host, err)
	}
	return cl, ns, nil
}
