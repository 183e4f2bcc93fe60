package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/dashboard"
)

func newDashboardCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := dashboard.Options{}
	port := 0
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a web dashboard of the protected applications on 127.0.0.1, with your own kubeconfig",
		Long: `Serves a web dashboard on 127.0.0.1 (a free port unless --port names one) and prints its URL
with a one-time token: the first visit exchanges it for a cookie, so only the browser that
opened it gets in. Every read and every action is made with your kubeconfig's identity, so
the hub's RBAC decides what you see and may do, as with kubectl.

The fleet page lists the DRClusters (reachable, validated, lost), the DRPolicies and every
application of the namespace (of all with -A): phase, where it runs, PeerReady, Protected,
the RPO lag against the alert rules' thresholds and its last action. An application's page
adds its groups, conditions and a timeline. Failover, relocate and the mass actions of a
cluster (--all --from) show drover plan's output and run only once you type the
application's (or the cluster's) name. Pages follow the hub's changes as they happen.
With --prometheus URL, an application's page draws its RPO lag of the last hour. Stop it with
Ctrl-C.`,
		Example: `  drover dashboard
  drover dashboard -A
  drover dashboard -n shop --prometheus http://127.0.0.1:9090`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, ns, err := conn.Resolve()
			if err != nil {
				return err
			}
			o.Config, o.Namespace = cfg, ns
			s, err := dashboard.New(o)
			if err != nil {
				return err
			}
			l, url, err := s.Listen(port)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "drover dashboard for %s\nOpen %s\n(the token works once; Ctrl-C stops the dashboard)\n", conn.Describe(), url)
			return s.Serve(cmd.Context(), l)
		},
	}
	conn.AddFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "show the applications of every namespace")
	cmd.Flags().IntVar(&port, "port", 0, "port on 127.0.0.1 to serve on (default: a free one)")
	cmd.Flags().StringVar(&o.Prometheus, "prometheus", "", "base URL of a Prometheus that scrapes drover's hub, for the RPO-lag history of an application")
	return cmd
}
