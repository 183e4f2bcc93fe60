package volsync_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/storage/storagetest"
)

// As a Multi-Cluster Services implementation does, the lab's multi-cluster network exports a
// destination's ClusterIP Service named by a ServiceExport: Valid and Ready, and its clusterset
// address reaches the destination from the peer. Without the network nothing marks the export
// and the clusterset address resolves nowhere; an export of no Service is Valid=False NoService.
func TestVolSyncAServiceExportIsReachableFromThePeerOnlyWithTheMultiClusterNetwork(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(testLab.SetMultiClusterNetwork(false)).To(Succeed())
	t.Cleanup(func() { _ = testLab.SetMultiClusterNetwork(false) })
	east, west := storagetest.Client(g, testLab, lab.East), storagetest.Client(g, testLab, lab.West)
	ns := storagetest.Namespace(t, g, east, west)
	rd := rsyncDestination(ns, "db")
	rd.Spec.RsyncTLS.ServiceType = ptr.To(corev1.ServiceTypeClusterIP)
	g.Expect(west.Create(ctx, rd)).To(Succeed())
	_, keySecret := publishedDestination(g, west, ns, "db")
	copySecret(g, west, east, ns, keySecret)
	se := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "volsync-rsync-tls-dst-db"}}
	g.Expect(west.Create(ctx, se)).To(Succeed())
	orphan := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-such-service"}}
	g.Expect(west.Create(ctx, orphan)).To(Succeed())
	address := "volsync-rsync-tls-dst-db." + ns + ".svc.clusterset.local"

	g.Expect(east.Create(ctx, storagetest.FileClaim(ns, "db"))).To(Succeed())
	data := storagetest.Tree{"a.txt": []byte("alpha\n")}
	storagetest.WriteTree(g, storagetest.ClaimVolumeDir(g, testLab, east, lab.East, ns, "db"), data)
	g.Expect(east.Create(ctx, rsyncSource(ns, "db", "db", address, keySecret, "first"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		cond := apimeta.FindStatusCondition(getSource(g, east, ns, "db").Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(volsyncv1alpha1.SynchronizingReasonError))
		g.Expect(cond.Message).To(ContainSubstring("no multi-cluster network"))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "without the network the clusterset address resolves nowhere")
	g.Expect(west.Get(ctx, client.ObjectKeyFromObject(se), se)).To(Succeed())
	g.Expect(se.Status.Conditions).To(BeEmpty(), "without the network nothing marks the export")

	g.Expect(testLab.SetMultiClusterNetwork(true)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(se), se)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(se.Status.Conditions, mcsv1alpha1.ConditionValid)).To(BeTrue())
		g.Expect(apimeta.IsStatusConditionTrue(se.Status.Conditions, mcsv1alpha1.ConditionReady)).To(BeTrue())
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(orphan), orphan)).To(Succeed())
		valid := apimeta.FindStatusCondition(orphan.Status.Conditions, mcsv1alpha1.ConditionValid)
		g.Expect(valid).NotTo(BeNil())
		g.Expect(valid.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(valid.Reason).To(Equal(mcsv1alpha1.ReasonNoService))
	}).WithTimeout(storagetest.Timeout).WithPolling(storagetest.Polling).Should(Succeed(), "with the network the export is marked")
	awaitManualSync(g, east, ns, "db", "first")
	storagetest.SameTree(g, storagetest.ReadTree(g, storagetest.ClaimVolumeDir(g, testLab, west, lab.West, ns, "volsync-db-dst")), data, "the destination volume")
}
