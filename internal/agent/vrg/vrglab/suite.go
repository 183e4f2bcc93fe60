package vrglab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// testLab is the one lab of the test package, started once by Run. An agent runs in-process
// on each managed cluster, east and west, for the whole package; a test that stops a cluster
// stops its agent first (StopAgent) and starts a new one once the cluster is back (StartAgent).
var testLab *labtest.Lab

// workersEnv sets the agents' workers (default agent.DefaultWorkers), to measure them.
const workersEnv = "DROVER_AGENT_WORKERS"

// agents holds the function that stops the running agent of each cluster; agentDefaults
// changes the options of every agent the package starts (RunWith).
var (
	agentsMu      sync.Mutex
	agents        = map[string]func(){}
	agentDefaults func(*agent.Options)
)

// Lab is the test package's lab, started by Run.
func Lab() *labtest.Lab { return testLab }

// Run is a test package's TestMain, to be called as os.Exit(vrglab.Run(m)): labtest.Main plus
// the agents, which must stop after the tests and before the lab is torn down, which
// labtest.Main has no place for. The agents log to a temporary file, kept and named when the
// tests fail.
func Run(m *testing.M) int { return RunWith(m, nil) }

// RunWith is Run with the options of every agent the package starts changed by defaults (nil
// for none): shorter periods, for a package whose tests would otherwise wait on them.
func RunWith(m *testing.M, defaults func(*agent.Options)) int {
	agentDefaults = defaults
	logFile, err := os.CreateTemp("", "drover-agent-test-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed to create the agent's log file:", err)
		return 1
	}
	defer func() { _ = logFile.Close() }()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile), zap.UseDevMode(true)))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	// The API servers keep audit logs: a test reads from them who created what, in which order.
	l, err := labtest.StartWith(ctx, labtest.Options{Audit: true})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed to start the lab:", err)
		return 1
	}
	testLab = l
	code := 1
	if err := StartAgent(lab.East); err != nil {
		fmt.Fprintln(os.Stderr, "failed to start the agent of east:", err)
	} else if err := StartAgent(lab.West); err != nil {
		fmt.Fprintln(os.Stderr, "failed to start the agent of west:", err)
	} else {
		code = m.Run()
	}
	// Every agent stops before the lab is torn down.
	StopAgent(lab.East)
	StopAgent(lab.West)
	if code != 0 || os.Getenv(labtest.KeepEnv) != "" {
		fmt.Fprintf(os.Stderr, "agent logs: %s\n", filepath.Clean(logFile.Name()))
	} else {
		_ = os.Remove(logFile.Name())
	}
	l.Teardown(code)
	return code
}

// StartAgent runs the agent of a lab cluster in-process, as `drover agent` would; StopAgent
// stops it.
func StartAgent(cluster string) error { return StartAgentWith(cluster, nil) }

// StartAgentWith is StartAgent with the agent's options changed by change (nil for none), as
// `drover agent` with more flags; StopAgent stops it as any other.
func StartAgentWith(cluster string, change func(*agent.Options)) error {
	agentsMu.Lock()
	defer agentsMu.Unlock()
	if agents[cluster] != nil {
		return fmt.Errorf("the agent of %s is already running", cluster)
	}
	c, err := testLab.Cluster(cluster)
	if err != nil {
		return err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	// Every API and S3 write of the agent is counted by namespace (Writes).
	cfg.Wrap(writes.countAPI(cluster))
	opts := agent.Options{ClusterName: cluster, InProcess: true, NewStore: writes.countS3(cluster)}
	if v := os.Getenv(workersEnv); v != "" {
		if opts.Workers, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("%s=%q: %w", workersEnv, v, err)
		}
	}
	for _, c := range []func(*agent.Options){agentDefaults, change} {
		if c != nil {
			c(&opts)
		}
	}
	mgr, err := agent.NewManager(cfg, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	agents[cluster] = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "the agent of %s stopped with an error: %v\n", cluster, err)
		}
	}
	return nil
}

// StopAgent stops the agent of a lab cluster, if it runs, and waits until it has stopped.
func StopAgent(cluster string) {
	agentsMu.Lock()
	stop := agents[cluster]
	delete(agents, cluster)
	agentsMu.Unlock()
	if stop != nil {
		stop()
	}
}

// ClusterClient returns a client of a lab cluster that knows the agent's types.
func ClusterClient(t *testing.T, name string) client.Client {
	t.Helper()
	cl, err := testLab.Client(name, v1alpha1.AddToScheme, replicationv1alpha1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
