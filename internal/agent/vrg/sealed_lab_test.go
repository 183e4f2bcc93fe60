package vrg_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
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
)

// Every object in a store is sealed under the profile's store keys (docs/security.md, "The S3
// stores"): a holder of write access to west's bucket, without the keys, alters one byte of a
// sealed capture, or writes a capture in clear; west's agent refuses both, naming the store,
// the object and the key ID, and creates nothing from them, while a third group restores its
// intact capture.

// sealedCapture is a capture of one application namespace holding a ConfigMap and a Secret.
func sealedCapture(app string) map[string]any {
	return map[string]any{"version": 1, "capturedAt": "2026-01-02T03:04:05Z", "namespaces": []string{app}, "objects": []any{
		rawObject("v1", "Namespace", "", app, nil),
		rawObject("v1", "ConfigMap", app, "conf", map[string]any{"data": map[string]string{"k": "v"}}),
		rawObject("v1", "Secret", app, "creds", map[string]any{"data": map[string]string{"password": base64.StdEncoding.EncodeToString([]byte("hunter2"))}}),
	}}
}

func TestAnAlteredByteOfASealedCaptureIsRefusedAndCreatesNothing(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	west := vrglab.ClusterClient(t, lab.West)
	_, raw := vrglab.RawStores(g)
	keyID := vrglab.StoreKeys(g)[1].Current
	groups := map[string]*v1alpha1.VolumeReplicationGroup{}
	for _, name := range []string{"altered", "plain", "intact"} {
		ns, app := "sealed-"+name+"-dr", "sealed-"+name+"-app"
		g.Expect(west.Create(ctx, adminNamespace(ns))).To(Succeed())
		group, store := forgedGroup(g, ns, app)
		group.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
		key := vrg.StorePrefix(group) + kubeobjects.StoreKey
		switch name {
		case "plain":
			// A capture in clear, as a store holds it that a drover without store keys wrote.
			body, err := json.Marshal(sealedCapture(app))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(raw[1].Put(ctx, key, body)).To(Succeed())
		default:
			putJSON(g, store, key, sealedCapture(app))
		}
		if name == "altered" {
			body, err := raw[1].Get(ctx, key)
			g.Expect(err).NotTo(HaveOccurred())
			body[len(body)/2] ^= 0x01
			g.Expect(raw[1].Put(ctx, key, body)).To(Succeed())
		}
		groups[name] = group
	}
	for _, group := range groups {
		g.Expect(west.Create(ctx, group)).To(Succeed())
	}

	for name, want := range map[string][]string{
		"altered": {"does not authenticate under store key ID " + keyID, "Secret drover-system/" + lab.S3ProfileName(lab.West)},
		"plain":   {"has no drover envelope", "delete its primary marker " + vrg.StorePrefix(groups["plain"]) + vrg.MarkerKey},
	} {
		group := groups[name]
		msg := expectRefused(g, west, group, v1alpha1.ConditionKubeObjectsReady, vrg.StorePrefix(group)+kubeobjects.StoreKey)
		t.Logf("%s: KubeObjectsReady: %s", name, msg)
		for _, w := range want {
			g.Expect(msg).To(ContainSubstring(w))
		}
		app := group.Spec.ProtectedNamespaces[0]
		for _, o := range []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "conf"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "creds"}},
		} {
			err := west.Get(ctx, client.ObjectKeyFromObject(o), o)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: %T %s is not created: %v", name, o, o.GetName(), err)
		}
	}
	intact := groups["intact"]
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(intact), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		secret := &corev1.Secret{}
		g.Expect(west.Get(ctx, client.ObjectKey{Namespace: intact.Spec.ProtectedNamespaces[0], Name: "creds"}, secret)).To(Succeed())
		g.Expect(string(secret.Data["password"])).To(Equal("hunter2"))
	}).Should(Succeed(), "the group with an intact sealed capture restores it")
}

