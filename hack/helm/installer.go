package charttest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/internal/lab"
)

// ChartOf names the chart of a lab cluster: drover-hub on the hub, drover-agent on a managed
// cluster.
func ChartOf(c *lab.Cluster) string {
	if c.Role == lab.RoleManaged {
		return "drover-agent"
	}
	return "drover-hub"
}

// Installer installs drover's charts in the lab through Helm's SDK, in place of the release
// manifests (lab.Options.Installer): on each cluster its chart from the repository's charts/,
// as the release named like the chart in drover-system, with the values of the cluster's
// DroverTuning. It implements lab.Installer.
type Installer struct {
	// Root is drover's repository.
	Root string
	// Log receives Helm's log; nil discards it.
	Log io.Writer
}

var _ lab.Installer = (*Installer)(nil)

// InstallDrover installs c's chart as `helm install <chart> charts/<chart> -n drover-system
// --take-ownership` does. The lab made drover-system before (it places the namespace's pods on
// its kubelet's node), which the chart's Namespace would otherwise refuse to adopt: a user whose
// drover-system exists does the same or sets namespace.create=false (docs/install.md).
func (i *Installer) InstallDrover(ctx context.Context, c *lab.Cluster) error {
	_, err := i.install(ctx, c, false)
	return err
}

// InstallIntoNewNamespace installs c's chart as `helm install <chart> charts/<chart> -n
// drover-system --create-namespace` does, where drover-system does not exist.
func (i *Installer) InstallIntoNewNamespace(ctx context.Context, c *lab.Cluster) (*release.Release, error) {
	return i.install(ctx, c, true)
}

func (i *Installer) install(ctx context.Context, c *lab.Cluster, createNamespace bool) (*release.Release, error) {
	ch, err := Load(ChartDir(i.Root, ChartOf(c)))
	if err != nil {
		return nil, err
	}
	cfg, err := i.Configuration(c)
	if err != nil {
		return nil, err
	}
	inst := action.NewInstall(cfg)
	inst.ReleaseName = ch.Name()
	inst.Namespace = Namespace
	inst.CreateNamespace = createNamespace
	inst.TakeOwnership = !createNamespace
	// No wait: the agent's pod waits for its cluster's name until the lab joins the cluster.
	inst.WaitStrategy = kube.HookOnlyStrategy
	inst.Timeout = 2 * time.Minute
	rel, err := inst.RunWithContext(ctx, ch, TuningValues(c))
	if err != nil {
		return nil, fmt.Errorf("failed to install the chart %s on %s: %w", ch.Name(), c.Name, err)
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("installing %s returned a %T", ch.Name(), rel)
	}
	return r, nil
}

// TuningValues are the values that give c's Deployment the lab's DroverTuning: its extra flags
// and replicas. The agent is replaced, not rolled (strategy Recreate): the lab kubelet gives its
// one pod the pinned IP the fence's Service points at, which a surge pod could not have.
func TuningValues(c *lab.Cluster) map[string]any {
	t := c.DroverTuning()
	vals := map[string]any{}
	if len(t.Args) > 0 {
		args := make([]any, 0, len(t.Args))
		for _, a := range t.Args {
			args = append(args, a)
		}
		vals["extraArgs"] = args
	}
	if t.Replicas != nil {
		vals["replicas"] = int64(*t.Replicas)
	}
	if c.Role == lab.RoleManaged {
		vals["strategy"] = map[string]any{"type": "Recreate"}
	}
	return vals
}

// Configuration is Helm's action configuration for the lab cluster c, with its administrator's
// kubeconfig and the releases stored as Secrets in drover-system, as the helm CLI keeps them.
func (i *Installer) Configuration(c *lab.Cluster) (*action.Configuration, error) {
	log := i.Log
	if log == nil {
		log = io.Discard
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(log, nil)))
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = ptr.To(c.KubeconfigPath())
	flags.Namespace = ptr.To(Namespace)
	if err := cfg.Init(flags, Namespace, "secret"); err != nil {
		return nil, fmt.Errorf("failed to configure Helm for lab cluster %s: %w", c.Name, err)
	}
	return cfg, nil
}

// Upgrade upgrades c's release to ch with vals as `helm upgrade --wait` does: it returns once
// the release's resources are ready (the Deployment rolled out).
func (i *Installer) Upgrade(ctx context.Context, c *lab.Cluster, ch *chart.Chart, vals map[string]any) (*release.Release, error) {
	cfg, err := i.Configuration(c)
	if err != nil {
		return nil, err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = Namespace
	up.WaitStrategy = kube.StatusWatcherStrategy
	up.Timeout = 3 * time.Minute
	rel, err := up.RunWithContext(ctx, ch.Name(), ch, vals)
	if err != nil {
		return nil, fmt.Errorf("failed to upgrade the release %s on %s: %w", ch.Name(), c.Name, err)
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("upgrading %s returned a %T", ch.Name(), rel)
	}
	return r, nil
}

// Uninstall uninstalls c's release as `helm uninstall` does.
func (i *Installer) Uninstall(c *lab.Cluster, name string) error {
	cfg, err := i.Configuration(c)
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.WaitStrategy = kube.HookOnlyStrategy
	un.Timeout = 2 * time.Minute
	if _, err := un.Run(name); err != nil {
		return fmt.Errorf("failed to uninstall the release %s on %s: %w", name, c.Name, err)
	}
	return nil
}

// History returns c's releases of name, oldest first, as `helm history` does.
func (i *Installer) History(c *lab.Cluster, name string) ([]*release.Release, error) {
	cfg, err := i.Configuration(c)
	if err != nil {
		return nil, err
	}
	rels, err := action.NewHistory(cfg).Run(name)
	if err != nil {
		return nil, fmt.Errorf("failed to read the history of %s on %s: %w", name, c.Name, err)
	}
	out := make([]*release.Release, 0, len(rels))
	for _, r := range rels {
		if rel, ok := r.(*release.Release); ok {
			out = append(out, rel)
		}
	}
	return out, nil
}
