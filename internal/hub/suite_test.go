package hub_test

import (
	"context"
	"errors"
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
	"github.com/drover-io/drover/internal/agent/vrg"
	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/hub"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crash"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication/volrep"
	"github.com/drover-io/drover/internal/version"
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
	running = map[string]*instance{}
	// retired counts the writes of the stopped instances of each component.
	retired = map[string]int{}
	// pending is the crash point armed for the current action, if any.
	pending *pendingCrash
)

// pendingCrash is a crash point armed for one component across its instances: a component
// stopped and started again during the action (an agent whose cluster the story stops, then
// starts) carries the point to its next instance, which counts on from the writes of the one
// before, so a point beyond the writes made before the stop is reached after the return.
type pendingCrash struct {
	name  string
	point crash.Point
	// base is the component's writes when armed; armed the injectors armed since.
	base  int
	armed []*crash.Injector
}

// armLocked arms inj with what is left of the point, unless it fired or is already behind; mu
// is held.
func (p *pendingCrash) armLocked(inj *crash.Injector) {
	left := p.point.Write - (writesLocked(p.name) - p.base)
	for _, a := range p.armed {
		if a.Killed() != "" {
			return
		}
	}
	if left >= 1 {
		inj.Arm(crash.Point{Write: left, When: p.point.When})
		p.armed = append(p.armed, inj)
	}
}

// armCrash arms point for the component's running instance and every instance started after it,
// until disarmCrash.
func armCrash(name string, point crash.Point) {
	mu.Lock()
	defer mu.Unlock()
	pending = &pendingCrash{name: name, point: point, base: writesLocked(name)}
	if inst := running[name]; inst != nil {
		pending.armLocked(inst.inj)
	}
}

// disarmCrash removes the armed point and returns what the instance was killed at; empty when
// the point was not reached.
func disarmCrash() string {
	mu.Lock()
	defer mu.Unlock()
	p := pending
	pending = nil
	killed := ""
	for _, inj := range p.armed {
		if inj.Disarm() {
			killed = inj.Killed()
		}
	}
	return killed
}

// instance is one running hub or agent: how to stop it, and the injector its writes go through
// (internal/lab/crash: it counts them and, when armed, kills the instance at one).
type instance struct {
	stop func()
	inj  *crash.Injector
}

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
	// The lab kubelet runs the crash sweep's application pods as processes (crash_test.go).
	l, err := labtest.StartWith(ctx, labtest.Options{AppKubelet: true})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed to start the lab:", err)
		return 1
	}
	testLab = l
	// The hub and the agents record the version they run as in their status: a value of the
	// suite's own, set before they start, tells it from a default.
	version.Version = suiteVersion
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
			Name: p.Name, Endpoint: p.Endpoint, Insecure: p.Insecure, Bucket: p.Bucket, Region: p.Region,
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

// hubOptions are the options the suite's hub runs with.
func hubOptions() hub.Options {
	return hub.Options{ProbeInterval: time.Second, UnreachableAfter: 3 * time.Second, InProcess: true}
}

// startHub runs the hub in-process, as `drover hub` would; stop("hub") stops it, as a killed
// hub process stops: whatever it was doing is left where it was.
func startHub() error { return startHubWith(hubOptions()) }

// startHubWith runs the hub with opts (its transport wrapped by the crash injector).
func startHubWith(opts hub.Options) error {
	c, err := testLab.Cluster(lab.Hub)
	if err != nil {
		return err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	inj := crash.New("hub")
	cfg.Wrap(inj.Wrap)
	opts.ClusterTransport = inj.Wrap
	mgr, err := hub.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	return launch("hub", inj, mgr.Start, func() error { return startHubWith(opts) })
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
	inj := crash.New(cluster)
	cfg.Wrap(inj.Wrap)
	newStore := func(p objectstore.Profile) (objectstore.Store, error) {
		s, err := vrg.NewS3Store(p)
		if err != nil {
			return nil, err
		}
		return inj.Store(s), nil
	}
	mgr, err := agent.NewManager(cfg, agent.Options{ClusterName: cluster, InProcess: true, NewStore: newStore})
	if err != nil {
		return err
	}
	return launch(cluster, inj, mgr.Start, func() error { return startAgent(cluster) })
}

// launch runs start in a goroutine until stop(name). An instance killed by its injector is
// replaced at once by restart, as the lab kubelet restarts a killed container.
func launch(name string, inj *crash.Injector, start func(context.Context) error, restart func() error) error {
	mu.Lock()
	defer mu.Unlock()
	if running[name] != nil {
		return fmt.Errorf("%s is already running", name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	inst := &instance{inj: inj, stop: func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, crash.ErrCrashed) {
			fmt.Fprintf(os.Stderr, "%s stopped with an error: %v\n", name, err)
		}
	}}
	running[name] = inst
	if pending != nil && pending.name == name {
		pending.armLocked(inj)
	}
	go func() {
		select {
		case <-inj.Crashed():
		case <-ctx.Done():
			return
		}
		if !retire(name, inst) {
			return
		}
		inst.stop()
		if restart == nil {
			return
		}
		if err := restart(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: failed to start again after its crash: %v\n", name, err)
		}
	}()
	return nil
}

// retire removes a running instance, counting its writes; false when it no longer runs.
func retire(name string, inst *instance) bool {
	mu.Lock()
	defer mu.Unlock()
	if running[name] != inst {
		return false
	}
	delete(running, name)
	retired[name] += inst.inj.Writes()
	return true
}

// stop stops the hub or an agent, if it runs, and waits until it has stopped.
func stop(name string) {
	mu.Lock()
	inst := running[name]
	mu.Unlock()
	if inst != nil && retire(name, inst) {
		inst.stop()
	}
}

// writes is how many writes every instance of the component has made so far.
func writes(name string) int {
	mu.Lock()
	defer mu.Unlock()
	return writesLocked(name)
}

// writesLocked is writes with mu held.
func writesLocked(name string) int {
	n := retired[name]
	if inst := running[name]; inst != nil {
		n += inst.inj.Writes()
	}
	return n
}
