package hub_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/hubless"
	"github.com/drover-io/drover/internal/lab"
)

// The hub and east are lost together: the application is failed over to west with west's
// kubeconfig alone (drover failover --without-hub), keeping the records of the last sync. When
// the hub returns, its DRPlacementControl still says the application runs on east; it must not
// act on that (its settled state would demote west, losing every write made there since): it
// holds, says why and what to do in ActionAccepted, and touches neither group. Asked for the
// failover to west, it adopts the promotion with no new write loss, and demotes east once east
// returns.
func TestAFailoverWithoutTheHubKeepsWestsDataAndTheReturningHubAdoptsIt(t *testing.T) {
	a := newApp(t, "hub-hubless")
	ctx := context.Background()
	east := a.clusters[lab.East]
	a.g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.ns}})).To(Succeed())
	for _, obj := range appObjects(a.g, a.ns) {
		a.g.Expect(east.Create(ctx, obj)).To(Succeed())
	}
	a.g.Expect(a.hub.Create(ctx, a.drpcFor(false))).To(Succeed())
	a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the application is protected on east")
	handles := a.volumes(lab.East)
	eastWriters := a.writing(lab.East, handles)

	// While east answers as primary, a failover without the hub given east's kubeconfig is
	// refused; a group that is not there is named as such. Nothing changes.
	westConfig := clusterKubeconfig(a.g, lab.West)
	refused := &bytes.Buffer{}
	err := hubless.Failover(ctx, refused, hubless.FailoverOptions{App: "db", Namespace: a.ns, To: lab.West,
		Clusters: []string{lab.West + "=" + westConfig, lab.East + "=" + clusterKubeconfig(a.g, lab.East)}, Confirm: &cli.Confirmation{Yes: true}})
	a.g.Expect(cli.ExitCodeOf(err)).To(Equal(cli.ExitRefused), "%v", err)
	a.g.Expect(err.Error()).To(ContainSubstring("east answers and its group hub-hubless/db is primary"))
	err = hubless.Failover(ctx, refused, hubless.FailoverOptions{App: "nope", Namespace: a.ns, To: lab.West,
		Clusters: []string{westConfig}, Confirm: &cli.Confirmation{Yes: true}})
	a.g.Expect(cli.ExitCodeOf(err)).To(Equal(cli.ExitRefused), "%v", err)
	a.g.Expect(err.Error()).To(ContainSubstring("west has no VolumeReplicationGroup hub-hubless/nope"))
	a.g.Expect(a.group(lab.West).Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))

	// The hub (drover hub and its cluster) and east are lost together.
	restartHub := stopTheHub(t, a.g)
	lost, _ := a.lose(lab.East, handles)

	status := &bytes.Buffer{}
	a.g.Expect(hubless.Status(ctx, status, hubless.StatusOptions{App: "db", Namespace: a.ns, Clusters: []string{lab.West + "=" + westConfig}})).To(Succeed())
	t.Logf("drover status db --cluster-kubeconfig west=...:\n%s", status)
	a.g.Expect(status.String()).To(MatchRegexp(`west\s+hub-hubless\s+db\s+secondary\s+Secondary`))

	opts := hubless.FailoverOptions{App: "db", Namespace: a.ns, To: lab.West, From: lab.East, Clusters: []string{westConfig},
		Confirm: &cli.Confirmation{Yes: true}, Timeout: 3 * time.Minute, DryRun: true}
	plan := &bytes.Buffer{}
	before := a.group(lab.West)
	a.g.Expect(hubless.Failover(ctx, plan, opts)).To(Succeed())
	t.Logf("drover failover db --to west --without-hub --dry-run:\n%s", plan)
	a.g.Expect(plan.String()).To(ContainSubstring("Expected loss:"))
	a.g.Expect(plan.String()).To(ContainSubstring("treated as lost"))
	a.g.Expect(a.group(lab.West).Generation).To(Equal(before.Generation), "--dry-run changes nothing")

	asked := time.Now()
	out := &bytes.Buffer{}
	opts.DryRun, opts.Log = false, out
	a.g.Expect(hubless.Failover(ctx, out, opts)).To(Succeed(), out.String())
	t.Logf("drover failover db --to west --without-hub --yes (%s):\n%s", time.Since(asked).Round(time.Millisecond), out)
	promoted := a.group(lab.West)
	again := &bytes.Buffer{}
	a.g.Expect(hubless.Failover(ctx, again, opts)).To(Succeed(), "run again, the command follows the promotion it made")
	a.g.Expect(again.String()).To(ContainSubstring("was promoted without the hub at"))
	a.g.Expect(a.group(lab.West).Generation).To(Equal(promoted.Generation))
	mark, err := v1alpha1.PromotedWithoutHubMark(promoted)
	a.g.Expect(err).NotTo(HaveOccurred())
	a.g.Expect(mark).NotTo(BeNil(), "west's group carries the mark of a promotion made without the hub")
	a.g.Expect(promoted.Spec.Action).To(Equal(v1alpha1.ActionFailover))
	a.expectFailoverKept(lab.West, handles, eastWriters, lost)
	westWriters := a.writing(lab.West, handles)

	// The hub returns with its DRPlacementControl saying Deployed on east.
	restartHub()
	a.g.Eventually(func(g Gomega) {
		vrg := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(a.clusters[lab.West].Get(ctx, a.key, vrg)).To(Succeed())
		g.Expect(vrg.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary), "the returning hub must not demote west's group")
		g.Expect(vrg.Generation).To(Equal(promoted.Generation), "the returning hub writes nothing into west's group")
		d := a.drpc(g)
		c := cond(d, v1alpha1.ConditionActionAccepted)
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPromotedWithoutHub), c.Message)
		g.Expect(c.Message).To(ContainSubstring("drover failover db -n hub-hubless --to west"))
		g.Expect(d.Status.CurrentPrimary).To(Equal(lab.East))
	}).Should(Succeed(), "the returning hub says that west was promoted without it, and what to do")
	t.Logf("the returning hub holds: %s", cond(a.drpc(a.g), v1alpha1.ConditionActionAccepted).Message)
	a.g.Consistently(func(g Gomega) {
		vrg := a.group(lab.West)
		g.Expect(vrg.Generation).To(Equal(promoted.Generation), "the hub writes nothing into west's group")
		g.Expect(vrg.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	a.g.Expect(a.writing(lab.West, handles)).To(Equal(westWriters), "the application runs on west undisturbed")

	// Asked for the failover to west, the hub adopts it; east returns and is demoted.
	a.ask(v1alpha1.ActionFailover, lab.West)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, false, "the hub adopts the failover made without it")
	a.g.Expect(a.writing(lab.West, handles)).To(Equal(westWriters), "the adoption does not restart the application on west")
	a.g.Eventually(func(g Gomega) {
		vrg := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(a.clusters[lab.West].Get(ctx, a.key, vrg)).To(Succeed())
		g.Expect(vrg.Annotations).NotTo(HaveKey(v1alpha1.AnnotationPromotedWithoutHub))
	}).Should(Succeed(), "settled on west, the hub removes the mark")
	a.restore(lab.East)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, true, "east's group is demoted with no human step")
	a.gone(lab.East)
	a.g.Expect(a.writing(lab.West, handles)).To(Equal(westWriters))
	a.expectEvents(v1alpha1.EventPromotionAdopted)
}

