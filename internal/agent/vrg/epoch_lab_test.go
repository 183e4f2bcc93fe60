package vrg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// storedGroup returns what a store holds for a group, by key: the primary marker and the PV/PVC
// metadata as stored, the capture as its objects (its capture time changes at every capture
// of the same objects).
func storedGroup(ctx context.Context, g Gomega, store objectstore.Store, group *v1alpha1.VolumeReplicationGroup) map[string]string {
	prefix := vrg.StorePrefix(group)
	keys, err := store.List(ctx, prefix)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, key := range keys {
		body, err := store.Get(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		if strings.HasSuffix(key, "/"+kubeobjects.StoreKey) {
			c, err := kubeobjects.Decode(body)
			g.Expect(err).NotTo(HaveOccurred())
			body, err = json.Marshal(c.Objects)
			g.Expect(err).NotTo(HaveOccurred())
		}
		out[key] = string(body)
	}
	return out
}

// dataPrefix is where a store's marker names the group's data: what a restore reads.
func dataPrefix(ctx context.Context, g Gomega, store objectstore.Store, group *v1alpha1.VolumeReplicationGroup) string {
	prefix, err := vrg.DataPrefix(ctx, store, group)
	g.Expect(err).NotTo(HaveOccurred())
	return prefix
}

// storedMarker reads a group's primary marker from a store.
func storedMarker(ctx context.Context, g Gomega, store objectstore.Store, group *v1alpha1.VolumeReplicationGroup) vrg.PrimaryMarker {
	m, err := vrg.ReadMarker(ctx, store, vrg.StorePrefix(group))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m).NotTo(BeNil(), "store %s holds a primary marker", store.Name())
	return *m
}

// claimedEpoch reads the epoch a group recorded.
func claimedEpoch(g Gomega, group *v1alpha1.VolumeReplicationGroup) int64 {
	var claim struct {
		Epoch int64 `json:"epoch"`
	}
	g.Expect(group.Annotations).To(HaveKey(vrg.AnnotationPrimaryEpoch))
	g.Expect(json.Unmarshal([]byte(group.Annotations[vrg.AnnotationPrimaryEpoch]), &claim)).To(Succeed())
	return claim.Epoch
}

