package kubelet

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/drover-io/drover/internal/lab/pgsql"
	"github.com/drover-io/drover/internal/modroot"
)

const (
	// probeImage is the image name the tests' kubelet maps to the podprobe binary.
	probeImage = "example.com/lab/podprobe"
	// shellImage is the image name the tests' kubelet maps to /bin/sh.
	shellImage = "example.com/lab/shell"
	// testDriver is the CSI driver of the tests' lab volumes.
	testDriver = "block.test.lab.drover.io"
)

var (
	cfg        *rest.Config
	cs         *kubernetes.Clientset
	testKube   *Kubelet
	probeBin   string
	testLogDir string
	// testTmp is the suite's directory, where the tests' mount points live.
	testTmp string
	// testStorageDir is the lab storage data directory the suite's kubelet mounts PVCs from.
	testStorageDir string
	// testNodeDir is the node directory (Options.NodeDirs) the suite's kubelet binds into every
	// container at testNodeDirTarget, writable by every user.
	testNodeDir, testNodeDirTarget string
)

func TestMain(m *testing.M) {
	gomega.SetDefaultEventuallyTimeout(30 * time.Second)
	gomega.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	os.Exit(run(m))
}

// run starts one API server (etcd and kube-apiserver from bin/, through envtest) and one lab
// kubelet for the package, builds the test workload and runs the tests.
func run(m *testing.M) int {
	root, err := modroot.Find()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(root, "bin", name)); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: %s is missing from %s/bin: run `make tools`\n", name, root)
			return 1
		}
	}
	tmp, err := os.MkdirTemp("", "lab-kubelet-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	// Left 0700: pods that run as another user than root exec podprobe from here all the same.
	testTmp = tmp
	probeBin = filepath.Join(tmp, "podprobe")
	secretMount = filepath.Join(tmp, "mnt", "lab-secret")
	build := exec.Command("go", "build", "-o", probeBin, "./internal/lab/kubelet/testdata/podprobe")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: failed to build the test workload: %v\n%s", err, out)
		return 1
	}
	serving, kubeletFlags, err := kubeletPKI(tmp)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: failed to make the kubelet's certificates:", err)
		return 1
	}
	env := &envtest.Environment{BinaryAssetsDirectory: filepath.Join(root, "bin")}
	apiArgs := env.ControlPlane.GetAPIServer().Configure()
	for name, value := range kubeletFlags {
		apiArgs.Set(name, value)
	}
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: failed to start the API server:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	cs = kubernetes.NewForConfigOrDie(cfg)
	if err := allowAPIServerToKubelet(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: failed to let the API server reach the kubelet:", err)
		return 1
	}
	testLogDir = filepath.Join(tmp, "logs")
	testStorageDir = filepath.Join(tmp, "storage")
	testNodeDir, testNodeDirTarget = filepath.Join(tmp, "node"), filepath.Join(tmp, "mnt", "node")
	if err := os.Mkdir(testNodeDir, 0o750); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	if err := os.Chmod(testNodeDir, 0o777|os.ModeSticky); err != nil { //nolint:gosec // every container's user writes there
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	images := map[string]string{probeImage: probeBin, shellImage: "/bin/sh"}
	if pg, err := pgsql.Find(); err == nil {
		maps.Copy(images, pg.Images()) // TestExecRunsPostgreSQLsHooksInItsPod fails without it
	}
	testKube, err = New(Options{
		Config: cfg, Images: images,
		StateDir: filepath.Join(tmp, "state"), LogDir: testLogDir,
		StorageDir: testStorageDir, StorageDrivers: []string{testDriver},
		NodeDirs: []NodeDir{{Source: testNodeDir, Target: testNodeDirTarget}},
		Serving:  serving,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- testKube.Run(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: lab kubelet:", err)
		code = 1
	}
	if code != 0 {
		keepLogs(testLogDir)
	}
	return code
}

// keepLogs prints the containers' logs of a failed run.
func keepLogs(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(os.Stderr, "---- %s\n%s\n", e.Name(), data)
	}
}
