package volsynclab_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// A destination's VolSync key reaches the primary through the group's stores, sealed, with
// nobody copying Secrets between the clusters: each store holds it under the profile's store key
// (no key in clear), and the primary's agent makes its key Secret from it. A key object written
// without the store key (by whoever may write to the bucket) is refused: the primary's PVC is
// not protected, StoreObjectRefused naming the store and the object and saying to delete it, and
// no Secret is made from it; deleted, the secondary writes the key again and the primary gets it.
// A key the secondary replaces reaches the primary the same way, and the syncs go on with it.
func TestAVolSyncKeyReachesThePrimaryOnlySealedThroughTheStores(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	const ns = "volsync-keys"
	p := startVolSyncPair(t, g, ns, 1, nil)
	hubReceive(ctx, g, p.east, p.eastGroup, p.west, p.westGroup, 1)
	var dests []v1alpha1.VolSyncDestination
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(p.west.Get(ctx, client.ObjectKeyFromObject(p.westGroup), got)).To(Succeed())
		dests = got.Status.VolSyncDestinations
		g.Expect(dests).To(HaveLen(1))
	}).Should(Succeed(), "west reports its destination")
	d := dests[0]
	westKey := &corev1.Secret{}
	g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.KeySecretName}, westKey)).To(Succeed())
	psk := string(westKey.Data[volsync.PSKKey])

	_, raw := vrglab.RawStores(g)
	objectKey := vrg.VolSyncKeyKey(vrg.StorePrefix(p.westGroup), ns, d.PVCName)
	keyInEveryStore(ctx, g, objectKey, psk)

	// Whoever may write to the buckets, without the store key, plants a key of their own.
	forged, err := json.Marshal(vrg.StoredVolSyncKey{PVCNamespace: ns, PVCName: d.PVCName, KeySecretName: d.KeySecretName,
		PSK: "volsync:" + strings.Repeat("a", 64), Cluster: "west", Written: metav1.NewTime(time.Now().Add(time.Hour))})
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range raw {
		g.Expect(s.Put(ctx, objectKey, forged)).To(Succeed())
	}
	setDestinations(ctx, g, p.east, p.eastGroup, dests)
	var c metav1.Condition
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(p.east.Get(ctx, client.ObjectKeyFromObject(p.eastGroup), got)).To(Succeed())
		c = vrglab.PVCCondition(got, d.PVCName, v1alpha1.ConditionDataProtected)
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonStoreObjectRefused), "%s %s: %s", c.Status, c.Reason, c.Message)
	}).Should(Succeed(), "east refuses the planted key")
	t.Logf("east's PVC with a planted key in every store: DataProtected %s %s: %s", c.Status, c.Reason, c.Message)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(And(ContainSubstring(objectKey), ContainSubstring("delete that object")))
	err = p.east.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.KeySecretName}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "east made a key Secret from the planted key: %v", err)

	for _, s := range raw {
		g.Expect(s.Delete(ctx, objectKey)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		have := &corev1.Secret{}
		g.Expect(p.east.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.KeySecretName}, have)).To(Succeed())
		g.Expect(string(have.Data[volsync.PSKKey])).To(Equal(psk), "east's key is west's")
	}).WithTimeout(3*time.Minute).Should(Succeed(), "west writes its key again and east makes its Secret from it")
	replicates(ctx, g, p)

	replaceWestsKey(ctx, t, g, p, westKey, d)
}

// setDestinations sets a group's spec.volSync.destinations, as the hub does from the peer's
// status.
func setDestinations(ctx context.Context, g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup, dests []v1alpha1.VolSyncDestination) {
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		if got.Spec.VolSync == nil {
			got.Spec.VolSync = &v1alpha1.VolSyncSpec{}
		}
		got.Spec.VolSync.Destinations = dests
		g.Expect(cl.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
}

// keyInEveryStore waits until every lab store holds psk at objectKey, sealed: written by west,
// and nowhere in clear.
func keyInEveryStore(ctx context.Context, g Gomega, objectKey, psk string) {
	_, sealed := vrglab.S3Profiles(g)
	_, raw := vrglab.RawStores(g)
	for i := range sealed {
		g.Eventually(func(g Gomega) {
			body, err := sealed[i].Get(ctx, objectKey)
			g.Expect(err).NotTo(HaveOccurred())
			stored := vrg.StoredVolSyncKey{}
			g.Expect(json.Unmarshal(body, &stored)).To(Succeed())
			g.Expect(stored.PSK).To(Equal(psk))
			g.Expect(stored.Cluster).To(Equal(lab.West), "the secondary wrote it")
		}).Should(Succeed(), "store %s holds west's key", sealed[i].Name())
		inClear, err := raw[i].Get(ctx, objectKey)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(inClear)).NotTo(ContainSubstring(strings.TrimPrefix(psk, "volsync:")), "store %s holds the key in clear", raw[i].Name())
	}
}

// replaceWestsKey deletes west's key Secret (its agent makes a new key) and waits until east
// holds the new key, through the stores, and syncs to west with it: until then east's syncs fail.
func replaceWestsKey(ctx context.Context, t *testing.T, g Gomega, p volSyncPair, westKey *corev1.Secret, d v1alpha1.VolSyncDestination) {
	key := client.ObjectKey{Namespace: d.PVCNamespace, Name: d.KeySecretName}
	g.Expect(p.west.Delete(ctx, westKey)).To(Succeed())
	var replaced string
	g.Eventually(func(g Gomega) {
		have := &corev1.Secret{}
		g.Expect(p.west.Get(ctx, key, have)).To(Succeed())
		replaced = string(have.Data[volsync.PSKKey])
		g.Expect(replaced).NotTo(BeEmpty())
		g.Expect(replaced).NotTo(Equal(string(westKey.Data[volsync.PSKKey])))
	}).Should(Succeed(), "west makes a new key")
	rotatedAt := time.Now()
	g.Eventually(func(g Gomega) {
		have := &corev1.Secret{}
		g.Expect(p.east.Get(ctx, key, have)).To(Succeed())
		g.Expect(string(have.Data[volsync.PSKKey])).To(Equal(replaced), "east's key is west's new one")
	}).WithTimeout(4*time.Minute).Should(Succeed(), "west's new key reaches east")
	t.Logf("west's replaced key reached east in %s", time.Since(rotatedAt).Round(time.Second))
	synced := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(destinationSync(ctx, g, p.west, d.PVCNamespace, d.PVCName)).To(BeTemporally(">", synced))
	}).WithTimeout(3*time.Minute).Should(Succeed(), "east syncs to west with the new key")
}
