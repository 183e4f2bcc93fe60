package vrg_test

import (
	"context"
	"maps"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// A store key is rotated by editing the profile's Secret (`drover cluster rotate-store-key`
// does it on every cluster, docs/security.md "Rotating a key"): the running agent reads the
// changed Secret at its next pass, without a restart, and the group's primary rewrites its
// marker, its metadata and its capture under the new key, so the older key can be retired.
// The group here uses a profile of its own (west's bucket, under a Secret with its own keys),
// so the lab's profiles keep theirs.
func TestARotatedStoreKeyIsReadWithoutARestartAndThePrimaryResealsItsObjects(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	app, groupNS := "rotate-app", "rotate-dr"
	appWithAConfigMapAndAPVC(ctx, g, east, app, groupNS)

	profiles, raw := vrglab.RawStores(g)
	profile := profiles[1]
	profile.Name, profile.SecretRef.Name = "rotate-west", "rotate-west"
	labSecret := &corev1.Secret{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: lab.S3SecretNamespace, Name: profiles[1].Name}, labSecret)).To(Succeed())
	first := objectstore.NewKeyring("the test's first key")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: lab.S3SecretNamespace, Name: profile.SecretRef.Name},
		Data:       maps.Clone(labSecret.Data),
	}
	maps.Copy(secret.Data, first.SecretData())
	g.Expect(east.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = east.Delete(context.Background(), secret) })
	group := selfContainedVRG(groupNS, app, []v1alpha1.S3Profile{profile})
	g.Expect(east.Create(ctx, group)).To(Succeed())
	t.Cleanup(func() { _ = east.Delete(context.Background(), group) })

	prefix := vrg.StorePrefix(group)
	sealedWith := func(g Gomega, id string) {
		keys, err := raw[1].List(ctx, prefix)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(keys).To(ContainElement(prefix + vrg.MarkerKey))
		g.Expect(keys).To(ContainElement(HaveSuffix("/" + kubeobjects.StoreKey)))
		g.Expect(keys).To(ContainElement(ContainSubstring("/pvs/")))
		for _, key := range keys {
			body, err := raw[1].Get(ctx, key)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objectstore.EnvelopeKeyID(body)).To(Equal(id), "object %s", key)
		}
	}
	g.Eventually(func(g Gomega) {
		expectProtected(g, east, group)
		sealedWith(g, first.Current)
	}).Should(Succeed(), "the group's marker, metadata and capture are sealed with the first key")

	// The rotation's two steps, as the command makes them: the new key added, then current.
	added, id := first.WithNewKey()
	patchKeys(ctx, g, east, secret, added)
	rotated, err := added.WithCurrent(id)
	g.Expect(err).NotTo(HaveOccurred())
	patchKeys(ctx, g, east, secret, rotated)
	began := time.Now()
	g.Eventually(func(g Gomega) {
		sealedWith(g, id)
	}).Should(Succeed(), "the running agent reads the new key and reseals every object of the group with it")
	t.Logf("every object of the group was resealed under %s %.1f s after the key was made current", id, time.Since(began).Seconds())

	// The first key retired: the group needs it no more, and stays protected.
	retired, err := rotated.Without(first.Current)
	g.Expect(err).NotTo(HaveOccurred())
	patchKeys(ctx, g, east, secret, retired)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(got.Annotations[vrg.AnnotationKubeObjectsCapturedAt]).NotTo(BeEmpty())
		expectProtected(g, east, group)
	}).Should(Succeed())
	sealed := objectstore.Sealed(raw[1], retired)
	_, err = sealed.Get(ctx, dataPrefix(ctx, g, sealed, group)+kubeobjects.StoreKey)
	g.Expect(err).NotTo(HaveOccurred(), "the capture opens without the retired key")
}

// expectProtected expects the group's metadata and capture protected in every store.
func expectProtected(g Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup) {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(cl.Get(context.Background(), client.ObjectKeyFromObject(group), got)).To(Succeed())
	for _, ct := range []string{v1alpha1.ConditionClusterDataProtected, v1alpha1.ConditionKubeObjectsReady} {
		c := vrglab.ConditionOf(got.Status.Conditions, ct)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
	}
}

// patchKeys writes keys into the profile Secret secret, as a rotation does.
func patchKeys(ctx context.Context, g Gomega, cl client.Client, secret *corev1.Secret, keys objectstore.Keyring) {
	before := secret.DeepCopy()
	maps.Copy(secret.Data, keys.SecretData())
	g.Expect(cl.Patch(ctx, secret, client.MergeFrom(before))).To(Succeed())
}
