package lab_test

import (
	"context"
	"sync"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
	"github.com/drover-io/drover/internal/story"
)

// testWriter sends the story's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// TestAFailoverCompletesThoughTheTargetsAgentIsKilled loses east, SIGKILLs west's agent right
// after (before drover is asked to fail over), and expects the lab kubelet to restart it and the
// failover to west to complete with the story's checks.
func TestAFailoverCompletesThoughTheTargetsAgentIsKilled(t *testing.T) {
	labtest.LongTier(t, "internal/hub.TestTheHubAndTheAgentsCrashAtTheirWritesAndTheStoryStillHolds",
		"a SIGKILL of the installed agent, restarted by the lab kubelet (the crash slice kills the target's agent in-process at its failover's middle write)")
	g := newG(t)
	ctx := context.Background()
	west := cluster(g, lab.West)
	readyPod(ctx, g, lab.West)
	_, restarts := agentProcess(g, west)
	var once sync.Once
	var killErr error
	stop := func(name string) error {
		err := testLab.Stop(name)
		if name == lab.East {
			once.Do(func() {
				pid, _ := agentProcess(g, west)
				t.Logf("killing west's agent (pid %d) with SIGKILL during the failover", pid)
				killErr = syscall.Kill(pid, syscall.SIGKILL)
			})
		}
		return err
	}
	r := newStory(ctx, g, t, "install-story", stop)
	defer func() { g.Expect(r.Close()).To(Succeed()) }()
	runSteps(t, g,
		func() story.Step { return r.Protect(ctx) },
		func() story.Step { return r.Failover(ctx, lab.East) },
		func() story.Step { return r.Recover(ctx, lab.East) })
	g.Expect(killErr).NotTo(HaveOccurred())
	_, after := agentProcess(g, west)
	g.Expect(after).To(BeNumerically(">", restarts), "the lab kubelet restarted the killed agent")
}

// newStory starts, in namespace ns on east of the package's lab, the story of a StatefulSet that
// keeps its PVCs, replicated by VolRep in self-contained mode; stop stops a cluster (testLab.Stop
// when nil). The caller closes it.
func newStory(ctx context.Context, g Gomega, t *testing.T, ns string, stop func(string) error) *story.Run {
	return startCase(ctx, g, t, story.Case{
		Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass,
		Mode: story.SelfContained, Namespace: ns,
	}, stop)
}

// startCase starts the story of case c on east of the package's lab, its progress in the test's
// log; stop stops a cluster (testLab.Stop when nil). The caller closes it.
func startCase(ctx context.Context, g Gomega, t *testing.T, c story.Case, stop func(string) error) *story.Run {
	env, err := story.LabEnv(testLab.Lab, testWriter{t})
	g.Expect(err).NotTo(HaveOccurred())
	if stop != nil {
		env.StopCluster = stop
	}
	r := story.New(env, c, lab.East)
	g.Expect(r.Start(ctx)).To(Succeed())
	return r
}

// runSteps runs story steps in order, each of which must succeed.
func runSteps(t *testing.T, g Gomega, steps ...func() story.Step) {
	for _, step := range steps {
		s := step()
		g.Expect(s.Err).NotTo(HaveOccurred(), "%s %s→%s", s.Action, s.From, s.To)
		t.Logf("%s %s→%s in %s", s.Action, s.From, s.To, s.Duration)
	}
}
