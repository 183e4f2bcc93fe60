package hub_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/hubless"
	"github.com/drover-io/drover/internal/cli/hubrestore"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
)

// The hub's etcd is lost: a hub with none of drover's objects is rebuilt from the managed
// clusters (drover hub restore), and its DRPlacementControl goes on where the groups are,
// rewriting no group; a second restore changes nothing. Then the hub and east are lost
// together, the application is failed over to west without the hub, and a hub emptied again
// is restored: with east not answering, east is skipped and nothing is guessed; once east
// returns, the restore run again joins it, and the DRPlacementControl reads FailedOver on west
// with east demoted.
func TestAHubRestoredFromTheGroupsResumesWhereTheyAre(t *testing.T) {
	a := protectedOnEast(t, "hub-restore")
	handles := a.volumes(lab.East)
	a.writing(lab.East, handles)
	a.g.Eventually(func(g Gomega) {
		for _, c := range []string{lab.East, lab.West} {
			r, err := hubrecord.Of(a.group(c))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r).NotTo(BeNil(), "%s's group carries the hub's record", c)
		}
	}).Should(Succeed())
	east, west := a.group(lab.East), a.group(lab.West)

	ensureTheHubRuns(t)
	stop("hub")
	wipeTheHub(a.g)
	dry := restoreOptions(a.g, lab.East, lab.West)
	dry.DryRun = true
	plan := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), plan, dry)).To(Succeed(), plan.String())
	t.Logf("drover hub restore --dry-run:\n%s", plan)
	a.g.Expect(plan.String()).To(ContainSubstring("DRPlacementControl hub-restore/db (DRPolicy " + policyVolRep + "): Deployed on east"))
	a.g.Expect(plan.String()).To(ContainSubstring("DRCluster west: at " + dry.Servers[lab.West]))
	a.expectCount(&v1alpha1.DRClusterList{}, 0)
	out := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), out, restoreOptions(a.g, lab.East, lab.West))).To(Succeed(), out.String())
	t.Logf("drover hub restore:\n%s", out)
	a.g.Expect(startHub()).To(Succeed())
	d := a.settledOn(v1alpha1.PhaseDeployed, lab.East, true, "the restored DRPlacementControl goes on where its groups are")
	a.g.Expect(d.Annotations).To(HaveKey(hubrecord.AnnotationRestored))
	a.g.Expect(a.group(lab.East).Generation).To(Equal(east.Generation), "no group is rewritten")
	a.g.Expect(a.group(lab.West).Generation).To(Equal(west.Generation), "no group is rewritten")

	again := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), again, restoreOptions(a.g, lab.East, lab.West))).To(Succeed(), again.String())
	t.Logf("drover hub restore, again:\n%s", again)
	a.g.Expect(again.String()).To(ContainSubstring("DRPlacementControl hub-restore/db exists, kept"))
	a.g.Expect(again.String()).To(ContainSubstring("DRPolicy " + policyVolRep + " exists, kept"))
	a.g.Expect(again.String()).NotTo(ContainSubstring(" created\n"), "the second restore creates nothing")
	a.g.Expect(again.String()).NotTo(ContainSubstring("revoked"), "the second restore keeps the new hub's tokens")
	a.g.Expect(a.drpc(a.g).Generation).To(Equal(d.Generation))
	a.expectCount(&v1alpha1.DRClusterList{}, 2)
	a.expectCount(&v1alpha1.DRPolicyList{}, 1)

	// The hub and east are lost together; the application fails over to west without the hub.
	restartHub := stopTheHub(t, a.g)
	a.lose(lab.East, handles)
	failover := &bytes.Buffer{}
	a.g.Expect(hubless.Failover(context.Background(), failover, hubless.FailoverOptions{App: "db", Namespace: a.ns, To: lab.West, From: lab.East,
		Clusters: []string{lab.West + "=" + clusterKubeconfig(a.g, lab.West)}, Confirm: &cli.Confirmation{Yes: true}, Timeout: 3 * time.Minute, Log: failover})).To(Succeed(), failover.String())
	westWriters := a.writing(lab.West, handles)
	promoted := a.group(lab.West)

	// A new hub: the hub's cluster comes back empty of drover's objects, east still lost.
	restartHub()
	stop("hub")
	wipeTheHub(a.g)
	skipped := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), skipped, restoreOptions(a.g, lab.East, lab.West))).To(Succeed(), skipped.String())
	t.Logf("drover hub restore, east lost:\n%s", skipped)
	a.g.Expect(skipped.String()).To(ContainSubstring("skipped (does not answer, not guessed): east"))
	a.g.Expect(skipped.String()).To(ContainSubstring("promoted without the hub on west"))
	a.g.Expect(startHub()).To(Succeed())
	a.g.Consistently(func(g Gomega) {
		g.Expect(a.group(lab.West).Generation).To(Equal(promoted.Generation), "nothing is written into west's group while east is not known")
	}).WithTimeout(10 * time.Second).Should(Succeed())
	a.restore(lab.East)
	final := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), final, restoreOptions(a.g, lab.East, lab.West))).To(Succeed(), final.String())
	t.Logf("drover hub restore, east back:\n%s", final)
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, true, "restored, the failover made without the hub reads FailedOver on west and east is demoted")
	a.gone(lab.East)
	a.g.Expect(a.writing(lab.West, handles)).To(Equal(westWriters), "the application runs on west undisturbed")
}

