package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
)

// completeNames completes the names of drover's objects of kind on the hub the connection
// flags select (the namespace of -n for applications); nothing when the hub does not answer.
func completeNames(conn *cli.Connection, kind string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, ns, err := conn.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, err := cli.Names(cmd.Context(), c, kind, ns, toComplete)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeFirstArg completes the first argument with the names of kind, and nothing after it.
func completeFirstArg(conn *cli.Connection, kind string) cobra.CompletionFunc {
	names := completeNames(conn, kind)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(cmd, args, toComplete)
	}
}

// completeFlags registers the completion of the flags that name clusters or policies.
func completeFlags(cmd *cobra.Command, conn *cli.Connection, clusterFlags []string, policyFlags ...string) {
	for _, f := range clusterFlags {
		_ = cmd.RegisterFlagCompletionFunc(f, completeNames(conn, cli.KindCluster))
	}
	for _, f := range policyFlags {
		_ = cmd.RegisterFlagCompletionFunc(f, completeNames(conn, cli.KindPolicy))
	}
}
