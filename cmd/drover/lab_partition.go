//go:build linux

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/lab/netproxy"
)

func newLabPartitionCommand(f *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "partition CLUSTER",
		Short: "Cut a running managed cluster off from the hub and its peer (a network partition)",
		Long: `Cuts the network between a managed cluster and the rest of the lab while the cluster keeps
running: the hub cannot reach its API server, the peer cannot reach its S3 store, and the two
clusters' storage cannot mirror to each other. Its applications keep running and writing. The
administrator kubeconfig (drover lab kubeconfig CLUSTER) still reaches the cluster directly.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := f.open()
			if err != nil {
				return err
			}
			if err := l.Partition(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Cluster %s is partitioned; `drover lab heal %s` ends it\n", args[0], args[0])
			return nil
		},
	}
}

func newLabHealCommand(f *labFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "heal CLUSTER",
		Short: "End a managed cluster's network partition",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			l, err := f.open()
			if err != nil {
				return err
			}
			return l.Heal(args[0])
		},
	}
}

// newLabProxyCommand runs the proxies of one managed cluster; the lab starts it.
func newLabProxyCommand() *cobra.Command {
	var cluster, flag string
	var routes []string
	cmd := &cobra.Command{
		Use:    "proxy",
		Short:  "Run the network proxies of one managed cluster (started by the lab)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parsed := make([]netproxy.Route, 0, len(routes))
			for _, r := range routes {
				route, err := netproxy.ParseRoute(r)
				if err != nil {
					return err
				}
				parsed = append(parsed, route)
			}
			return netproxy.Run(cmd.Context(), flag, parsed)
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "lab cluster name")
	cmd.Flags().StringVar(&flag, "partition-flag", "", "file whose existence partitions the cluster")
	cmd.Flags().StringArrayVar(&routes, "route", nil, "LISTEN=TARGET, both host:port on loopback (repeatable)")
	for _, name := range []string{"cluster", "partition-flag", "route"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// nonEmpty returns the values that are not empty.
func nonEmpty(values ...string) []string {
	var out []string
	for _, v := range values {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
