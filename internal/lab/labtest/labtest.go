// Package labtest starts a lab for a test package: one lab per package, started once in TestMain.
package labtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crds"
	"github.com/drover-io/drover/internal/modroot"
)

// KeepEnv names an environment variable that, when set, leaves the test lab running after the
// tests for inspection with kubectl (its directory is printed).
const KeepEnv = "DROVER_TEST_KEEP_LAB"

// RepoRoot finds the module root by walking up from the working directory to go.mod.
func RepoRoot() (string, error) { return modroot.Find() }

// BuiltDroverEnv names an environment variable holding the path of a drover binary built from
// this checkout for the whole run (hack/test.sh builds it once for make test): BuildDrover links
// it instead of building drover again for every test package, which costs each package a link
// of the binary (10-20 s of CPU).
const BuiltDroverEnv = "DROVER_TEST_BUILT_DROVER"

// BuildDrover builds the drover binary into dir and returns its path, or links the binary
// BuiltDroverEnv names there. Tests run the lab's processes from the real binary, as a user does.
func BuildDrover(ctx context.Context, root, dir string) (string, error) {
	out := filepath.Join(dir, "drover")
	if built := os.Getenv(BuiltDroverEnv); built != "" {
		if err := os.Link(built, out); err != nil && os.Symlink(built, out) != nil {
			return "", fmt.Errorf("failed to link the drover binary %s (%s) into %s: %w", built, BuiltDroverEnv, dir, err)
		}
		return out, nil
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/drover")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("failed to build drover: %w\n%s", err, msg)
	}
	return out, nil
}

// buildTimeout bounds building drover for a test lab: on a loaded machine (go test compiling
// several packages at once) it can take longer than bringing the lab up.
const buildTimeout = 20 * time.Minute

const (
	tmpPrefix = "drover-lab-"
	// ownerFile records the pid of the test process that owns a test lab.
	ownerFile = "owner.pid"
)

// sweepOrphans takes down test labs whose owning test process is gone. A test binary killed
// hard (a CI timeout, SIGKILL) cannot tear its lab down, and Pdeathsig does not cover every
// way a process dies, so each new test lab first cleans up after dead ones.
func sweepOrphans(binDir string) {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpPrefix+"*", ownerFile))
	for _, owner := range owners {
		raw, err := os.ReadFile(owner)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue
		}
		tmp := filepath.Dir(owner)
		if l, err := lab.New(lab.Options{Dir: filepath.Join(tmp, "lab"), BinDir: binDir, DroverBinary: filepath.Join(tmp, "drover")}); err == nil {
			_ = l.Down()
		}
		_ = os.RemoveAll(tmp)
		fmt.Fprintf(os.Stderr, "labtest: removed the orphaned test lab %s of dead process %d\n", tmp, pid)
	}
}

// Lab is a running test lab.
type Lab struct {
	*lab.Lab
	tmp string
}

// Options configure a test lab.
type Options struct {
	// RunDrover installs drover from the release manifests of the built binary, joins east and
	// west and creates the lab's DRPolicies; drover's pods run through the lab kubelet
	// (lab.Options.RunDrover). Off by default: most suites run the hub and agents in-process.
	RunDrover bool
	// AppKubelet runs the lab kubelet on the managed clusters of a lab without drover, for
	// application pods that run as processes (lab.Options.AppKubelet).
	AppKubelet bool
	// Installer installs drover in place of the release manifests when RunDrover is set
	// (lab.Options.Installer), such as through drover's Helm charts.
	Installer lab.Installer
	// HubProbeInterval and HubUnreachableAfter shorten the hub's probe and grace period when
	// set (lab.Options).
	HubProbeInterval    time.Duration
	HubUnreachableAfter time.Duration
	// GitOps runs a GitOps tool in the lab (lab.Options.GitOps), such as lab.GitOpsArgoCD.
	GitOps string
	// Audit gives the API servers audit logs (lab.Options.Audit).
	Audit bool
	// UpstreamCRDs serves the upstream CRDs of that directory verbatim in place of the lab's
	// (lab.Options.UpstreamCRDs), such as upstream.Dir()'s; empty takes crds.UpstreamEnv, so
	// any lab suite can run on them.
	UpstreamCRDs string
}

