package main

import (
	"github.com/spf13/cobra"
)

// The groups of the top-level help: a person's verbs first, drover's own processes and the lab
// apart.
const (
	groupApps       = "apps"
	groupClusters   = "clusters"
	groupComponents = "components"
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
	root.AddGroup(
		&cobra.Group{ID: groupApps, Title: "Protecting and moving applications:"},
		&cobra.Group{ID: groupClusters, Title: "Clusters and the CLI:"},
		&cobra.Group{ID: groupComponents, Title: "drover's processes and its lab (not for day-to-day use):"},
	)
	root.AddCommand(inGroup(groupComponents, newLabCommand(), newAgentCommand(), newHubCommand(), newDemoCommand())...)
	root.AddCommand(inGroup(groupClusters, newVersionCommand(), newClusterCommand(), newValidateCommand(), newGatherCommand())...)
	root.AddCommand(inGroup(groupApps, newEventsCommand(), newDashboardCommand())...)
	root.SetHelpCommandGroupID(groupClusters)
	root.SetCompletionCommandGroupID(groupClusters)
	addCLICommands(root)
	separateConnectionFlags(root)
	blankEmptyMapDefaults(root)
	return root
}

// inGroup puts the commands in the help group id and returns them.
func inGroup(id string, cmds ...*cobra.Command) []*cobra.Command {
	for _, c := range cmds {
		c.GroupID = id
	}
	return cmds
}