// TestTheStoresHoldNoSecretValueOrObjectNameInClear protects an application on east and reads
// every object its agent wrote for the group, as a holder of the buckets' credentials reads
// them: neither the value of its Secret nor the name of any of its objects appears in them.
func TestTheStoresHoldNoSecretValueOrObjectNameInClear(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	app, groupNS := "cleartext-app", "cleartext-dr"
	createOrKeep(ctx, g, east, replicationClass("lab-block-3s", "3s"))
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}})).To(Succeed())
	g.Expect(east.Create(ctx, adminNamespace(groupNS))).To(Succeed())
	value := "correct-horse-battery-staple"
	names := []string{"cleartext-conf", "cleartext-creds", "cleartext-data"}
	g.Expect(east.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: names[0]}, Data: map[string]string{"mode": "primary"}})).To(Succeed())
	g.Expect(east.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: names[1]}, StringData: map[string]string{"password": value}})).To(Succeed())
	g.Expect(east.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: names[2], Labels: map[string]string{"app": "db"}}, Spec: vrglab.PVCSpec(),
	})).To(Succeed())
	profiles, raw := vrglab.RawStores(g)
	group := selfContainedVRG(groupNS, app, profiles)
	g.Expect(east.Create(ctx, group)).To(Succeed())
	t.Cleanup(func() { _ = east.Delete(context.Background(), group) })
	var pvName string
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionClusterDataProtected, v1alpha1.ConditionKubeObjectsReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
		pvc := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, client.ObjectKey{Namespace: app, Name: names[2]}, pvc)).To(Succeed())
		pvName = pvc.Spec.VolumeName
		g.Expect(pvName).NotTo(BeEmpty(), "PVC %s is not bound yet", names[2])
	}).Should(Succeed(), "the group's metadata and capture are in both stores")

	forbidden := append([]string{value, base64.StdEncoding.EncodeToString([]byte(value)), app, pvName}, names...)
	for _, store := range raw {
		// The conditions can turn True a pass before the PV's metadata reaches every store.
		var keys []string
		g.Eventually(func(g Gomega) {
			var err error
			keys, err = store.List(ctx, vrg.StorePrefix(group))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keys).To(ContainElements(HaveSuffix("/"+kubeobjects.StoreKey), vrg.StorePrefix(group)+vrg.MarkerKey,
				HaveSuffix("/pvs/"+pvName+".json")), "store %s", store.Name())
		}).Should(Succeed(), "store %s holds the group's capture, marker and PV", store.Name())
		for _, key := range keys {
			body, err := store.Get(ctx, key)
			g.Expect(err).NotTo(HaveOccurred())
			for _, word := range forbidden {
				g.Expect(bytes.Contains(body, []byte(word))).To(BeFalse(), "store %s, object %s holds %q in clear", store.Name(), key, word)
			}
			for _, word := range []string{`"kind"`, `"cluster"`, "Secret"} {
				g.Expect(bytes.Contains(body, []byte(word))).To(BeFalse(), "store %s, object %s holds %q in clear", store.Name(), key, word)
			}
		}
		t.Logf("store %s: %d objects of the group, none holding %q or an object name in clear", store.Name(), len(keys), value)
	}
}

// TestAStoreInClearIsRefusedUntilItsMarkerIsDeletedAndThePrimaryRewritesItSealed follows the
// migration that the refusal of an object in clear names: west's bucket holds the group's
// objects in clear, as a drover without store keys wrote them; east's primary refuses the store
// (ClusterDataProtected names it and the way out) and writes nothing to it; once the group's
// primary marker is deleted there, the primary rewrites the marker, the metadata and the
// capture sealed, from its live state.
func TestAStoreInClearIsRefusedUntilItsMarkerIsDeletedAndThePrimaryRewritesItSealed(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	app, groupNS := "inclear-app", "inclear-dr"
	appWithAConfigMapAndAPVC(ctx, g, east, app, groupNS)
	profiles, sealed := vrglab.S3Profiles(g)
	_, raw := vrglab.RawStores(g)
	group := selfContainedVRG(groupNS, app, profiles)
	g.Expect(east.Create(ctx, group)).To(Succeed())
	t.Cleanup(func() { _ = east.Delete(context.Background(), group) })
	protected := func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionClusterDataProtected, v1alpha1.ConditionKubeObjectsReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
	}
	g.Eventually(protected).Should(Succeed(), "the group is protected in both stores")

	prefix := vrg.StorePrefix(group)
	keys, err := sealed[1].List(ctx, prefix)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(ContainElement(prefix + vrg.MarkerKey))
	for _, key := range keys {
		body, err := sealed[1].Get(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(raw[1].Put(ctx, key, body)).To(Succeed(), "%s in clear", key)
	}
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "%s: %s", c.Reason, c.Message)
		g.Expect(c.Message).To(ContainSubstring("S3 profile " + lab.S3ProfileName(lab.West)))
		g.Expect(c.Message).To(ContainSubstring("has no drover envelope"))
		g.Expect(c.Message).To(ContainSubstring("delete its primary marker " + prefix + vrg.MarkerKey))
		t.Logf("ClusterDataProtected: %s", c.Message)
	}).Should(Succeed(), "the primary refuses the store in clear and says how to migrate it")

	g.Expect(raw[1].Delete(ctx, prefix+vrg.MarkerKey)).To(Succeed())
	g.Eventually(func(g Gomega) {
		protected(g)
		for _, key := range keys {
			body, err := raw[1].Get(ctx, key)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bytes.HasPrefix(body, []byte("DRV\x1e"))).To(BeTrue(), "%s is sealed again", key)
			_, err = sealed[1].Get(ctx, key)
			g.Expect(err).NotTo(HaveOccurred())
		}
	}).Should(Succeed(), "the primary rewrites every object of the group in west's store sealed")
}

// appWithAConfigMapAndAPVC makes, on east, the application namespace app with a ConfigMap conf
// and a PVC data (labelled app=db, the lab's block class replicated every 3 s), and the admin
// namespace groupNS for a group protecting it from there.
func appWithAConfigMapAndAPVC(ctx context.Context, g Gomega, east client.Client, app, groupNS string) {
	createOrKeep(ctx, g, east, replicationClass("lab-block-3s", "3s"))
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}})).To(Succeed())
	g.Expect(east.Create(ctx, adminNamespace(groupNS))).To(Succeed())
	g.Expect(east.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "conf"}, Data: map[string]string{"k": "v"}})).To(Succeed())
	g.Expect(east.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "data", Labels: map[string]string{"app": "db"}}, Spec: vrglab.PVCSpec(),
	})).To(Succeed())
}
