package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/lab"
)

func newLabAuditCommand(f *labFlags) *cobra.Command {
	var since time.Duration
	var top int
	cmd := &cobra.Command{
		Use:   "audit [CLUSTER...]",
		Short: "Count the requests each client made of the lab's API servers lately (needs `drover lab up --audit`)",
		Long: `Reads the audit log of each cluster's kube-apiserver (every cluster, or those named) and prints
the requests received over the last --since, by verb, resource and client (the user and the
program of its user agent: drover's hub and agents by their ServiceAccounts, the lab storage,
the kube-controller-manager's controllers by name), the largest first, each also per second.
The API servers' metrics count requests by verb and resource only; this says who asked.
Auditing is off unless the lab was brought up with --audit (or by "drover lab bench --audit").`,
		Example: `  drover lab up --audit
  drover lab audit east --since 30s --top 10`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if since <= 0 || top < 1 {
				return fmt.Errorf("--since must be positive and --top at least 1 (got %s and %d)", since, top)
			}
			l, err := f.open()
			if err != nil {
				return err
			}
			clusters, err := namedClusters(l, args)
			if err != nil {
				return err
			}
			to := time.Now()
			for _, c := range clusters {
				counts, err := lab.AuditCounts(c.AuditLogPath(), to.Add(-since), to)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s, the last %s:\n", c.Name, since)
				if err := lab.WriteAuditTop(cmd.OutOrStdout(), counts, since, top); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&since, "since", time.Minute, "how far back to count")
	cmd.Flags().IntVar(&top, "top", 20, "how many rows to print per cluster")
	return cmd
}

// namedClusters returns the clusters named, or every cluster of the lab when none is.
func namedClusters(l *lab.Lab, names []string) ([]*lab.Cluster, error) {
	if len(names) == 0 {
		return l.Clusters(), nil
	}
	var out []*lab.Cluster
	for _, n := range names {
		c, err := l.Cluster(n)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
