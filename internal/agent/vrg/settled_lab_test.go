package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/s3fault"
	"github.com/drover-io/drover/internal/objectstore"
)

// oneVolumeOnEast makes, on east, namespace ns (labelled team=db) holding objs and one PVC of
// an application "db" mirrored every 3 s, for a test's group; g waits up to 90 s. It returns
// east's client and the lab's S3 profiles and stores.
func oneVolumeOnEast(ctx context.Context, t *testing.T, g *WithT, ns string, objs ...client.Object) (client.Client, []v1alpha1.S3Profile, []objectstore.Store) {
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	east := vrglab.ClusterClient(t, lab.East)
	createOrKeep(ctx, g, east, replicationClass("lab-block-3s", "3s"))
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "db"}}})).To(Succeed())
	for _, o := range objs {
		g.Expect(east.Create(ctx, o)).To(Succeed())
	}
	g.Expect(east.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", Labels: map[string]string{"app": "db"}}, Spec: vrglab.PVCSpec(),
	})).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	return east, profiles, stores
}

// expectNoCaptureReads waits for two intervals (3 s) in which east's agent reads none of the
// captured kinds in namespace ns; who says whose reads they would be.
func expectNoCaptureReads(g *WithT, ns, who string) {
	g.Eventually(func(g Gomega) {
		before := vrglab.Writes()
		time.Sleep(2 * 3 * time.Second)
		g.Expect(captureReads(before, vrglab.Writes(), ns)).To(BeEmpty(), "%s still reads its objects", who)
	}).Should(Succeed(), "two intervals in which %s reads nothing", who)
}

