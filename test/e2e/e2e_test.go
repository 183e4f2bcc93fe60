package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crds/upstream"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/story"
)

const (
	// FullEnv selects the whole matrix when set to "full".
	FullEnv = "DROVER_E2E"
	// AppProcessesEnv, set to "0", runs the cases' application pods on kwok's fake nodes, the
	// lab's storage writing their records, in place of writer processes on the lab kubelets'
	// nodes (story.Case.AppProcesses, the default).
	AppProcessesEnv = "DROVER_E2E_APP_PROCESSES"
)

var testLab *labtest.Lab

// upstreamDir is the directory of the upstream CRDs the lab serves, upstreamErr why there is
// none (upstream.Dir).
var (
	upstreamDir string
	upstreamErr error
)

func TestMain(m *testing.M) {
	// The suite talks to the lab through clients only; drover's own logs are in the lab's dir.
	// drover is installed as a user installs it: the release manifests applied server-side,
	// east and west joined with drover cluster join, its pods run by the lab kubelet with their
	// ServiceAccounts' credentials, so every case also proves the install.
	// The clusters serve the upstream projects' own CRDs (upstream.Dir), not the lab's: drover's
	// objects meet the real schemas, validation rules, defaults and subresources. Without them
	// the cases run on the lab's CRDs and TestTheLabServesTheUpstreamCRDs skips or, required,
	// fails (upstream.Require).
	ctrl.SetLogger(logr.Discard())
	opts := labtest.Released()
	opts.GitOps = gitOps
	upstreamDir, upstreamErr = upstream.Dir()
	switch {
	case upstreamErr == nil:
		opts.UpstreamCRDs = upstreamDir
	case errors.Is(upstreamErr, upstream.ErrNotFound):
		fmt.Fprintln(os.Stderr, "e2e: the lab serves its own CRDs:", upstreamErr)
	default:
		fmt.Fprintln(os.Stderr, "FAIL: the e2e suite serves the upstream CRDs:", upstreamErr)
		os.Exit(1)
	}
	labtest.MainWith(m, opts, func(l *labtest.Lab) { testLab = l })
}

// cases is the matrix: every workload × backend × mode with DROVER_E2E=full (PostgreSQL under
// pgbench among the workloads, judged by its own invariants, and again with its recipe's hooks
// in self-contained mode; the two-volume StatefulSet, whose
// failovers report the twin records they tear and whose relocations must keep them), and the seed's case
// in each mode on the WaitForFirstConsumer variant of the VolSync class (a restored PVC binds only
// when the application's pod is scheduled); else the seed's case (a StatefulSet that keeps its
// PVCs) on VolSync in placement mode. make test runs that one case as the matrix's slice: the
// same StatefulSet on VolRep in self-contained mode is the story that internal/lab's writer
// processes and internal/hub's self-contained test run in make test.
func cases() []story.Case {
	backends := []struct{ policy, class string }{
		{lab.PolicyVolRep, lab.BlockStorageClass},
		{lab.PolicyVolSync, lab.FileStorageClass},
	}
	if os.Getenv(FullEnv) != "full" {
		return []story.Case{
			{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass, Mode: story.Placement},
		}
	}
	var out []story.Case
	for _, w := range []story.Workload{story.StatefulSetKeepsPVCs, story.StatefulSetDeletesPVCs, story.DeploymentWithPVC, story.StatefulSetTwoVolumes, story.Postgres} {
		for _, b := range backends {
			for _, m := range []story.Mode{story.SelfContained, story.Placement} {
				c := story.Case{Workload: w, Policy: b.policy, StorageClass: b.class, Mode: m}
				if w == story.StatefulSetTwoVolumes {
					// Two pods, four PVCs: with three, six VolSync pairs on a loaded 2-core machine
					// synced too late for Protected (SyncStale) within the step's four minutes.
					c.Replicas = 2
				}
				out = append(out, c)
			}
		}
	}
	for _, m := range []story.Mode{story.SelfContained, story.Placement} {
		out = append(out, story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolSync, StorageClass: lab.FileWFFCStorageClass, Mode: m})
	}
	// PostgreSQL with its recipe's hooks (story.PostgresRecipe) on each backend: the restore
	// order is self-contained mode's.
	for _, b := range backends {
		out = append(out, story.Case{Workload: story.Postgres, Policy: b.policy, StorageClass: b.class, Mode: story.SelfContained, Hooks: true})
	}
	return out
}

// env is the story's view of the lab; losing a cluster stops its agent with it.
func env(t *testing.T) story.Env {
	t.Helper()
	e, err := story.LabEnv(testLab.Lab, labtest.LogWriter(t))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// runs counts the runs of each case in this process: a case run again (go test -count=N) gets a
// namespace of its own, as unprotect leaves the application where it is.
var runs = map[string]int{}

func TestTheWholeStory(t *testing.T) {
	for _, c := range cases() {
		c.AppProcesses = os.Getenv(AppProcessesEnv) != "0"
		c.Namespace = "e2e-" + string(c.Workload) + "-" + map[story.Mode]string{story.SelfContained: "sc", story.Placement: "pl"}[c.Mode] +
			"-" + map[string]string{lab.PolicyVolRep: "volrep", lab.PolicyVolSync: "volsync"}[c.Policy] +
			map[string]string{lab.FileWFFCStorageClass: "-wffc"}[c.StorageClass] + map[bool]string{true: "-hooks"}[c.Hooks]
		if runs[c.Namespace]++; runs[c.Namespace] > 1 {
			c.Namespace += fmt.Sprintf("-%d", runs[c.Namespace])
		}
		t.Run(c.Name(), func(t *testing.T) {
			began := time.Now()
			r := story.New(env(t), c, lab.East)
			if err := r.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			err := r.Full(context.Background(), true)
			if cerr := r.Close(); cerr != nil {
				t.Error(cerr)
			}
			var table writerBuffer
			story.PrintTableOf(&table, r.Steps, c.Unit())
			t.Logf("%s in %s; longest overlap of both clusters running the application after a return: %s\n%s",
				c.Name(), time.Since(began).Round(time.Second), r.Overlap().Round(100*time.Millisecond), table)
			// Unprotected, the application goes on where it is (and a failed case leaves it
			// protected): it would go on writing, and its volumes syncing, beside the cases
			// after it, each one loading the machine more.
			if aerr := r.Abandon(context.Background()); aerr != nil {
				t.Error(aerr)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

type writerBuffer []byte

func (b *writerBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }
func (b writerBuffer) String() string               { return string(b) }
