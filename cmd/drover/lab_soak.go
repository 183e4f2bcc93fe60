//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/internal/exercise/soak"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

type soakFlags struct {
	cycles                 int
	workload, policy, mode string
	seed                   uint64
	restarts, keepGoing    bool
	killEvery              string
	out                    string
	keep, appProcesses     bool
}

func newLabSoakCommand(f *labFlags) *cobra.Command {
	s := &soakFlags{}
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Fail over and relocate one application back and forth for many cycles, killing drover's hub and agents at random",
		Long: `soak brings the lab up (unless it runs), deploys one application on east with the lab's record
writers, protects it once and runs --cycles cycles. They alternate direction, so two cycles
cover both directions of both actions, and each ends where it began:
  odd cycles   failover east→west with east stopped, recover east, relocate west→east
  even cycles  relocate east→west, failover west→east with west stopped, recover west
Every step checks the records (a failover may lose only what was written after the last group
sync, a relocation nothing) and a watcher checks throughout that the two clusters never both
run a writable primary. With restarts on, drover's hub or one agent (of a cluster that is up)
is killed with SIGKILL at random times, --kill-every apart on average; the lab kubelet restarts
it, and the soak checks that it does. --seed replays the same schedule of kills.
It prints each step as it goes, a table and a line after each cycle, and a summary: cycles
passed and failed, records lost on relocation, the worst failover loss against its bound, the
longest two-primaries overlap, the slowest step (failover, relocation or recovery), the kills
per component and the total time.
It stops at the first failed cycle and leaves the lab running with its logs (unless
--keep-going), and exits non-zero if any cycle failed.`,
		Example: `  drover lab soak --cycles 2
  drover lab soak --cycles 100 --dir .lab-soak --out soak.md
  drover lab soak --cycles 10 --seed 42 --kill-every 30s --policy lab-volsync --mode placement`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return s.run(cmd.Context(), f, cmd.OutOrStdout(), cmd.Flags().Changed("seed"))
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&s.cycles, "cycles", 10, "number of cycles")
	fl.StringVar(&s.workload, "workload", string(story.StatefulSetKeepsPVCs), "the application: sts-retain, sts-delete, deployment, sts-twin (two PVCs a pod, twin records across them) or postgres (PostgreSQL under pgbench)")
	fl.StringVar(&s.policy, "policy", lab.PolicyVolRep, "the DRPolicy: "+lab.PolicyVolRep+" or "+lab.PolicyVolSync)
	fl.StringVar(&s.mode, "mode", string(story.SelfContained), "self-contained or placement")
	fl.BoolVar(&s.appProcesses, "app-processes", true, "run the application's pods as drover lab writer processes on the lab kubelet's node (=false: on fake nodes, the lab's storage writing for them)")
	fl.Uint64Var(&s.seed, "seed", 0, "seed of the kills' times and targets (default: from the clock, printed)")
	fl.BoolVar(&s.restarts, "restarts", true, "kill drover's hub and agents at random times (--restarts=false: never)")
	fl.StringVar(&s.killEvery, "kill-every", soak.DefaultKillEvery.String(), "mean time between two kills")
	fl.BoolVar(&s.keepGoing, "keep-going", false, "go on after a failed cycle from wherever the application settles")
	fl.StringVar(&s.out, "out", "", "markdown file to write the summary and every step to (empty: none)")
	fl.BoolVar(&s.keep, "keep", false, "leave the lab running at the end")
	return cmd
}

// options checks the flags and returns the soak's options without the lab.
func (s *soakFlags) options(seedSet bool) (soak.Options, error) {
	o := soak.Options{Cycles: s.cycles, KeepGoing: s.keepGoing, Seed: s.seed, Home: lab.East}
	if s.cycles < 1 {
		return o, fmt.Errorf("--cycles %d: give at least 1", s.cycles)
	}
	c, err := story.LabCase(s.workload, s.policy, s.mode)
	if err != nil {
		return o, err
	}
	c.AppProcesses = s.appProcesses
	o.Case = c
	if s.restarts {
		if o.KillEvery, err = parseDuration("kill-every", s.killEvery); err != nil {
			return o, err
		}
	}
	if !seedSet {
		o.Seed = uint64(time.Now().UnixNano()) //nolint:gosec // a clock reading, never negative
	}
	return o, nil
}

func (s *soakFlags) run(ctx context.Context, f *labFlags, out io.Writer, seedSet bool) error {
	ctrl.SetLogger(logr.Discard())
	o, err := s.options(seedSet)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "== drover lab soak: %d cycles of %s, kills %s, seed %d (--seed %d replays the kills)\n",
		o.Cycles, o.Case.Name(), killsText(o.KillEvery), o.Seed, o.Seed)
	sess, err := f.session(ctx, out)
	if err != nil {
		return err
	}
	o.Lab, o.Env, o.Out = sess.lab, sess.env, out
	if o.Case.Namespace, err = freeNamespace(ctx, sess.env.Hub, "soak"); err != nil {
		return err
	}
	rep, soakErr := soak.Run(ctx, o)
	if rep != nil {
		rep.PrintSummary(out)
		if s.out != "" {
			if err := writeFile(s.out, rep.WriteMarkdown); err != nil {
				soakErr = errors.Join(soakErr, err)
			} else {
				fmt.Fprintf(out, "wrote %s\n", s.out)
			}
		}
	}
	if soakErr != nil {
		// The lab stays, with every process's log, for whoever looks into the failure.
		return fmt.Errorf("the soak failed: %w\nthe lab keeps running with its logs in %s; `drover lab down --dir %s` when done",
			soakErr, sess.lab.Dir(), sess.lab.Dir())
	}
	if err := sess.end(s.keep); err != nil {
		return err
	}
	fmt.Fprintln(out, "all cycles passed")
	return nil
}

func killsText(every time.Duration) string {
	if every <= 0 {
		return "off"
	}
	return "every " + every.String() + " on average"
}
