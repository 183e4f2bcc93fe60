package vrg_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// testLab is the one lab of this package, started once in TestMain. The agent of east runs
// in-process against it for the whole package; west has no agent yet (the protect path is
// all that is built).
var testLab *labtest.Lab

// TestMain is labtest.Main plus the agent: the agent must stop after the tests and before the
// lab is torn down, which labtest.Main has no place for.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	logFile, err := os.CreateTemp("", "drover-agent-test-*.log")
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed to create the agent's log file:", err)
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
	stopAgent, err := startAgent(lab.East)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "failed to start the agent:", err)
	} else {
		code = m.Run()
		stopAgent()
	}
	if code != 0 || os.Getenv(labtest.KeepEnv) != "" {
		fmt.Fprintf(os.Stderr, "agent logs: %s\n", filepath.Clean(logFile.Name()))
	} else {
		_ = os.Remove(logFile.Name())
	}
	l.Teardown(code)
	return code
}

// startAgent runs the agent of a lab cluster in-process, as `drover agent` would, and returns
// the function that stops it and waits until it has stopped.
func startAgent(cluster string) (func(), error) {
	c, err := testLab.Cluster(cluster)
	if err != nil {
		return nil, err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	mgr, err := agent.NewManager(cfg, agent.Options{ClusterName: cluster})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "the agent stopped with an error:", err)
		}
	}, nil
}

// clusterClient returns a client of a lab cluster that knows the agent's types.
func clusterClient(t *testing.T, name string) client.Client {
	t.Helper()
	cl, err := testLab.Client(name, v1alpha1.AddToScheme, replicationv1alpha1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