// Released are the options of the suites that drive drover as a user runs it (e2e, bench,
// soak): drover installed from its release manifests, the hub's probe every second and its grace
// period 5 s, so a lost cluster is noticed in seconds.
func Released() Options {
	return Options{RunDrover: true, HubProbeInterval: time.Second, HubUnreachableAfter: 5 * time.Second}
}

// Start builds drover, creates a lab in a temporary directory and brings it up, without drover's
// processes. The control-plane binaries must be in <repo>/bin (`make tools`).
func Start(ctx context.Context) (*Lab, error) {
	return StartWith(ctx, Options{})
}

// StartWith is Start with options, such as a lab that runs drover.
func StartWith(ctx context.Context, opts Options) (*Lab, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir := filepath.Join(root, "bin")
	if _, err := os.Stat(filepath.Join(binDir, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("the lab's binaries are not in %s: run `make tools` first", binDir)
	}
	sweepOrphans(binDir)
	tmp, err := os.MkdirTemp("", tmpPrefix)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, err
	}
	buildCtx, cancel := context.WithTimeout(ctx, buildTimeout)
	drover, err := BuildDrover(buildCtx, root, tmp)
	cancel()
	if err != nil {
		return nil, err
	}
	if opts.UpstreamCRDs == "" {
		opts.UpstreamCRDs = os.Getenv(crds.UpstreamEnv)
	}
	l, err := lab.New(lab.Options{
		Dir: filepath.Join(tmp, "lab"), BinDir: binDir, DroverBinary: drover,
		Progress: os.Stderr, TieToParent: os.Getenv(KeepEnv) == "",
		RunDrover: opts.RunDrover, AppKubelet: opts.AppKubelet, Installer: opts.Installer, HubProbeInterval: opts.HubProbeInterval, HubUnreachableAfter: opts.HubUnreachableAfter,
		GitOps: opts.GitOps, Audit: opts.Audit, UpstreamCRDs: opts.UpstreamCRDs,
	})
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if _, err := l.Up(ctx); err != nil {
		_ = l.Down()
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "labtest: lab up in %s in %.1f s\n", l.Dir(), time.Since(began).Seconds())
	return &Lab{Lab: l, tmp: tmp}, nil
}

// Teardown takes the lab down and removes its directory, unless KeepEnv is set. When the
// tests failed (code != 0), the components' logs are kept in a directory it prints first.
func (l *Lab) Teardown(code int) {
	if code != 0 {
		l.keepLogs()
	}
	if os.Getenv(KeepEnv) != "" {
		fmt.Fprintf(os.Stderr, "labtest: leaving the lab running in %s\n", l.Dir())
		return
	}
	if err := l.Down(); err != nil {
		fmt.Fprintln(os.Stderr, "labtest:", err)
	}
	_ = os.RemoveAll(l.tmp)
}

// keepLogs copies every cluster's logs out of the lab before it is removed.
func (l *Lab) keepLogs() {
	dst, err := os.MkdirTemp("", "drover-lab-logs-")
	if err != nil {
		return
	}
	for _, c := range l.Clusters() {
		logs := filepath.Join(c.Dir(), "logs")
		entries, _ := os.ReadDir(logs)
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join(logs, e.Name()))
			if err == nil {
				_ = os.WriteFile(filepath.Join(dst, c.Name+"-"+filepath.Base(e.Name())), raw, 0o600)
			}
		}
	}
	fmt.Fprintf(os.Stderr, "labtest: tests failed; the lab's logs are kept in %s\n", dst)
}

// clientTimeout bounds each request of a test client, so a stopped cluster fails a test step
// quickly instead of hanging it.
const clientTimeout = 5 * time.Second

// Client returns an administrator client of the named lab cluster for tests. It knows the
// client-go types and those that addToScheme register.
func (l *Lab) Client(cluster string, addToScheme ...func(*runtime.Scheme) error) (client.Client, error) {
	c, err := l.Cluster(cluster)
	if err != nil {
		return nil, err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = clientTimeout
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}
