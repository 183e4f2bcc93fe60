package volsynclab_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/hubless"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
)

// hubDownEnv is how long TestVolSyncGoesOnWithoutTheHub runs with no hub (a Go duration);
// make test-hubloss sets it to 10m. The group's interval is below a minute, so its sources sync
// continuously (dozens of syncs a minute in the lab), and west's point, which needs two
// completions and trails them by about two intervals, moves several times a minute: the default
// is one minute.
const hubDownEnv = "DROVER_HUB_DOWN"

// VolSync protection needs no hub once it has handed the destinations over: no hub runs in this
// package's lab, and after the hand-off (hubCopy) nothing writes into either group. East's group
// keeps syncing for the whole time, and west's group reports the point up to which it holds
// east's writes (status.receivedSyncTime), which is true of what west's destination holds: every
// writer's records reach past it. drover status and the plan of failover --without-hub, given
// west's kubeconfig alone, print it as the expected loss bound.
func TestVolSyncGoesOnWithoutTheHub(t *testing.T) {
	down := time.Minute
	if v := os.Getenv(hubDownEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q is not a duration: %v", hubDownEnv, v, err)
		}
		down = d
	}
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(3 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	ns := "volsync-hubdown"
	p := startVolSyncPair(t, g, ns, 1, nil)
	hubCopy(ctx, g, p.east, p.eastGroup, p.west, p.westGroup, 1)
	writers := runningWriters(ctx, g, p.east, ns, 1)

	var maxLag, maxHeld time.Duration
	eastSyncs, westPoints := map[time.Time]bool{}, map[time.Time]bool{}
	for end := time.Now().Add(down); time.Now().Before(end); time.Sleep(time.Second) {
		eastGroup, westGroup := group(ctx, g, p.east, p.eastGroup), group(ctx, g, p.west, p.westGroup)
		if s := eastGroup.Status.LastGroupSyncTime; s != nil {
			eastSyncs[s.Time] = true
			maxLag = max(maxLag, time.Since(s.Time))
		}
		if r := westGroup.Status.ReceivedSyncTime; r != nil {
			westPoints[r.Time] = true
			maxHeld = max(maxHeld, time.Since(r.Time))
		}
	}
	t.Logf("no hub for %s: east's group reported %d syncs, its lag at most %s; west's group %d received points, at most %s old",
		down, len(eastSyncs), maxLag.Round(time.Millisecond), len(westPoints), maxHeld.Round(time.Millisecond))
	interval, err := time.ParseDuration(string(p.eastGroup.Spec.SchedulingInterval))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(eastSyncs)).To(BeNumerically(">=", int(down/interval)), "east keeps syncing, at least once per interval (%s)", interval)
	g.Expect(westPoints).NotTo(BeEmpty(), "west's group reports the point it holds")

	// What west reports it holds, it holds: the latest image of its destination, which a
	// failover restores, read right after the point, has each writer's records from after it.
	// Only the reads are retried (VolSync deletes an image a newer one replaced), never the
	// comparison: a newer image would hide a point that claims too much.
	for pvc, writer := range writers {
		var held *metav1.Time
		var report records.Report
		g.Eventually(func(g Gomega) {
			held = group(ctx, g, p.west, p.westGroup).Status.ReceivedSyncTime
			g.Expect(held).NotTo(BeNil())
			rd := &volsyncv1alpha1.ReplicationDestination{}
			g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc}, rd)).To(Succeed())
			g.Expect(rd.Status).NotTo(BeNil())
			g.Expect(rd.Status.LatestImage).NotTo(BeNil())
			report, _ = snapshotRecords(ctx, g, p.west, ns, rd.Status.LatestImage.Name)
		}).Should(Succeed())
		w, ok := report.Writer(writer)
		g.Expect(ok).To(BeTrue())
		t.Logf("%s: west reports it holds the writes up to %s; its latest image's last record was written at %s",
			pvc, held.UTC().Format(time.RFC3339), w.LastWrite.UTC().Format(time.RFC3339Nano))
		g.Expect(w.LastWrite).To(BeTemporally(">=", held.Time), "%s: west's latest image holds the writes up to the point it reports", pvc)
	}

	westConfig := lab.West + "=" + kubeconfigOf(t, lab.West)
	status := &bytes.Buffer{}
	g.Expect(hubless.Status(ctx, status, hubless.StatusOptions{App: p.westGroup.Name, Namespace: ns, Clusters: []string{westConfig}})).To(Succeed())
	t.Logf("drover status %s --cluster-kubeconfig west=...:\n%s", p.westGroup.Name, status)
	g.Expect(status.String()).To(MatchRegexp(`a failover to west loses the writes after \d\d:\d\d:\d\d UTC, \S+ ago`))
	plan := &bytes.Buffer{}
	g.Expect(hubless.Failover(ctx, plan, hubless.FailoverOptions{App: p.westGroup.Name, Namespace: ns, To: lab.West, From: lab.East,
		Clusters: []string{westConfig}, Confirm: &cli.Confirmation{Yes: true}, DryRun: true})).To(Succeed(), plan.String())
	t.Logf("drover failover %s --to west --without-hub --dry-run:\n%s", p.westGroup.Name, plan)
	g.Expect(plan.String()).To(MatchRegexp(`Expected loss: the writes after \d\d:\d\d:\d\d UTC, \S+ ago`))
}

// group reads a group again.
func group(ctx context.Context, g Gomega, cl client.Client, vrg *v1alpha1.VolumeReplicationGroup) *v1alpha1.VolumeReplicationGroup {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(vrg), got)).To(Succeed())
	return got
}

// kubeconfigOf is the path of a lab cluster's administrator kubeconfig.
func kubeconfigOf(t *testing.T, name string) string {
	c, err := vrglab.Lab().Cluster(name)
	if err != nil {
		t.Fatal(err)
	}
	return c.KubeconfigPath()
}
