package hub_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/hubrestore"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crash"
)

// drover hub restore killed right before or after one of its writes (on the hub or on a
// managed cluster), then run again, leaves the hub with the same objects as a restore that was
// never interrupted; the hub then goes on where the groups are. make test kills it at five of its
// writes; with DROVER_CRASH_SWEEP=full (make crash-sweep) at every one, before and after.
func TestAHubRestoreKilledAtAWriteAndRunAgainConverges(t *testing.T) {
	a := protectedOnEast(t, "hub-restore-crash")
	a.g.Eventually(func(g Gomega) {
		for _, c := range []string{lab.East, lab.West} {
			r, err := hubrecord.Of(a.group(c))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r).NotTo(BeNil())
		}
	}).Should(Succeed(), "both groups carry the hub's record")
	ensureTheHubRuns(t)
	stop("hub")

	wipeTheHub(a.g)
	counter := crash.New("restore")
	o := restoreOptions(a.g, lab.East, lab.West)
	o.Wrap = counter.Wrap
	out := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), out, o)).To(Succeed(), out.String())
	want := hubSnapshot(a.g)
	n := counter.Writes()
	t.Logf("an uninterrupted restore makes %d writes: %v", n, counter.Since(0))
	a.g.Expect(n).To(BeNumerically(">", 10))

	points := restorePoints(n)
	if os.Getenv("DROVER_CRASH_SWEEP") == "full" {
		points = everyPoint(n)
	}
	for _, p := range points {
		wipeTheHub(a.g)
		inj := crash.New("restore")
		inj.Arm(p)
		killed := restoreOptions(a.g, lab.East, lab.West)
		killed.Wrap = inj.Wrap
		err := hubrestore.Restore(context.Background(), &bytes.Buffer{}, killed)
		a.g.Expect(err).To(HaveOccurred(), "the restore is killed %s", p)
		a.g.Expect(inj.Killed()).NotTo(BeEmpty())
		again := &bytes.Buffer{}
		a.g.Expect(hubrestore.Restore(context.Background(), again, restoreOptions(a.g, lab.East, lab.West))).To(Succeed(), again.String())
		a.g.Expect(hubSnapshot(a.g)).To(Equal(want), "killed %s (%s) and run again, the restore converges", p, inj.Killed())
		t.Logf("killed %s (%s), run again: the same objects", p, inj.Killed())
	}
	t.Logf("restore crash points: %d of %d writes' %d points, each converged", len(points), n, 2*n)
	a.g.Expect(startHub()).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the hub goes on where the groups are")
}

// restorePoints are five crash points spread over a restore's n writes: the first, the last
// and three between, before and after the write in turn.
func restorePoints(n int) []crash.Point {
	var out []crash.Point
	for k, at := range []int{1, n / 4, n / 2, 3 * n / 4, n} {
		when := crash.Before
		if k%2 == 1 {
			when = crash.After
		}
		out = append(out, crash.Point{Write: max(1, at), When: when})
	}
	return out
}

// everyPoint is each of n writes, before and after.
func everyPoint(n int) []crash.Point {
	var out []crash.Point
	for w := 1; w <= n; w++ {
		out = append(out, crash.Point{Write: w, When: crash.Before}, crash.Point{Write: w, When: crash.After})
	}
	return out
}

// snapshot is what a restore makes on the hub: the specs of its DRClusters, DRPolicies and
// DRPlacementControls, and the names of the Secrets join made there.
type snapshot struct {
	clusters map[string]v1alpha1.DRClusterSpec
	policies map[string]v1alpha1.DRPolicySpec
	drpcs    map[string]v1alpha1.DRPlacementControlSpec
	secrets  []string
}

func hubSnapshot(g Gomega) snapshot {
	ctx := context.Background()
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	s := snapshot{clusters: map[string]v1alpha1.DRClusterSpec{}, policies: map[string]v1alpha1.DRPolicySpec{}, drpcs: map[string]v1alpha1.DRPlacementControlSpec{}}
	clusters, policies, drpcs, secrets := &v1alpha1.DRClusterList{}, &v1alpha1.DRPolicyList{}, &v1alpha1.DRPlacementControlList{}, &corev1.SecretList{}
	g.Expect(h.List(ctx, clusters)).To(Succeed())
	g.Expect(h.List(ctx, policies)).To(Succeed())
	g.Expect(h.List(ctx, drpcs)).To(Succeed())
	g.Expect(h.List(ctx, secrets, client.InNamespace(join.DefaultNamespace), client.HasLabels{join.LabelCluster})).To(Succeed())
	for _, c := range clusters.Items {
		s.clusters[c.Name] = c.Spec
	}
	for _, p := range policies.Items {
		s.policies[p.Name] = p.Spec
	}
	for _, d := range drpcs.Items {
		s.drpcs[d.Namespace+"/"+d.Name] = d.Spec
	}
	for _, sec := range secrets.Items {
		s.secrets = append(s.secrets, sec.Name)
	}
	slices.Sort(s.secrets)
	return s
}
