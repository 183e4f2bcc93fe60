package extapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
)

// k8sClient talks to the one API server that TestMain starts for the package, with the external
// CRDs of internal/lab/crds/external installed.
var k8sClient client.Client

func TestMain(m *testing.M) {
	os.Exit(runWithAPIServer(m))
}

// runWithAPIServer starts etcd and kube-apiserver from the repository's bin/ directory once,
// runs the tests and stops them. Missing binaries fail the package rather than skip it.
func runWithAPIServer(m *testing.M) int {
	binDir, err := filepath.Abs(filepath.Join("..", "..", "bin"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "failed to resolve the bin directory: %v\n", err)
		return 1
	}
	assets := binDir
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		assets = dir // envtest prefers KUBEBUILDER_ASSETS over BinaryAssetsDirectory
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, name)); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %s is missing from %s: run `make tools` to build the control-plane binaries\n",
				name, assets)
			return 1
		}
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     []string{filepath.Join("..", "lab", "crds", "external")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: failed to start the API server with the external CRDs: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "failed to stop the API server: %v\n", err)
		}
	}()

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		replicationv1alpha1.AddToScheme, volsyncv1alpha1.AddToScheme, ocmv1beta1.AddToScheme, snapshotv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: failed to register the external types: %v\n", err)
			return 1
		}
	}
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: failed to create a client: %v\n", err)
		return 1
	}
	return m.Run()
}
