package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// A group whose pvcSelector is empty selects every PVC of its namespace, yet protects only the
// application's: not the DR-owned PVC of a final sync, nor a PVC VolSync made for its mover.
// Neither gets the group's label or finalizer.
func TestAnEmptySelectorProtectsTheApplicationsPVCsButNotDroversOrVolSyncsOwn(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	createOrKeep(ctx, g, east, replicationClass("lab-block-5s", "5s"))
	ns := "select-all"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(east.Create(ctx, vrglab.StatefulSet(ns, "db", 1))).To(Succeed())
	dr := claim(ns, volsync.FinalSyncPVCName("data-db-0"))
	dr.Annotations = map[string]string{volsync.AnnotationFinalSyncOf: "data-db-0"}
	mover := claim(ns, "volsync-db-src")
	mover.Labels = map[string]string{"app.kubernetes.io/created-by": "volsync"}
	for _, pvc := range []*corev1.PersistentVolumeClaim{dr, mover} {
		g.Expect(east.Create(ctx, pvc)).To(Succeed())
	}
	profiles, _ := vrglab.S3Profiles(g)
	group := vrglab.PrimaryVRG(ns, "db", "db", "5s", profiles)
	group.Spec.PVCSelector = metav1.LabelSelector{}
	g.Expect(east.Create(ctx, group)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		var names []string
		for _, p := range got.Status.ProtectedPVCs {
			names = append(names, p.Name)
		}
		g.Expect(names).To(ConsistOf("data-db-0"))
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataProtected)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}).Should(Succeed(), "only the StatefulSet's PVC is protected")
	for _, pvc := range []*corev1.PersistentVolumeClaim{dr, mover} {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(pvc), got)).To(Succeed())
		g.Expect(got.Labels).NotTo(HaveKey(vrg.LabelProtectedBy), "PVC %s", pvc.Name)
		g.Expect(got.Finalizers).NotTo(ContainElement(vrg.PVCFinalizer), "PVC %s", pvc.Name)
	}
	g.Expect(east.Delete(ctx, group)).To(Succeed())
}

// claim is a PVC of the lab's block class.
func claim(ns, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: vrglab.PVCSpec()}
}
