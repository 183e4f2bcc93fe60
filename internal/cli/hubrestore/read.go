package hubrestore

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/hubless"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/objectstore"
)

// readTimeout bounds reading one cluster: one that does not answer within it is skipped.
const readTimeout = 20 * time.Second

// cluster is one managed cluster as read with the operator's kubeconfig.
type cluster struct {
	name string
	// conn is how join reaches it.
	conn join.Cluster
	// err is why it could not be read; it is then not joined.
	err error
	// silent is true when its API server gave no answer at all (a refused connection, a
	// timeout), as opposed to a kubeconfig that cannot be loaded or an answer that refuses:
	// a silent cluster that the records name is declared lost (plan.go).
	silent bool
	// profiles are the S3 profiles' Secrets it holds, by profile name.
	profiles map[string]objectstore.Profile
	// groups are its VolumeReplicationGroups that carry the hub's record.
	groups []group
	// unrecorded counts its groups with no record (protected before the hub wrote one).
	unrecorded int
}

// group is a VolumeReplicationGroup with the hub's record.
type group struct {
	vrg    *v1alpha1.VolumeReplicationGroup
	record *hubrecord.Record
}

// readClusters reads each cluster the operator named; one that cannot be read is kept with its
// error.
func readClusters(ctx context.Context, values []string, namespace string, wrap transport.WrapperFunc) ([]*cluster, error) {
	parsed, err := hubless.ParseClusters(values)
	if err != nil {
		return nil, err
	}
	out := make([]*cluster, 0, len(parsed))
	for _, p := range parsed {
		c := &cluster{name: p.Name}
		c.conn, c.err = join.LoadKubeconfig(p.Kubeconfig, "")
		if c.err == nil && wrap != nil {
			c.conn.Config.Wrap(wrap)
		}
		if c.err == nil {
			rctx, cancel := context.WithTimeout(ctx, readTimeout)
			c.err = c.read(rctx, namespace)
			cancel()
		}
		out = append(out, c)
	}
	return out, nil
}

// read reads the cluster's name, profiles and groups.
func (c *cluster) read(ctx context.Context, namespace string) error {
	cl, err := newClient(c.conn.Config)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{}
	err = cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: join.AgentConfigMapName}, cm)
	c.silent = noAnswer(err)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("failed to read ConfigMap %s/%s: %w", namespace, join.AgentConfigMapName, err)
	case err == nil && cm.Data[join.AgentClusterNameKey] != "" && cm.Data[join.AgentClusterNameKey] != c.name:
		return fmt.Errorf("%s reaches the cluster whose agent calls itself %s (ConfigMap %s/%s), not %s: give %s's kubeconfig as %s=FILE",
			c.conn.Source, cm.Data[join.AgentClusterNameKey], namespace, join.AgentConfigMapName, c.name, c.name, c.name)
	}
	if err := c.readProfiles(ctx, cl, namespace); err != nil {
		return err
	}
	list := &v1alpha1.VolumeReplicationGroupList{}
	if err := cl.List(ctx, list); err != nil {
		return fmt.Errorf("failed to list the VolumeReplicationGroups: %w", err)
	}
	for i := range list.Items {
		v := &list.Items[i]
		r, err := hubrecord.Of(v)
		switch {
		case err != nil:
			return err
		case r == nil:
			c.unrecorded++
		default:
			c.groups = append(c.groups, group{vrg: v, record: r})
		}
	}
	return nil
}

// noAnswer reports whether err is a request that the API server never answered: no status came
// back (the connection was refused or timed out). Any answer, even a refusal, is not silence.
func noAnswer(err error) bool {
	var status apierrors.APIStatus
	return err != nil && !errors.As(err, &status)
}

// readProfiles reads the S3 profiles' Secrets join wrote on the cluster.
func (c *cluster) readProfiles(ctx context.Context, cl client.Client, namespace string) error {
	secrets := &corev1.SecretList{}
	if err := cl.List(ctx, secrets, client.InNamespace(namespace), client.MatchingLabels{join.LabelManagedBy: join.ManagedByValue},
		client.HasLabels{join.LabelS3Profile}); err != nil {
		return fmt.Errorf("failed to list the S3 profiles' Secrets in %s: %w", namespace, err)
	}
	c.profiles = map[string]objectstore.Profile{}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		p, err := objectstore.ProfileFromSecret(s.Labels[join.LabelS3Profile], s)
		if err != nil {
			return fmt.Errorf("S3 profile Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		c.profiles[p.Name] = p
	}
	return nil
}

// newClient is a client of drover's and Kubernetes' types.
func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("failed to register Kubernetes' types: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("failed to register drover's types: %w", err)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = readTimeout
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("failed to create a client: %w", err)
	}
	return cl, nil
}
