package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/drover-io/drover/internal/lab/netproxy"
	"github.com/drover-io/drover/internal/lab/process"
)

// The lab's network partition. The hub and the peer reach a managed cluster only through its
// proxies (internal/lab/netproxy, the component lab-proxy): the DRCluster's kubeconfig Secret
// names the API proxy, the cluster's S3 profile the S3 proxy. `drover lab partition east`
// writes east's partition flag: east's proxies cut their connections and refuse new ones, and
// both clusters' lab storage reads the flag and finds its peer unreachable, so neither mirrors
// to the other. East keeps running, its application keeps writing, and the administrator
// kubeconfig, which names the API server directly, still reaches it. `heal` removes the flag.
//
// What the partition does not cut: east's own agent writes to every S3 profile, west's
// included, through west's proxy, which stays open (the profiles of a DRPolicy are the same
// addresses for both clusters, so one cluster's outgoing traffic cannot be told apart on
// loopback); and east's agent reaches its own S3 store through its own proxy, so it loses it
// for the partition's length. drover's store epochs make the first safe: once west's promotion
// claims the group in west's store, east's agent reads that newer claim there and writes
// nothing to any store (internal/story's partition step checks it).

const (
	// partitionFlagFile, in a managed cluster's directory, exists while it is partitioned.
	partitionFlagFile = "partitioned"
	// partitionSettleTimeout bounds the wait for the proxies to close or open again.
	partitionSettleTimeout = 10 * time.Second
)

// PartitionFlag is the file that partitions the cluster while it exists.
func (c *Cluster) PartitionFlag() string { return filepath.Join(c.dir, partitionFlagFile) }

// Partitioned reports whether the cluster is cut off from the hub and its peer.
func (c *Cluster) Partitioned() bool { return netproxy.Partitioned(c.PartitionFlag()) }

// ProxiedEndpoint is the URL of the cluster's API server as the hub reaches it, through the
// cluster's API proxy.
func (c *Cluster) ProxiedEndpoint() string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.Ports.APIProxy)
}

// proxyRoutes are the routes of a managed cluster's proxy: its API server and its S3 store.
func (c *Cluster) proxyRoutes() []netproxy.Route {
	return []netproxy.Route{
		{Listen: loopback(c.Ports.APIProxy), Target: loopback(c.Ports.APIServer)},
		{Listen: loopback(c.Ports.S3Proxy), Target: loopback(c.Ports.S3)},
	}
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// Partition cuts the managed cluster name off from the hub and its peer while it keeps
// running, and returns once its proxies refuse connections.
func (l *Lab) Partition(name string) error {
	c, err := l.managedCluster(name)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.PartitionFlag(), nil, 0o600); err != nil {
		return fmt.Errorf("failed to write partition flag %s: %w", c.PartitionFlag(), err)
	}
	l.progress("%s: partitioned from the hub and %s", name, c.peer().Name)
	return c.awaitProxies(false)
}

// Heal ends the managed cluster's partition and returns once its proxies accept connections
// again (at once when the cluster is stopped: they open when it starts).
func (l *Lab) Heal(name string) error {
	c, err := l.managedCluster(name)
	if err != nil {
		return err
	}
	if err := os.Remove(c.PartitionFlag()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to remove partition flag %s: %w", c.PartitionFlag(), err)
	}
	l.progress("%s: partition healed", name)
	return c.awaitProxies(true)
}

// managedCluster returns the managed cluster name, or an error that names the managed clusters.
func (l *Lab) managedCluster(name string) (*Cluster, error) {
	c, err := l.Cluster(name)
	if err != nil {
		return nil, err
	}
	if c.Role != RoleManaged {
		return nil, fmt.Errorf("%s is not a managed cluster of the lab: partition %s or %s", name, East, West)
	}
	if _, err := os.Stat(c.dir); err != nil {
		return nil, fmt.Errorf("there is no lab in %s: run `drover lab up` first", l.opts.Dir)
	}
	return c, nil
}

// awaitProxies waits until every proxy route of a running proxy accepts connections (open) or
// refuses them; a stopped proxy is not waited for.
func (c *Cluster) awaitProxies(open bool) error {
	deadline := time.Now().Add(partitionSettleTimeout)
	for {
		procs, err := c.processes()
		if err != nil {
			return err
		}
		p, ok := procs[componentProxy]
		if !ok || !process.Alive(p.PID) {
			return nil
		}
		settled := true
		for _, r := range c.proxyRoutes() {
			conn, err := net.DialTimeout("tcp", r.Listen, time.Second)
			if err == nil {
				_ = conn.Close()
			}
			settled = settled && (err == nil) == open
		}
		if settled {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster %s: the proxy did not %s within %s; see %s", c.Name,
				map[bool]string{true: "accept connections", false: "refuse connections"}[open],
				partitionSettleTimeout, filepath.Join(c.logDir(), componentProxy+".log"))
		}
		time.Sleep(netproxy.PollInterval)
	}
}

// StorageDir is the directory of the managed cluster's lab storage (its volumes and images).
func (c *Cluster) StorageDir() string { return c.storageDir() }
