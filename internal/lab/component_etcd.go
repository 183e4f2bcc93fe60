package lab

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
)

const componentEtcd = "etcd"

// etcdStep is the cluster's etcd, ready once it reports itself healthy.
func (c *Cluster) etcdStep() step {
	etcdPeer := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.EtcdPeer)
	etcdClient := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.Etcd)
	return step{
		component: component{name: componentEtcd, binary: c.bin("etcd"), args: []string{
			"--name=" + c.Name,
			"--data-dir=" + c.etcdDir(),
			"--listen-client-urls=" + etcdClient,
			"--advertise-client-urls=" + etcdClient,
			"--listen-peer-urls=" + etcdPeer,
			"--initial-advertise-peer-urls=" + etcdPeer,
			"--initial-cluster=" + c.Name + "=" + etcdPeer,
			// A lab loses nothing it cares about on a host crash; fsync would only slow every write.
			"--unsafe-no-fsync=true",
			"--quota-backend-bytes=4294967296",
			"--log-level=warn",
		}},
		ready: func(ctx context.Context, _ *startContext, comp component, pid int) error {
			return c.waitReady(ctx, comp, pid, c.etcdHealthy)
		},
	}
}

// etcdDir is the cluster's etcd data directory: every object of the cluster.
func (c *Cluster) etcdDir() string { return filepath.Join(c.dir, "etcd") }

func (c *Cluster) etcdHealthy(ctx context.Context) error {
	body, err := httpGet(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/health", c.Ports.Etcd))
	if err != nil {
		return err
	}
	if !strings.Contains(body, `"health":"true"`) {
		return fmt.Errorf("etcd reports %s", body)
	}
	return nil
}
