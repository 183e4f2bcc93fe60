package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
)

func newVersionCommand() *cobra.Command {
	conn := &cli.Connection{}
	o := cli.VersionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print drover's version, and the hub cluster's when it answers",
		Long: `Prints the version and commit this binary was built from and, unless --client, the Kubernetes
version of the hub cluster (kubectl's connection flags select it; an unreachable hub is said,
not an error). drover's hub and agents do not publish their versions: they are printed as
unknown (not published).`,
		Example: `  drover version
  drover version --client -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.Version(conn, cmd.OutOrStdout(), o)
		},
	}
	conn.AddHubFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.ClientOnly, "client", false, "print the client's version alone, asking the hub nothing")
	outputFlag(cmd, &o.Output, "json, yaml or jsonpath=TEMPLATE (default: lines)")
	return cmd
}
