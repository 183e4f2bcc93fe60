package hub_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// is restored: with east not answering, east's DRCluster is made from the records, declared
// lost, and the DRPlacementControl reads FailedOver on west at once (not Protected: its peer
// is lost); once east returns, the restore run again joins it and lifts its declaration, and
// east is demoted: PeerReady and Protected.
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

	// A new hub: the hub's cluster comes back empty of drover's objects, east still lost. The
	// restore declares east lost from the records (decision 0018), and the hub finishes the
	// failover made without it: FailedOver on west, with no group rewritten.
	restartHub()
	stop("hub")
	wipeTheHub(a.g)
	declared := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), declared, restoreOptions(a.g, lab.East, lab.West))).To(Succeed(), declared.String())
	t.Logf("drover hub restore, east lost:\n%s", declared)
	a.g.Expect(declared.String()).To(ContainSubstring("DRCluster east: does not answer"))
	a.g.Expect(declared.String()).To(ContainSubstring("the hub: DRCluster east created, declared lost: it did not answer"))
	a.g.Expect(declared.String()).To(ContainSubstring("promoted without the hub on west"))
	a.g.Expect(declared.String()).NotTo(ContainSubstring("skipped"))
	a.g.Expect(startHub()).To(Succeed())
	d = a.settledOn(v1alpha1.PhaseFailedOver, lab.West, false, "restored with east declared lost, the failover made without the hub reads FailedOver on west")
	a.expectDeclaredLostByTheRestore(d)
	a.g.Expect(a.group(lab.West).Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	a.g.Expect(a.group(lab.West).Generation).To(Equal(promoted.Generation), "the hub finishes the failover made without it and rewrites nothing in west's group")

	// Run again while east is still silent, the restore changes nothing.
	eastBefore := a.drcluster(lab.East)
	still := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), still, restoreOptions(a.g, lab.East, lab.West))).To(Succeed(), still.String())
	t.Logf("drover hub restore, east still lost:\n%s", still)
	a.g.Expect(still.String()).To(ContainSubstring("the hub: DRCluster east exists, kept"))
	a.g.Expect(still.String()).NotTo(ContainSubstring(" created"), "the second restore creates nothing")
	a.g.Expect(a.drcluster(lab.East).Generation).To(Equal(eastBefore.Generation))

	// East returns: the restore run again joins it and lifts its own declaration; the hub
	// demotes east's stale primary and removes its writers.
	a.restore(lab.East)
	final := &bytes.Buffer{}
	a.g.Expect(hubrestore.Restore(context.Background(), final, restoreOptions(a.g, lab.East, lab.West))).To(Succeed(), final.String())
	t.Logf("drover hub restore, east back:\n%s", final)
	a.g.Expect(final.String()).To(ContainSubstring("the hub: DRCluster east answers and is joined: the restore's declaration that it is lost is lifted"))
	a.g.Expect(final.String()).To(ContainSubstring("every token of the old hub is revoked"))
	back := a.drcluster(lab.East)
	a.g.Expect(back.Spec.Lost).To(BeNil())
	a.g.Expect(back.Annotations).NotTo(HaveKey(v1alpha1.AnnotationLostDeclaredByRestore))
	a.settledOn(v1alpha1.PhaseFailedOver, lab.West, true, "east is back: demoted, the DRPlacementControl reads FailedOver on west, PeerReady and Protected")
	a.g.Expect(a.group(lab.East).Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	a.gone(lab.East)
	a.g.Expect(a.writing(lab.West, handles)).To(Equal(westWriters), "the application runs on west undisturbed")
}

// drcluster is the hub's DRCluster of a cluster.
func (a *app) drcluster(name string) *v1alpha1.DRCluster {
	drc := &v1alpha1.DRCluster{}
	a.g.Expect(a.hub.Get(context.Background(), client.ObjectKey{Name: name}, drc)).To(Succeed())
	return drc
}

// expectDeclaredLostByTheRestore checks east's DRCluster as the restore declared it (lost, its
// mark, no kubeconfig), the conditions that say so, and d's, settled on west with east lost.
func (a *app) expectDeclaredLostByTheRestore(d *v1alpha1.DRPlacementControl) {
	a.g.Eventually(func(g Gomega) {
		drc := &v1alpha1.DRCluster{}
		g.Expect(a.hub.Get(context.Background(), client.ObjectKey{Name: lab.East}, drc)).To(Succeed())
		g.Expect(drc.Spec.Lost).NotTo(BeNil())
		g.Expect(drc.Spec.Lost.Reason).To(ContainSubstring("run drover hub restore again"))
		g.Expect(drc.Annotations).To(HaveKey(v1alpha1.AnnotationLostDeclaredByRestore))
		f := apimeta.FindStatusCondition(drc.Status.Conditions, v1alpha1.ConditionFenced)
		g.Expect(f).NotTo(BeNil())
		g.Expect(f.Status).To(Equal(metav1.ConditionTrue), f.Message)
		g.Expect(f.Reason).To(Equal(v1alpha1.ReasonDeclaredLost), f.Message)
		v := apimeta.FindStatusCondition(drc.Status.Conditions, v1alpha1.ConditionValidated)
		g.Expect(v).NotTo(BeNil())
		g.Expect(v.Reason).To(Equal(v1alpha1.ReasonNoKubeconfig), v.Message)
		g.Expect(v.Message).To(ContainSubstring("expected while the cluster is declared lost and not joined to this hub"))
		pol := &v1alpha1.DRPolicy{}
		g.Expect(a.hub.Get(context.Background(), client.ObjectKey{Name: policyVolRep}, pol)).To(Succeed())
		pv := apimeta.FindStatusCondition(pol.Status.Conditions, v1alpha1.ConditionValidated)
		g.Expect(pv).NotTo(BeNil())
		g.Expect(pv.Status).To(Equal(metav1.ConditionTrue), pv.Message)
		g.Expect(pv.Message).To(ContainSubstring("DRCluster east is declared lost"))
	}).Should(Succeed(), "east is declared lost by the restore, and its DRPolicy Validated without it")
	p, pr := cond(d, v1alpha1.ConditionProtected), cond(d, v1alpha1.ConditionPeerReady)
	a.g.Expect(p.Status).To(Equal(metav1.ConditionFalse), p.Message)
	a.g.Expect(p.Reason).To(Equal(v1alpha1.ReasonClusterDeclaredLost), p.Message)
	a.g.Expect(pr.Status).To(Equal(metav1.ConditionFalse), pr.Message)
	a.g.Expect(pr.Message).To(ContainSubstring("peer east is declared lost"))
	a.g.Expect(d.Spec.Action).To(Equal(v1alpha1.ActionFailover))
	a.g.Expect(d.Spec.FailoverCluster).To(Equal(lab.West))
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
