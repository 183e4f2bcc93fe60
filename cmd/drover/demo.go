//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/story"
)

type demoFlags struct {
	lab     labFlags
	keep    bool
	backend string
	mode    string
	// appProcesses runs the application's pods as processes (story.Case.AppProcesses).
	appProcesses bool
	// app is the application: writer (the lab's writer), twin (story.StatefulSetTwoVolumes) or
	// postgres (story.Postgres).
	app string
}

// newDemoCommand runs drover's story in the lab.
func newDemoCommand() *cobra.Command {
	f := &demoFlags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole DR story in the lab: protect, fail over, fail back, relocate, with the data checked",
		Long: `demo brings the lab up (hub, east, west, with drover's hub and agents), deploys a StatefulSet of
three pods that write sequence-numbered records into their PVCs on east, protects it with a
DRPlacementControl, drills its recovery on west while it keeps writing on east (a sandbox
started from the replicated data, or with mirrored volumes a readiness check, then torn down),
fails it over to west with east stopped, starts east again (drover cleans and demotes it,
nobody deletes anything by hand), fails back to east with a relocation and relocates it to
west. It prints a line per step and what drover waits for, and at the end a table: each action,
its duration, the records kept and lost, and the loss allowed (for the drill: its RTO, the
records seen in the sandbox's copies and its RPO). It exits
non-zero if any check fails. --keep leaves the lab running for exploring with kubectl.
The application's pods are real processes on the lab kubelet's node, each running drover lab
writer over its mounted PVC; --app-processes=false puts them on fake nodes instead, for which
the lab's storage writes the records. --app twin gives each pod two PVCs, data and log, its
writer writing each record to data and then its twin to log: the failover shows which twins the
target holds out of order, each volume failing over from its own instant (the demo names
no consistency group), and a relocation must keep them in order. --app postgres protects PostgreSQL 15 under pgbench instead
(one pod, real processes, the machine's PostgreSQL): its drill runs a check Job in the sandbox
(pg_isready and pgbench's invariant against the copy, docs/examples/drill-check-postgres.yaml;
with VolSync, its default backend: mirrored volumes give a readiness drill, which starts
nothing to check); after the
failover and each relocation it checks that PostgreSQL answers, that pgbench's invariant holds,
that pg_amcheck finds nothing, and counts the transactions pgbench committed and the target lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd.Context(), cmd.OutOrStdout()) },
	}
	defaultDir := os.Getenv(lab.DirEnv)
	if defaultDir == "" {
		defaultDir = lab.DefaultDir
	}
	cmd.Flags().StringVar(&f.lab.dir, "dir", defaultDir, "lab state directory (default from $"+lab.DirEnv+")")
	cmd.Flags().StringVar(&f.lab.binDir, "bin-dir", "", "directory of the control-plane binaries (default: the directory of this drover binary)")
	cmd.Flags().BoolVar(&f.keep, "keep", false, "leave the lab running at the end")
	cmd.Flags().StringVar(&f.backend, "backend", "", "replication backend: volrep (lab-block volumes) or volsync (lab-file volumes); default volrep, volsync with --app postgres (whose drill then starts the copy and runs its check)")
	cmd.Flags().StringVar(&f.mode, "mode", string(story.SelfContained), "self-contained (drover restores the objects) or placement (a GitOps tool deploys the app)")
	cmd.Flags().BoolVar(&f.appProcesses, "app-processes", true, "run the application's pods as drover lab writer processes on the lab kubelet's node (=false: on fake nodes, the lab's storage writing for them)")
	cmd.Flags().StringVar(&f.app, "app", "writer", "the application: writer (a StatefulSet of the lab's writers), twin (its pods each writing twin records across two PVCs) or postgres (PostgreSQL under pgbench)")
	return cmd
}

func (f *demoFlags) run(ctx context.Context, out io.Writer) error {
	ctrl.SetLogger(logr.Discard())
	c, err := f.demoCase()
	if err != nil {
		return err
	}
	began := time.Now()
	fmt.Fprintln(out, "== drover demo: bringing the lab up")
	sess, err := f.lab.session(ctx, out)
	if err != nil {
		return err
	}
	l, env := sess.lab, sess.env
	if c.Namespace, err = freeNamespace(ctx, env.Hub, "demo"); err != nil {
		return err
	}
	switch c.Workload {
	case story.Postgres:
		fmt.Fprintf(out, "== the story of PostgreSQL under pgbench (1 pod, 1 PVC, %s) protected by %s in namespace %s, %s mode\n", c.StorageClass, c.Policy, c.Namespace, c.Mode)
	case story.StatefulSetTwoVolumes:
		fmt.Fprintf(out, "== the story of a StatefulSet (3 pods, 6 PVCs: data and log each, %s) protected by %s in namespace %s, %s mode\n", c.StorageClass, c.Policy, c.Namespace, c.Mode)
	default:
		fmt.Fprintf(out, "== the story of a StatefulSet (3 pods, 3 PVCs, %s) protected by %s in namespace %s, %s mode\n", c.StorageClass, c.Policy, c.Namespace, c.Mode)
	}
	switch {
	case c.Workload == story.Postgres:
		fmt.Fprintln(out, "== its pod runs PostgreSQL and pgbench as processes on the lab kubelet's node; its drill runs docs/examples/drill-check-postgres.yaml's check")
	case c.AppProcesses:
		fmt.Fprintln(out, "== its pods run drover lab writer as processes on the lab kubelet's node")
	}
	r := story.New(env, c, lab.East)
	if err := r.Start(ctx); err != nil {
		return err
	}
	steps := []func() story.Step{
		func() story.Step { return r.Protect(ctx) },
		func() story.Step { return r.Drill(ctx, lab.East) },
		func() story.Step { return r.Failover(ctx, lab.East) },
		func() story.Step { return r.Recover(ctx, lab.East) },
		func() story.Step { return r.Relocate(ctx, lab.West) },
		func() story.Step { return r.Relocate(ctx, lab.East) },
	}
	for _, step := range steps {
		if s := step(); s.Err != nil {
			break
		}
	}
	// The first relocation brings the application home: the fail-back.
	for i := range r.Steps {
		if r.Steps[i].Action == "relocate" {
			r.Steps[i].Action = "fail back (relocate)"
			break
		}
	}
	watchErr := r.Close()
	fmt.Fprintln(out)
	story.PrintTableOf(out, r.Steps, c.Unit())
	fmt.Fprintf(out, "\nwall time %s; the longest time both clusters ran the application after a lost cluster returned: %s\n",
		time.Since(began).Round(time.Second), r.Overlap().Round(100*time.Millisecond))
	storyErr := errors.Join(r.Err(), watchErr)
	if f.keep || sess.wasUp {
		fmt.Fprintf(out, "the lab keeps running: kubectl --kubeconfig %s get drpc -n %s; drover lab down when done\n",
			filepath.Join(l.Dir(), lab.Hub, "kubeconfig"), c.Namespace)
	}
	storyErr = errors.Join(storyErr, sess.end(f.keep))
	if storyErr != nil {
		return fmt.Errorf("the demo failed: %w", storyErr)
	}
	fmt.Fprintln(out, "all checks passed")
	return nil
}

// demoCase is the demo's case: --app's workload in --mode with --backend's policy (by default
// VolRep, VolSync for PostgreSQL, whose drill then starts the copy and runs its check).
func (f *demoFlags) demoCase() (story.Case, error) {
	backend := f.backend
	if backend == "" {
		backend = map[string]string{"postgres": "volsync"}[f.app]
	}
	if backend == "" {
		backend = "volrep"
	}
	policy := map[string]string{"volrep": lab.PolicyVolRep, "volsync": lab.PolicyVolSync}[backend]
	if policy == "" {
		return story.Case{}, fmt.Errorf("--backend %q: use volrep or volsync", backend)
	}
	workload := map[string]story.Workload{"writer": story.StatefulSetKeepsPVCs, "twin": story.StatefulSetTwoVolumes, "postgres": story.Postgres}[f.app]
	if workload == "" {
		return story.Case{}, fmt.Errorf("--app %q: use writer, twin or postgres", f.app)
	}
	c, err := story.LabCase(string(workload), policy, f.mode)
	if err != nil {
		return c, fmt.Errorf("--mode %q: use self-contained or placement", f.mode)
	}
	c.Replicas, c.AppProcesses = 3, f.appProcesses
	if workload == story.Postgres {
		c.Replicas, c.AppProcesses = 1, true
	}
	return c, nil
}

// freeNamespace returns base, or base-2, base-3... when an earlier run (--keep) left its
// namespace on the hub.
func freeNamespace(ctx context.Context, hub client.Client, base string) (string, error) {
	for i := 1; i < 100; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		err := hub.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return name, nil
		}
		if err != nil {
			return "", fmt.Errorf("failed to read the hub: %w", err)
		}
	}
	return "", fmt.Errorf("99 earlier runs left their %s namespaces in the lab: run drover lab down", base)
}
