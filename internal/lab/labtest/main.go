package labtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// startTimeout bounds bringing a test lab up, after drover is built (buildTimeout).
const startTimeout = 5 * time.Minute

// Main is the TestMain of a package whose tests share one lab: it starts the lab, hands it to
// use, runs the tests, tears the lab down (keeping its logs when a test failed) and exits.
func Main(m *testing.M, use func(*Lab)) {
	MainWith(m, Options{}, use)
}

// MainWith is Main with options, such as a lab that runs drover.
func MainWith(m *testing.M, opts Options, use func(*Lab)) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout+startTimeout)
	l, err := StartWith(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: failed to start the lab:", err)
		os.Exit(1)
	}
	use(l)
	code := m.Run()
	l.Teardown(code)
	os.Exit(code)
}

// MainWithAPIServer is the TestMain of a package whose tests need one API server (etcd and
// kube-apiserver from the repository's bin/, through envtest) and no lab: it installs the CRDs
// found in crdDirs (relative to the repository root), hands use a client with the types that
// addToScheme register, runs the tests and stops the server. Missing binaries fail the package:
// such tests prove what the API server does and must never be skipped silently.
func MainWithAPIServer(m *testing.M, crdDirs []string, addToScheme []func(*runtime.Scheme) error, use func(client.Client)) {
	os.Exit(runWithAPIServer(m, crdDirs, addToScheme, func(_ *rest.Config, cl client.Client) { use(cl) }))
}

// MainWithAPIServerConfig is MainWithAPIServer that also hands use the API server's admin
// REST configuration, for tests that make clients of their own (impersonating a user whose
// RBAC they set up: the API server authorizes with RBAC).
func MainWithAPIServerConfig(m *testing.M, crdDirs []string, addToScheme []func(*runtime.Scheme) error, use func(*rest.Config, client.Client)) {
	os.Exit(runWithAPIServer(m, crdDirs, addToScheme, use))
}

func runWithAPIServer(m *testing.M, crdDirs []string, addToScheme []func(*runtime.Scheme) error, use func(*rest.Config, client.Client)) int {
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	binDir := filepath.Join(root, "bin")
	assets := binDir
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		assets = dir // envtest prefers KUBEBUILDER_ASSETS over BinaryAssetsDirectory
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, name)); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %s is missing from %s: run `make tools` to build the control-plane binaries\n", name, assets)
			return 1
		}
	}
	paths := make([]string, 0, len(crdDirs))
	for _, d := range crdDirs {
		paths = append(paths, filepath.Join(root, d))
	}
	env := &envtest.Environment{BinaryAssetsDirectory: binDir, CRDDirectoryPaths: paths, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: failed to start the API server with the CRDs of %v: %v\n", crdDirs, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the API server: %v\n", err)
		}
	}()
	scheme := runtime.NewScheme()
	for _, add := range addToScheme {
		if err := add(scheme); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: failed to register types: %v\n", err)
			return 1
		}
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: failed to create a client: %v\n", err)
		return 1
	}
	use(cfg, cl)
	return m.Run()
}
