package bench

import (
	"io"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

// The benchmark's own clients must not be what limits it: client-go's default (5 requests/s)
// would make listing 100 applications' pods the slowest part of a failover.
const (
	clientQPS   = 500
	clientBurst = 1000
)

// EnvOf is the story's view of a lab that runs drover, with clients fast enough for a fleet.
func EnvOf(l *lab.Lab, out io.Writer) (story.Env, error) {
	clientOf := func(name string) (client.Client, error) {
		c, err := l.Cluster(name)
		if err != nil {
			return nil, err
		}
		cfg, err := c.RESTConfig()
		if err != nil {
			return nil, err
		}
		cfg.QPS, cfg.Burst = clientQPS, clientBurst
		s := runtime.NewScheme()
		for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
			if err := add(s); err != nil {
				return nil, err
			}
		}
		return client.New(cfg, client.Options{Scheme: s})
	}
	h, err := clientOf(lab.Hub)
	if err != nil {
		return story.Env{}, err
	}
	clusters := map[string]client.Client{}
	for _, name := range []string{lab.East, lab.West} {
		if clusters[name], err = clientOf(name); err != nil {
			return story.Env{}, err
		}
	}
	return story.Env{
		Hub: h, Clusters: clusters, Out: out,
		DataDir:      func(cluster string) string { return filepath.Join(l.Dir(), cluster, "storage") },
		StopCluster:  l.Stop,
		StartCluster: l.Start,
	}, nil
}
