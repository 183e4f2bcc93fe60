//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/internal/exercise/bench"
)

type benchFlags struct {
	sizes, pvcs string
	drpcs       int
	drills      int
	settle      string
	out         string
	keep        bool
}

func newLabBenchCommand(f *labFlags) *cobra.Command {
	b := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure drover at scale in the lab: protect, fail over, recover and relocate N applications against the cluster's own floor",
		Long: `bench brings the lab up (unless it runs) and, for every combination of --sizes (applications)
and --pvcs (PVCs per application: a StatefulSet of that many replicas, one volumeClaimTemplate,
lab-block volumes, policy lab-volrep), deploys the applications on east with the lab's record
writers and measures:
  floor     the cluster alone: every StatefulSet scaled to 0 and back over its bound PVCs,
            until all pods are Ready (no drover involved)
  protect   DRPlacementControls created → each Deployed, Protected and PeerReady
  failover  east stopped, drover failover --all --from east --to west → all Available
  recover   east started → all PeerReady
  relocate  drover relocate --all --to east → all Available, every record on east (0 lost)
each also as a multiple of the floor; settled drover.io write requests per
VolumeReplicationGroup per minute on east and west (the API servers' apiserver_request_total);
the hub's and the agents' RSS (/proc of the processes the lab kubelet runs); the p99 reconcile
time of the DRPlacementControl and VolumeReplicationGroup controllers (drover's metrics); the
agents' CPU over drover's steps and the part of it spent sealing and opening the objects they
write to and read from the stores (their drover_store_* metrics). With
--drpcs it then fills the hub with that many DRPlacementControls over namespaces without
workloads and reports the hub's settled requests per second to each managed cluster (its
rest_client_requests_total) and its RSS. With --drills N (after the sizes, before the hub fill)
it deploys N StatefulSets of lab-file volumes protected by lab-volsync (of the smallest --pvcs
replicas), waits until each is Protected with its PVCs, creates one DRDrill of each at once and
reports the median and worst RTO and RPO, the drills' modes (all Full is the goal), the time
from their creation to the last result and from the end of their keep to all Passed and torn
down, and in how many the primary's replication stayed healthy; run last, it leaves the
applications and their drills in the lab (with --keep: drover drill history db -n
bench-drills-nN-0). --sizes 0 skips the sizes. It prints a table and writes it as markdown to
--out; it exits non-zero when an action failed or a drill did not pass.`,
		Example: `  drover lab bench --sizes 1,10 --pvcs 1,3
  drover lab bench --sizes 1,10,100 --pvcs 1,3 --drpcs 1000 --out bench.md
  drover lab bench --sizes 0 --pvcs 1 --drills 10 --out drills.md --keep`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return b.run(cmd.Context(), f, cmd.OutOrStdout()) },
	}
	cmd.Flags().StringVar(&b.sizes, "sizes", "1,10", "numbers of applications, comma-separated (0: skip, to run only --drills or --drpcs)")
	cmd.Flags().StringVar(&b.pvcs, "pvcs", "1,3", "PVCs per application, comma-separated")
	cmd.Flags().IntVar(&b.drpcs, "drpcs", 0, "also fill the hub with this many DRPlacementControls and measure its settled requests (0: skip)")
	cmd.Flags().IntVar(&b.drills, "drills", 0, "also drill this many VolSync applications at once and measure their RTO and RPO (0: skip)")
	cmd.Flags().StringVar(&b.settle, "settle", bench.DefaultSettleWindow.String(), "how long settled requests are counted")
	cmd.Flags().StringVar(&b.out, "out", "bench.md", "markdown file to write the table to (empty: none)")
	cmd.Flags().BoolVar(&b.keep, "keep", false, "leave the lab running at the end")
	cmd.Flags().BoolVar(&f.audit, "audit", false, auditFlagUsage+"; after each step, print the requests by client")
	f.droverArgFlags(cmd)
	return cmd
}

func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("--%s %q: give numbers from 1 to 1000 separated by commas", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func (b *benchFlags) options() (bench.Options, error) {
	o := bench.Options{HubDRPCs: b.drpcs, Drills: b.drills}
	if b.drills < 0 || b.drills > 1000 || b.drpcs < 0 {
		return o, fmt.Errorf("--drills %d, --drpcs %d: give 0 to skip, or a number of applications (--drills at most 1000)", b.drills, b.drpcs)
	}
	var err error
	if strings.TrimSpace(b.sizes) != "0" {
		if o.Sizes, err = parseInts("sizes", b.sizes); err != nil {
			return o, err
		}
	} else if b.drills == 0 && b.drpcs == 0 {
		return o, errors.New("--sizes 0 skips the sizes, and neither --drills nor --drpcs asks for another mode: nothing to measure")
	}
	if o.PVCs, err = parseInts("pvcs", b.pvcs); err != nil {
		return o, err
	}
	d, err := parseDuration("settle", b.settle)
	o.SettleWindow = d
	return o, err
}

func (b *benchFlags) run(ctx context.Context, f *labFlags, out io.Writer) error {
	ctrl.SetLogger(logr.Discard())
	o, err := b.options()
	if err != nil {
		return err
	}
	sess, err := f.session(ctx, out)
	if err != nil {
		return err
	}
	o.Lab, o.Env, o.Out, o.Audit = sess.lab, sess.env, out, f.audit
	rep, benchErr := bench.Run(ctx, o)
	if rep != nil {
		fmt.Fprintln(out)
		rep.PrintTable(out)
		if b.out != "" {
			if err := writeFile(b.out, rep.WriteMarkdown); err != nil {
				benchErr = errors.Join(benchErr, err)
			} else {
				fmt.Fprintf(out, "wrote %s\n", b.out)
			}
		}
	}
	benchErr = errors.Join(benchErr, sess.end(b.keep))
	if benchErr != nil {
		return fmt.Errorf("the benchmark failed: %w", benchErr)
	}
	return nil
}

func parseDuration(flag, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--%s %q: give a positive duration such as 60s", flag, s)
	}
	return d, nil
}
