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
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/objectstore"
)

// A settled self-contained group's capture reads nothing from the API server while its objects
// do not change (the agent watches their metadata, kubeobjects.Fingerprint), and yet every
// change reaches every store within a few intervals: a ConfigMap's data, the Namespace's
// labels, a Secret deleted, a Service created.
func TestASettledCaptureReadsNothingYetEveryChangeReachesTheStores(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	east := clusterClient(t, lab.East)
	createOrKeep(ctx, g, east, replicationClass("lab-block-3s", "3s"))
	const ns = "capture-watch"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "db"}}})).To(Succeed())
	for _, o := range appObjects(ns) {
		g.Expect(east.Create(ctx, o)).To(Succeed())
	}
	g.Expect(east.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", Labels: map[string]string{"app": "db"}}, Spec: pvcSpec(),
	})).To(Succeed())
	profiles, stores := labS3Profiles(g)
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
	settled := func() {
		g.Eventually(func(g Gomega) {
			before := writes.snapshot()
			time.Sleep(2 * 3 * time.Second)
			g.Expect(captureReads(before, writes.snapshot(), ns)).To(BeEmpty(), "the capture still reads its objects")
		}).Should(Succeed(), "two intervals in which the capture reads nothing")
	}
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
