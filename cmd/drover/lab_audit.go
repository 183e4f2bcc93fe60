//go:build linux

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
	var namespace string
	cmd := &cobra.Command{
		Use:   "audit [CLUSTER...]",
		Short: "Count the requests each client made of the lab's API servers lately (needs `drover lab up --audit`)",
		Long: `Reads the audit log of each cluster's kube-apiserver (every cluster, or those named) and prints
the requests received over the last --since, by verb, resource and client (the user and the
program of its user agent: drover's hub and agents by their ServiceAccounts, the lab storage,
the kube-controller-manager's controllers by name), the largest first, each also per second.
The API servers' metrics count requests by verb and resource only; this says who asked.
With --namespace it prints a trace instead: every request on the objects of that namespace (and
on the namespace itself) on the named clusters, merged in the order received, each with its
time, response code, latency and client: where one application's failover spent its time.
Auditing is off unless the lab was brought up with --audit (or by "drover lab bench --audit").`,
		Example: `  drover lab up --audit
  drover lab audit east --since 30s --top 10
  drover lab audit hub west --since 2m --namespace bench-p1-n30-7`,
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
			if namespace != "" {
				return writeTrace(cmd, clusters, namespace, to.Add(-since), to)
			}
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
	cmd.Flags().StringVar(&namespace, "namespace", "", "print every request on this namespace's objects in order instead of counts")
	return cmd
}

// writeTrace prints the requests on namespace ns of every cluster in [from, to), merged in order.
func writeTrace(cmd *cobra.Command, clusters []*lab.Cluster, ns string, from, to time.Time) error {
	var reqs []lab.AuditRequest
	for _, c := range clusters {
		got, err := lab.AuditTrace(c.Name, c.AuditLogPath(), ns, from, to)
		if err != nil {
			return err
		}
		reqs = append(reqs, got...)
	}
	if len(reqs) == 0 {
		return fmt.Errorf("no request on namespace %s in the last %s of the audit logs of %d clusters", ns, to.Sub(from), len(clusters))
	}
	start := reqs[0].Received
	for _, r := range reqs {
		if r.Received.Before(start) {
			start = r.Received
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Requests on namespace %s, from %s:\n", ns, start.Format(time.RFC3339Nano))
	return lab.WriteAuditTrace(cmd.OutOrStdout(), reqs, start)
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