// restoreOptions are drover hub restore's with the lab's hub and the administrator kubeconfigs
// of the clusters named, the hub reaching each through its proxy as join made it.
func restoreOptions(g Gomega, clusters ...string) hubrestore.Options {
	hub, err := testLab.Cluster(lab.Hub)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := hub.RESTConfig()
	g.Expect(err).NotTo(HaveOccurred())
	o := hubrestore.Options{Hub: join.Cluster{Config: cfg, Source: "lab kubeconfig " + hub.KubeconfigPath()}, Servers: map[string]string{},
		Confirm: &cli.Confirmation{Yes: true}}
	for _, name := range clusters {
		c, err := testLab.Cluster(name)
		g.Expect(err).NotTo(HaveOccurred())
		o.Clusters = append(o.Clusters, name+"="+clusterKubeconfig(g, name))
		o.Servers[name] = c.ProxiedEndpoint()
	}
	return o
}

// ensureTheHubRuns starts the hub when the test ends without it, so the package's next tests
// have one.
func ensureTheHubRuns(t *testing.T) {
	t.Cleanup(func() {
		mu.Lock()
		up := running["hub"] != nil
		mu.Unlock()
		if !up {
			if err := startHub(); err != nil {
				t.Errorf("failed to start the hub again: %v", err)
			}
		}
	})
}

// wipeTheHub deletes drover's objects from the hub's cluster, as a hub rebuilt empty has none:
// the DRPlacementControls, DRPolicies, DRClusters (their finalizers dropped: no hub runs) and
// the Secrets join made there.
func wipeTheHub(g Gomega) {
	ctx := context.Background()
	h, err := hubClient()
	g.Expect(err).NotTo(HaveOccurred())
	for _, list := range []client.ObjectList{&v1alpha1.DRPlacementControlList{}, &v1alpha1.DRPolicyList{}, &v1alpha1.DRClusterList{}} {
		g.Expect(h.List(ctx, list)).To(Succeed())
		items, err := metaItems(list)
		g.Expect(err).NotTo(HaveOccurred())
		for _, obj := range items {
			if len(obj.GetFinalizers()) > 0 {
				before := obj.DeepCopyObject().(client.Object)
				obj.SetFinalizers(nil)
				g.Expect(client.IgnoreNotFound(h.Patch(ctx, obj, client.MergeFrom(before)))).To(Succeed())
			}
			g.Expect(client.IgnoreNotFound(h.Delete(ctx, obj))).To(Succeed())
		}
	}
	g.Expect(h.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(join.DefaultNamespace), client.HasLabels{join.LabelCluster})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, list := range []client.ObjectList{&v1alpha1.DRPlacementControlList{}, &v1alpha1.DRPolicyList{}, &v1alpha1.DRClusterList{}} {
			g.Expect(h.List(ctx, list)).To(Succeed())
			items, err := metaItems(list)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(items).To(BeEmpty())
		}
	}).Should(Succeed(), "the hub holds none of drover's objects")
}

// metaItems are a list's items as objects.
func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *v1alpha1.DRPlacementControlList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *v1alpha1.DRPolicyList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *v1alpha1.DRClusterList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}

// expectCount checks that the hub holds n objects of list's kind.
func (a *app) expectCount(list client.ObjectList, n int) {
	a.g.Expect(a.hub.List(context.Background(), list)).To(Succeed())
	items, err := metaItems(list)
	a.g.Expect(err).NotTo(HaveOccurred())
	a.g.Expect(items).To(HaveLen(n))
}
