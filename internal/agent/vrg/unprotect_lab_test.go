package vrg_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// Before 58c41c0 (2026-12-01) deleting a stale primary's group deleted its prefix from every
// store, including what the newer primary had written there. Here west holds the group with epoch 2
// in west's store (its marker, metadata and capture), while east's store still holds east's
// own epoch-1 copy (west never reached it). East's group, primary with epoch 1, is deleted (a
// person removes the stale copy, or the hub unprotects): east's own copy goes, west's stays,
// byte for byte.
func TestDeletingAStalePrimaryLeavesWhatTheNewerPrimaryWroteInTheStores(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	ns := "stale-delete"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	g.Expect(stores[0].Name()).To(Equal("s3-east"))
	eastStore, westStore := stores[0], stores[1]

	group := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	group.Annotations = map[string]string{vrg.AnnotationPrimaryEpoch: `{"epoch":1,"generation":1,"since":"2026-12-01T08:00:00Z"}`}
	prefix := vrg.StorePrefix(group)
	writeGroup := func(store objectstore.Store, m vrg.PrimaryMarker, by string) map[string]string {
		body, err := json.Marshal(m)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(store.Put(ctx, prefix+vrg.MarkerKey, body)).To(Succeed())
		objects := map[string]string{
			vrg.PVKey(prefix, "pv-"+by):           fmt.Sprintf(`{"kind":"PersistentVolume","written-by":%q}`, by),
			vrg.PVCKey(prefix, "app", "data-"+by): fmt.Sprintf(`{"kind":"PersistentVolumeClaim","written-by":%q}`, by),
			prefix + kubeobjects.StoreKey:         fmt.Sprintf(`{"written-by":%q}`, by),
		}
		for k, v := range objects {
			g.Expect(store.Put(ctx, k, []byte(v))).To(Succeed())
		}
		return storedKeys(ctx, g, store, prefix)
	}
	writeGroup(eastStore, vrg.PrimaryMarker{Cluster: lab.East, Epoch: 1}, lab.East)
	westWrote := writeGroup(westStore, vrg.PrimaryMarker{Cluster: lab.West, Epoch: 2}, lab.West)

	g.Expect(east.Create(ctx, group)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		// SplitBrain once its storage made its PVCs primary.
		g.Expect(c.Reason).To(BeElementOf(v1alpha1.ReasonStalePrimary, v1alpha1.ReasonSplitBrain), c.Message)
		g.Expect(got.Finalizers).To(ContainElement(vrg.Finalizer))
	}).Should(Succeed(), "east's agent finds west's newer claim and reports its group a stale primary")

	g.Expect(east.Delete(ctx, group)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(east.Get(ctx, client.ObjectKeyFromObject(group), &v1alpha1.VolumeReplicationGroup{}))
	}).Should(BeTrue(), "east's group is unprotected and gone")
	g.Expect(storedKeys(ctx, g, westStore, prefix)).To(Equal(westWrote),
		"west's store keeps west's marker, metadata and capture: they belong to the newer primary")
	g.Expect(eastStore.List(ctx, prefix)).To(BeEmpty(), "east's store held east's own copy (epoch 1), which goes with its group")
	g.Expect(westStore.DeletePrefix(ctx, prefix)).To(Succeed())
}

// storedKeys is every object under prefix with its bytes.
func storedKeys(ctx context.Context, g Gomega, store objectstore.Store, prefix string) map[string]string {
	keys, err := store.List(ctx, prefix)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, k := range keys {
		body, err := store.Get(ctx, k)
		g.Expect(err).NotTo(HaveOccurred())
		out[k] = string(body)
	}
	return out
}