// group returns the application's group on a cluster.
func (a *app) group(cluster string) *v1alpha1.VolumeReplicationGroup {
	vrg := &v1alpha1.VolumeReplicationGroup{}
	a.g.Expect(a.clusters[cluster].Get(context.Background(), a.key, vrg)).To(Succeed())
	return vrg
}

// clusterKubeconfig is the path of a managed cluster's administrator kubeconfig, as a person
// holding only that cluster's would pass it.
func clusterKubeconfig(g Gomega, name string) string {
	c, err := testLab.Cluster(name)
	g.Expect(err).NotTo(HaveOccurred())
	path := c.KubeconfigPath()
	g.Expect(strings.HasSuffix(path, "kubeconfig")).To(BeTrue())
	return path
}

// stopTheHub stops drover's hub process and the hub's cluster, as a site's loss does. The
// returned function starts both again; when the test ends without calling it, the cleanup does,
// so that the package's next tests have a hub.
func stopTheHub(t *testing.T, g Gomega) (restart func()) {
	t.Helper()
	down := true
	t.Cleanup(func() {
		if !down {
			return
		}
		if err := testLab.Start(context.Background(), lab.Hub); err != nil {
			t.Errorf("failed to start the hub cluster again: %v", err)
		}
		if err := startHub(); err != nil {
			t.Errorf("failed to start the hub again: %v", err)
		}
	})
	stop("hub")
	g.Expect(testLab.Stop(lab.Hub)).To(Succeed())
	return func() {
		g.Expect(testLab.Start(context.Background(), lab.Hub)).To(Succeed())
		g.Expect(startHub()).To(Succeed())
		down = false
	}
}
