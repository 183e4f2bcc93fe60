package lab

import (
	"context"
	"errors"
	"os"
)

const (
	componentProxy = "lab-proxy"
	proxyVerb      = "proxy"
)

// proxyStep is a managed cluster's lab-proxy, `drover lab proxy` (partition.go), ready once its
// routes accept connections, or, partitioned, refuse them: clients use the proxies' addresses
// (the DRCluster's kubeconfig, S3Endpoint), so a started cluster is one they reach, or one they
// are refused by.
func (c *Cluster) proxyStep() step {
	args := []string{"lab", proxyVerb, "--cluster=" + c.Name, "--partition-flag=" + c.PartitionFlag()}
	for _, r := range c.proxyRoutes() {
		args = append(args, "--route="+r.String())
	}
	return step{
		component: component{name: componentProxy, binary: c.lab.opts.DroverBinary, args: args},
		ready: func(context.Context, *startContext, component, int) error {
			_, flagErr := os.Stat(c.PartitionFlag())
			return c.awaitProxies(errors.Is(flagErr, os.ErrNotExist))
		},
	}
}