// The story of rule 7 through the stores: east protects a self-contained application (epoch 1
// in both stores); east is lost with its store, and west, promoted with action Failover,
// claims epoch 2 in the store it reaches and writes its own metadata and capture there. East
// returns with its group still primary (the hub has not demoted it yet) and its agent running:
// it finds west's newer epoch, reports itself a stale primary and writes nothing to either
// store, while west catches up east's store with its marker, metadata and capture.
func TestAReturningStalePrimaryWritesNothingAndTheNewPrimaryCatchesUpItsStore(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)
	const interval = 3 * time.Second

	ns, groupNS := "epoch-app", "epoch-dr"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, adminNamespace(groupNS))).To(Succeed())
	}
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	for _, o := range appObjects(ns) {
		g.Expect(east.Create(ctx, o)).To(Succeed())
	}
	g.Expect(east.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 2, 100*time.Millisecond))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	g.Expect(stores[0].Name()).To(Equal("s3-east"))
	eastStore, westStore := stores[0], stores[1]
	eastGroup := selfContainedVRG(groupNS, ns, profiles)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := selfContainedVRG(groupNS, ns, profiles)
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())

	expectCapturedAndProtected(g, ctx, east, eastGroup, stores, ns, 2)
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
	g.Expect(claimedEpoch(g, got)).To(Equal(int64(1)), "east's first protection claims epoch 1")
	for _, s := range stores {
		m := storedMarker(ctx, g, s, eastGroup)
		g.Expect(m.Cluster).To(Equal(lab.East), "store %s", s.Name())
		g.Expect(m.Epoch).To(Equal(int64(1)), "store %s", s.Name())
	}
	handles := pvcHandles(g, ctx, east, ns, 2)
	eastWriters := expectRunningWriters(g, ctx, east, lab.East, ns, 2, handles)
	g.Eventually(func(g Gomega) {
		for pvc, writer := range eastWriters {
			w, ok := vrglab.ImageReport(g, lab.West, handles[pvc]).Writer(writer)
			g.Expect(ok).To(BeTrue())
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
		}
	}).Should(Succeed(), "the east writers' records are mirrored to west")

	// Lose east, its agent first; its store goes with it.
	vrglab.StopAgent(lab.East)
	g.Expect(vrglab.Lab().Stop(lab.East)).To(Succeed())
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionClusterDataReady, v1alpha1.ConditionDataReady, v1alpha1.ConditionKubeObjectsReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		}
		g.Expect(claimedEpoch(g, got)).To(Equal(int64(2)), "west's promotion claims one more than east's epoch")
		m := storedMarker(ctx, g, westStore, westGroup)
		g.Expect(m.Cluster).To(Equal(lab.West))
		g.Expect(m.Epoch).To(Equal(int64(2)))
	}).Should(Succeed(), "west's group is promoted, restores the application and claims the group in the store it reaches")

	// West's application diverges from what east left: a changed ConfigMap (in west's capture)
	// and a labelled PVC (in west's metadata), so the stores tell whose data they hold.
	cm := &corev1.ConfigMap{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-conf"}, cm)).To(Succeed())
	cm.Data["written-by"] = lab.West
	g.Expect(west.Update(ctx, cm)).To(Succeed())
	// A merge patch: the PV controller and the agent may still write the freshly restored PVC.
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data-db-0"}}
	label := fmt.Appendf(nil, `{"metadata":{"labels":{"written-by":%q}}}`, lab.West)
	g.Expect(west.Patch(ctx, pvc, client.RawPatch(types.MergePatchType, label))).To(Succeed())
	var written map[string]string
	g.Eventually(func(g Gomega) {
		written = storedGroup(ctx, g, westStore, westGroup)
		prefix := dataPrefix(ctx, g, westStore, westGroup)
		g.Expect(prefix).To(HaveSuffix("/claims/2-west/"), "west's own data, once written, is what the marker names")
		g.Expect(written[vrg.PVCKey(prefix, ns, "data-db-0")]).To(ContainSubstring(`"written-by":"west"`))
		g.Expect(written[prefix+kubeobjects.StoreKey]).To(ContainSubstring(`"written-by":"west"`))
		g.Expect(written).To(HaveLen(1+4+1), "the marker, 2 PVs and 2 PVCs, and the capture")
	}).Should(Succeed(), "west's metadata and capture hold what only west wrote")

	// East returns with its group still primary, and its agent runs. Nobody demotes it.
	g.Expect(vrglab.Lab().Start(ctx, lab.East)).To(Succeed())
	east = vrglab.ClusterClient(t, lab.East)
	g.Expect(vrglab.StartAgent(lab.East)).To(Succeed())
	returned := time.Now()
	expectStale := func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		// Its VolumeReplications are still primary: the agent tells the split brain from them and
		// the stores' epochs (the storage reports none).
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSplitBrain), c.Message)
		g.Expect(c.Message).To(And(ContainSubstring("primary (writable) here, and cluster west was promoted after this group"),
			ContainSubstring("cluster west holds the group with epoch 2"),
			ContainSubstring("this group has epoch 1"), ContainSubstring("The hub demotes this group when it reaches it")))
	}
	g.Eventually(expectStale).Should(Succeed(), "east's agent reports its group a stale primary")
	t.Logf("east returned: stale primary reported in %s", time.Since(returned).Round(time.Millisecond))

	g.Eventually(func(g Gomega) {
		m := storedMarker(ctx, g, eastStore, eastGroup)
		g.Expect(m.Cluster).To(Equal(lab.West))
		g.Expect(m.Epoch).To(Equal(int64(2)))
		g.Expect(storedGroup(ctx, g, eastStore, eastGroup)).To(Equal(written))
	}).WithTimeout(2*time.Minute).Should(Succeed(), "west catches up east's store: its marker, metadata and capture")
	t.Logf("east returned: west caught up east's store in %s", time.Since(returned).Round(time.Millisecond))

	// For longer than a capture interval and several of east's passes, both stores hold
	// exactly what west wrote, and east keeps saying why it writes nothing.
	hold := interval + 5*time.Second
	g.Consistently(func(g Gomega) {
		for _, s := range stores {
			g.Expect(storedGroup(ctx, g, s, westGroup)).To(Equal(written), "store %s", s.Name())
		}
		expectStale(g)
	}).WithTimeout(hold).WithPolling(250*time.Millisecond).Should(Succeed(),
		"for %s, the stale primary overwrites nothing in either store", hold)

	// The hub's part, which also leaves the lab clean for the next tests: demote east's group.
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSecondary), "%s: %s", c.Reason, c.Message)
	}).Should(Succeed(), "once demoted, east's group no longer reports itself stale")
}
