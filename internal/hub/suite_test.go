package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/hub"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/replication/volrep"
)

// The hub's suite runs one lab with the hub and both agents in-process, as `drover hub` and
// `drover agent` run them, and drives applications only through DRPlacementControls.

const (
	// policyVolRep is the lab's DRPolicy replicating the block class with VolRep every interval.
	policyVolRep = "lab-volrep"
	interval     = 3 * time.Second
)

var (
	testLab *labtest.Lab

	mu      sync.Mutex
	running = map[string]func(){}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	logFile, err := os.CreateTemp("", "drover-hub-test-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed to create the log file:", err)
		return 1
	}
	defer func() { _ = logFile.Close() }()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	l, err := labtest.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed to start the lab:", err)
		return 1
	}
	testLab = l
	code := 1
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "failed to set the lab up for the hub:", err)
	} else {
		code = m.Run()
	}
	for _, name := range []string{"hub", lab.East, lab.West} {
		stop(name)
	}
	if code != 0 || os.Getenv(labtest.KeepEnv) != "" {
		fmt.Fprintf(os.Stderr, "hub and agent logs: %s\n", filepath.Clean(logFile.Name()))
	} else {
		_ = os.Remove(logFile.Name())
	}
	l.Teardown(code)
	return code
}

// setup creates what an administrator creates once: joins east and west (the DRClusters with
// their kubeconfig Secrets), the DRPolicy, the VolumeReplicationClass of the interval; then starts the agents
// and the hub.
func setup() error {
	ctx := context.Background()
	hubClient, err := hubClient()
	if err != nil {
		return err
	}
	if err := hubClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: lab.S3SecretNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	profiles, err := testLab.S3Profiles()
	if err != nil {
		return err
	}
	policy := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: policyVolRep}, Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{lab.East, lab.West}, SchedulingInterval: v1alpha1.SchedulingInterval(interval.String()),
		StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: lab.BlockDriver, Backend: v1alpha1.BackendVolRep}},
	}}
	for _, p := range profiles {
		policy.Spec.S3Profiles = append(policy.Spec.S3Profiles, v1alpha1.S3Profile{
			Name: p.Name, Endpoint: p.Endpoint, Bucket: p.Bucket, Region: p.Region,
			SecretRef: v1alpha1.SecretRef{Namespace: lab.S3SecretNamespace, Name: p.Name},
		})
	}
	for _, name := range []string{lab.East, lab.West} {
		// The hub's credential is the one `drover cluster join` creates: a ServiceAccount bound
		// to the role written down in config/rbac/hub-on-managed-cluster. The tests prove it is
		// enough.
		if err := testLab.Join(ctx, name); err != nil {
			return err
		}
		managed, err := testLab.Client(name, replicationv1alpha1.AddToScheme)
		if err != nil {
			return err
		}
		class := &replicationv1alpha1.VolumeReplicationClass{
			ObjectMeta: metav1.ObjectMeta{Name: "lab-block-" + interval.String()},
			Spec: replicationv1alpha1.VolumeReplicationClassSpec{
				Provisioner: lab.BlockDriver,
				Parameters:  map[string]string{volrep.SchedulingIntervalParameter: interval.String()},
			},
		}
		if err := managed.Create(ctx, class); err != nil {
			return err
		}
		if err := startAgent(name); err != nil {
			return err
		}
	}
	if err := hubClient.Create(ctx, policy); err != nil {
		return err
	}
	return startHub()
}

// hubClient returns a client of the lab's hub with drover's and OCM's types.
func hubClient() (client.Client, error) {
	return testLab.Client(lab.Hub, v1alpha1.AddToScheme, ocmv1beta1.AddToScheme, clientgoscheme.AddToScheme)
}

// startHub runs the hub in-process, as `drover hub` would; stop("hub") stops it, as a killed
// hub process stops: whatever it was doing is left where it was.
func startHub() error {
	c, err := testLab.Cluster(lab.Hub)
	if err != nil {
		return err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	mgr, err := hub.NewManager(cfg, hub.Options{ProbeInterval: time.Second, UnreachableAfter: 3 * time.Second, InProcess: true})
	if err != nil {
		return err
	}
	return launch("hub", mgr.Start)
}

// startAgent runs the agent of a managed cluster in-process.
func startAgent(cluster string) error {
	c, err := testLab.Cluster(cluster)
	if err != nil {
		return err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	mgr, err := agent.NewManager(cfg, agent.Options{ClusterName: cluster, InProcess: true})
	if err != nil {
		return err
	}
	return launch(cluster, mgr.Start)
}

// launch runs start in a goroutine until stop(name).
func launch(name string, start func(context.Context) error) error {
	mu.Lock()
	defer mu.Unlock()
	if running[name] != nil {
		return fmt.Errorf("%s is already running", name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	running[name] = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "%s stopped with an error: %v\n", name, err)
		}
	}
	return nil
}

// stop stops the hub or an agent, if it runs, and waits until it has stopped.
func stop(name string) {
	mu.Lock()
	s := running[name]
	delete(running, name)
	mu.Unlock()
	if s != nil {
		s()
	}
}