// A settled self-contained group's capture reads nothing from the API server while its objects
// do not change (the agent watches their metadata, kubeobjects.Fingerprint), and yet every
// change reaches every store within a few intervals: a ConfigMap's data, the Namespace's
// labels, a Secret deleted, a Service created.
func TestASettledCaptureReadsNothingYetEveryChangeReachesTheStores(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "capture-watch"
	east, profiles, stores := oneVolumeOnEast(ctx, t, g, ns, appObjects(ns)...)
	group := selfContainedVRG(ns, ns, profiles)
	g.Expect(east.Create(ctx, group)).To(Succeed())
	defer deleteGroups(ctx, g, east, []*v1alpha1.VolumeReplicationGroup{group})

	stored := func(g Gomega, store objectstore.Store, key string) *unstructured.Unstructured {
		for _, o := range storedCapture(ctx, g, store, group).Objects {
			if kubeobjects.Key(o) == key {
				return o
			}
		}
		return nil
	}
	settled := func() { expectNoCaptureReads(g, ns, "the capture") }
	g.Eventually(func(g Gomega) {
		for _, store := range stores {
			g.Expect(stored(g, store, "ConfigMap "+ns+"/db-conf")).NotTo(BeNil())
		}
	}).Should(Succeed(), "the objects are captured into both stores")
	settled()

	cm := &corev1.ConfigMap{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-conf"}, cm)).To(Succeed())
	cm.Data["max_connections"] = "200"
	g.Expect(east.Update(ctx, cm)).To(Succeed())
	nsObj := &corev1.Namespace{}
	g.Expect(east.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	nsObj.Labels["tier"] = "gold"
	g.Expect(east.Update(ctx, nsObj)).To(Succeed())
	g.Expect(east.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-creds"}})).To(Succeed())
	g.Expect(east.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-ro"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "sql", Port: 5432}},
	}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, store := range stores {
			conf := stored(g, store, "ConfigMap "+ns+"/db-conf")
			g.Expect(conf).NotTo(BeNil())
			g.Expect(conf.Object["data"]).To(HaveKeyWithValue("max_connections", "200"))
			g.Expect(stored(g, store, "Namespace "+ns).GetLabels()).To(HaveKeyWithValue("tier", "gold"))
			g.Expect(stored(g, store, "Secret "+ns+"/db-creds")).To(BeNil())
			g.Expect(stored(g, store, "Service "+ns+"/db-ro")).NotTo(BeNil())
		}
	}).Should(Succeed(), "every change is captured into both stores")
	settled()
}

// A settled agent reads no S3 credentials: a store built from a profile's Secret is reused while
// the watch of Secrets' metadata shows that Secret unchanged. A changed Secret takes effect at
// once: wrong keys turn ClusterDataProtected False naming the store, the right keys back make it
// True again.
func TestASettledAgentReadsNoCredentialsYetAChangedSecretTakesEffect(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "settled-credentials"
	east, profiles, _ := oneVolumeOnEast(ctx, t, g, ns)
	group := vrglab.PrimaryVRG(ns, "db", "db", "3s", profiles)
	g.Expect(east.Create(ctx, group)).To(Succeed())
	defer deleteGroups(ctx, g, east, []*v1alpha1.VolumeReplicationGroup{group})
	protected := func(g Gomega) metav1.Condition {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		return vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(protected(g).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed(), "the group's metadata is in both stores")

	ref := profiles[0].SecretRef
	g.Eventually(func(g Gomega) {
		before := vrglab.Writes()
		time.Sleep(2 * 3 * time.Second)
		after := vrglab.Writes()
		k := vrglab.WriteKey{Cluster: lab.East, Namespace: ref.Namespace, What: "secrets", Read: true}
		g.Expect(after[k]-before[k]).To(BeZero(), "reads of the S3 profiles' Secrets in %s", ref.Namespace)
	}).Should(Succeed(), "two intervals in which no S3 credentials are read")

	secret := &corev1.Secret{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret)).To(Succeed())
	right := secret.DeepCopy()
	defer func() {
		// Whatever happened, the lab's other tests get the right keys back.
		current := &corev1.Secret{}
		if east.Get(ctx, client.ObjectKeyFromObject(right), current) == nil {
			current.Data = right.Data
			_ = east.Update(ctx, current)
		}
	}()
	secret.Data[objectstore.SecretSecretAccessKeyKey] = []byte("not-the-key")
	g.Expect(east.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := protected(g)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring(profiles[0].Name))
	}).Should(Succeed(), "the wrong key is used at once and named")

	g.Expect(east.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	secret.Data = right.Data
	g.Expect(east.Update(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(protected(g).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed(), "the right key back, the group is protected again")
}

// While one store is down (the lost peer's, after a failover), a settled group's capture reads
// nothing either: the capture that store lacks is kept in memory and offered to it every
// interval, and the objects are read again only when they change. Once the store answers, it
// holds the newest capture and KubeObjectsReady turns True.
func TestACaptureAStoreDownLacksIsKeptNotReadAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "capture-store-down"
	east, profiles, stores := oneVolumeOnEast(ctx, t, g, ns, appObjects(ns)...)
	proxy, err := s3fault.Start(profiles[1].Endpoint)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = proxy.Close() }()
	g.Expect(proxy.Set(s3fault.Refuse, 0)).To(Succeed())
	group := selfContainedVRG(ns, ns, profiles)
	group.Spec.S3Profiles[1].Endpoint = proxy.URL()
	g.Expect(east.Create(ctx, group)).To(Succeed())
	defer deleteGroups(ctx, g, east, []*v1alpha1.VolumeReplicationGroup{group})

	conf := func(g Gomega, store objectstore.Store) map[string]any {
		for _, o := range storedCapture(ctx, g, store, group).Objects {
			if kubeobjects.Key(o) == "ConfigMap "+ns+"/db-conf" {
				data, _ := o.Object["data"].(map[string]any)
				return data
			}
		}
		return nil
	}
	ready := func(g Gomega) metav1.Condition {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		return vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
	}
	noReads := func() { expectNoCaptureReads(g, ns, "the capture") }
	g.Eventually(func(g Gomega) {
		g.Expect(conf(g, stores[0])).To(HaveKey("max_connections"))
		c := ready(g)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("s3-west"))
	}).Should(Succeed(), "the capture is in s3-east; KubeObjectsReady names s3-west, which is down")
	noReads()

	cm := &corev1.ConfigMap{}
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-conf"}, cm)).To(Succeed())
	cm.Data["max_connections"] = "300"
	g.Expect(east.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(conf(g, stores[0])).To(HaveKeyWithValue("max_connections", "300"))
	}).Should(Succeed(), "a change is read and reaches the store that answers")
	noReads()

	g.Expect(proxy.Set(s3fault.None, 0)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(conf(g, stores[1])).To(HaveKeyWithValue("max_connections", "300"))
		g.Expect(ready(g).Status).To(Equal(metav1.ConditionTrue))
	}).Should(Succeed(), "the store back holds the newest capture")
	noReads()
}
