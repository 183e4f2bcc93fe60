// Command drover is the disaster-recovery orchestrator: hub, agent, lab and the CLI verbs.
//
// Its exit status says why a verb failed (internal/cli's Exit constants, documented in
// docs/cli.md): refused, timed out, partly done, unreachable, or a wrong command line.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/drover-io/drover/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, newRootCommand(), os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// run executes root with args, prints its error to stderr and returns the exit status.
func run(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	usage := markUsageErrors(root)
	root.SetArgs(args)
	err := usage(root.ExecuteContext(ctx))
	if err != nil {
		fmt.Fprintln(stderr, "Error:", err)
	}
	return cli.ExitCodeOf(err)
}

// markUsageErrors makes the errors cobra returns before a command runs (an unknown flag or
// command, wrong arguments, a required flag missing) usage errors: it wraps every command's
// run function to note that one started, and returns the function that marks an error
// returned before that.
func markUsageErrors(root *cobra.Command) func(error) error {
	started := false
	eachCommand(root, func(c *cobra.Command) {
		if runE := c.RunE; runE != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error { started = true; return runE(cmd, args) }
		}
		if run := c.Run; run != nil {
			c.Run = func(cmd *cobra.Command, args []string) { started = true; run(cmd, args) }
		}
	})
	return func(err error) error {
		if err != nil && !started {
			return cli.Usage(err)
		}
		return err
	}
}
