package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/actions"
)

// massFlags are the flags of failover --all, relocate --all and plan ... --all.
type massFlags struct {
	all bool
	o   actions.MassOptions
}

// add registers --all, --from, --selector and -A; withAct adds the flags only the action verbs
// take (--skip-refused, --workers, --progress-interval).
func (m *massFlags) add(cmd *cobra.Command, withAct bool) {
	fs := cmd.Flags()
	fs.BoolVar(&m.all, "all", false, "act on every application that --from, --selector and the namespace select, instead of one APP")
	fs.StringVar(&m.o.From, "from", "", "with --all: only the applications whose current primary is this cluster (required for failover --all)")
	fs.StringVarP(&m.o.Selector, "selector", "l", "", "with --all: a label selector of the DRPlacementControls (e.g. tier=db,env!=test)")
	fs.BoolVarP(&m.o.AllNamespaces, "all-namespaces", "A", false, "with --all: the DRPlacementControls of every namespace")
	if withAct {
		fs.BoolVar(&m.o.SkipRefused, "skip-refused", false, "with --all: act on the applications that can start even when others are refused (default: refuse the whole batch)")
		fs.IntVar(&m.o.Workers, "workers", actions.DefaultWorkers, "with --all: how many DRPlacementControls to patch at once")
		fs.DurationVar(&m.o.ProgressInterval, "progress-interval", actions.DefaultProgressInterval, "with --all --wait: how often to print a progress line")
	}
}

// args checks the arguments: one APP without --all, none with it; the mass flags only with --all.
func (m *massFlags) args(cmd *cobra.Command, args []string, want int) error {
	if m.all {
		if len(args) != want-1 {
			return errors.New("--all acts on every matching application: name no APP")
		}
		return nil
	}
	for _, f := range []string{"from", "selector", "all-namespaces", "skip-refused", "workers", "progress-interval"} {
		if fl := cmd.Flags().Lookup(f); fl != nil && fl.Changed {
			return errors.New("--" + f + " selects applications for --all: add --all, or name one APP without it")
		}
	}
	return cobra.ExactArgs(want)(cmd, args)
}

// runMassAction is the RunE of failover --all and relocate --all.
func runMassAction(cmd *cobra.Command, conn *cli.Connection, m *massFlags, a actions.ActionOptions) error {
	o := m.o
	o.Action, o.To, o.Wait, o.Timeout, o.Output, o.Log = a.Action, a.To, a.Wait, a.Timeout, a.Output, cmd.ErrOrStderr()
	return runVerb(cmd, conn, &o, &o.Namespace, actAll)
}

// actAll is actions.ActAll for runVerb: the verb needs only its error, as ActAll prints the plan,
// the progress and the summary itself.
func actAll(ctx context.Context, c client.Client, w io.Writer, o actions.MassOptions) error {
	_, err := actions.ActAll(ctx, c, w, o)
	return err
}
