//go:build argocd

// The tests against a real lab and a real Argo CD need `make tools-argocd`, which CI does not
// run, so they build only with -tags argocd: `make test-argocd`. Without the binaries they fail.

package argocd_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/argocd"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// The lab and the Argo CD of this package, started once in TestMain and shared by its tests
// and benchmarks.
var (
	testLab *labtest.Lab
	argo    *argocd.Instance
)

// startTimeout bounds bringing the lab and Argo CD up.
const startTimeout = 6 * time.Minute

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard()) // the tests' clients have nothing to say
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	l, err := labtest.Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: failed to start the lab:", err)
		return 1
	}
	testLab = l
	began := time.Now()
	argo, err = startArgoCD(ctx, l)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: failed to start Argo CD:", err)
		keepArgoLogs(l)
		l.Teardown(1)
		return 1
	}
	fmt.Fprintf(os.Stderr, "argocd test: Argo CD up in %.1f s\n", time.Since(began).Seconds())
	code := m.Run()
	if code != 0 {
		keepArgoLogs(l)
	}
	if os.Getenv(labtest.KeepEnv) == "" {
		if err := argo.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "argocd test:", err)
		}
	}
	l.Teardown(code)
	return code
}

func startArgoCD(ctx context.Context, l *labtest.Lab) (*argocd.Instance, error) {
	root, err := labtest.RepoRoot()
	if err != nil {
		return nil, err
	}
	hub, err := l.Cluster(lab.Hub)
	if err != nil {
		return nil, err
	}
	clusters := map[string]argocd.ClusterAccess{}
	for _, name := range []string{lab.East, lab.West} {
		c, err := l.Cluster(name)
		if err != nil {
			return nil, err
		}
		if clusters[name], err = argocd.AccessFromKubeconfig(c.KubeconfigPath()); err != nil {
			return nil, err
		}
	}
	return argocd.Start(ctx, argocd.Options{
		Dir: filepath.Join(l.Dir(), "argocd"), BinDir: filepath.Join(root, "bin"),
		HubKubeconfig: hub.KubeconfigPath(), Clusters: clusters,
		Progress: os.Stderr, TieToParent: os.Getenv(labtest.KeepEnv) == "",
	})
}

// keepArgoLogs copies Argo CD's logs out of the lab before it is removed.
func keepArgoLogs(l *labtest.Lab) {
	dst, err := os.MkdirTemp("", "drover-argocd-logs-")
	if err != nil {
		return
	}
	logs := filepath.Join(l.Dir(), "argocd", "logs")
	entries, _ := os.ReadDir(logs)
	for _, e := range entries {
		if raw, err := os.ReadFile(filepath.Join(logs, e.Name())); err == nil {
			_ = os.WriteFile(filepath.Join(dst, e.Name()), raw, 0o600)
		}
	}
	fmt.Fprintf(os.Stderr, "argocd test: Argo CD's logs are kept in %s\n", dst)
}
