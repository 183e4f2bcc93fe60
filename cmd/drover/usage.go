package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// separateConnectionFlags gives every verb that takes kubectl's connection flags a usage that
// lists them apart from the verb's own flags, so that a verb's help leads with what it does.
func separateConnectionFlags(root *cobra.Command) {
	conn := connectionFlags()
	eachCommand(root, func(c *cobra.Command) {
		if token := c.LocalFlags().Lookup("token"); token != nil && isConnectionFlag(token, conn) && c.Runnable() {
			c.SetUsageFunc(func(c *cobra.Command) error { return connectionUsage(c, conn) })
		}
	})
}

// eachCommand calls visit on c and on every command under it, parents before their children.
func eachCommand(c *cobra.Command, visit func(*cobra.Command)) {
	visit(c)
	for _, sub := range c.Commands() {
		eachCommand(sub, visit)
	}
}

// connectionUsage prints the usage line, the examples, the verb's own flags, then the
// connection flags and the flags inherited from the parents.
func connectionUsage(c *cobra.Command, conn *pflag.FlagSet) error {
	own := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	connection := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if isConnectionFlag(f, conn) {
			connection.AddFlag(f)
		} else {
			own.AddFlag(f)
		}
	})
	w := c.OutOrStderr()
	fmt.Fprintf(w, "Usage:\n  %s\n", c.UseLine())
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s [command]\n\nAvailable Commands:\n", c.CommandPath())
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(w, "  %-*s %s\n", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
	}
	fmt.Fprintf(w, "\nFlags:\n%s", own.FlagUsages())
	fmt.Fprintf(w, "\nConnection flags, as kubectl's (docs/cli.md#connection-flags):\n%s", connection.FlagUsages())
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(w, "\nGlobal Flags:\n%s", c.InheritedFlags().FlagUsages())
	}
	return nil
}

// blankEmptyMapDefaults gives a NAME=VALUE flag whose default is empty no default in the help:
// pflag prints "(default [])" for such a flag (it knows an empty list, not an empty map), which
// reads as a list and says nothing.
func blankEmptyMapDefaults(root *cobra.Command) {
	eachCommand(root, func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() == "stringToString" && f.DefValue == "[]" {
				f.DefValue = ""
			}
		})
	})
}
