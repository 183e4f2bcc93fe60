package main

import (
	"github.com/spf13/cobra"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "drover",
		Short: "Disaster recovery for stateful Kubernetes applications across two clusters",
		Long: `drover protects an application's volumes and objects on its home cluster, replicates them
to a peer cluster, and fails the application over or relocates it on request.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newLabCommand(), newAgentCommand(), newHubCommand(), newDemoCommand())
	root.AddCommand(newVersionCommand())
	root.AddCommand(newClusterCommand())
	root.AddCommand(newValidateCommand())
	root.AddCommand(newGatherCommand())
	root.AddCommand(newEventsCommand())
	addCLICommands(root)
	return root
}
