package main

import (
	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/version"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print drover's version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return version.Print(cmd.OutOrStdout())
		},
	}
}
