package volsync

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	mcsv1alpha1 "github.com/drover-io/drover/internal/extapi/multicluster/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

func TestDestinationServiceNameIsVolSyncsAndFitsAServiceName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DestinationServiceName("data-db-0")).To(Equal("volsync-rsync-tls-dst-data-db-0"))
	g.Expect(ClustersetAddress("app", "data-db-0")).To(Equal("volsync-rsync-tls-dst-data-db-0.app.svc.clusterset.local"))
	long := strings.Repeat("a", 60)
	// crc32.ChecksumIEEE of 60 'a', as VolSync's GetHashedName writes it.
	g.Expect(DestinationServiceName(long)).To(MatchRegexp("^volsync-rsync-tls-dst-[0-9a-f]{8}$"))
	g.Expect(len(DestinationServiceName(long))).To(BeNumerically("<=", 63))
}

// A ServiceExport is usable once its MCS implementation marked it Valid; without a Valid
// condition past the grace, or with Valid False or a failed Ready, the peer cannot reach the
// address and the message names the DRPolicy setting to choose.
func TestAnExportIsUsableOnlyOnceValid(t *testing.T) {
	old := metav1.NewTime(time.Now().Add(-time.Minute))
	export := func(conds ...metav1.Condition) *mcsv1alpha1.ServiceExport {
		return &mcsv1alpha1.ServiceExport{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "volsync-rsync-tls-dst-data", CreationTimestamp: old},
			Status:     mcsv1alpha1.ServiceExportStatus{Conditions: conds},
		}
	}
	cond := func(t, reason string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: reason + " message"}
	}
	const address = "volsync-rsync-tls-dst-data.app.svc.clusterset.local"
	for _, tt := range []struct {
		name   string
		se     *mcsv1alpha1.ServiceExport
		reason string
	}{
		{name: "valid", se: export(cond(mcsv1alpha1.ConditionValid, mcsv1alpha1.ReasonValid, metav1.ConditionTrue))},
		{name: "valid and pending", se: export(cond(mcsv1alpha1.ConditionValid, mcsv1alpha1.ReasonValid, metav1.ConditionTrue),
			cond(mcsv1alpha1.ConditionReady, mcsv1alpha1.ReasonPending, metav1.ConditionFalse))},
		{name: "no condition", se: export(), reason: v1alpha1.ReasonVolSyncAddressUnreachable},
		{name: "no Service", se: export(cond(mcsv1alpha1.ConditionValid, mcsv1alpha1.ReasonNoService, metav1.ConditionFalse)),
			reason: v1alpha1.ReasonVolSyncAddressUnreachable},
		{name: "export failed", se: export(cond(mcsv1alpha1.ConditionValid, mcsv1alpha1.ReasonValid, metav1.ConditionTrue),
			cond(mcsv1alpha1.ConditionReady, "Failed", metav1.ConditionFalse)), reason: v1alpha1.ReasonVolSyncAddressUnreachable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, res := exportState(tt.se, address)
			if tt.reason == "" {
				g.Expect(res.IsDone()).To(BeTrue())
				g.Expect(got).To(Equal(address))
				return
			}
			g.Expect(got).To(BeEmpty())
			g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
			g.Expect(res.Reason).To(Equal(tt.reason))
			g.Expect(res.Message).To(ContainSubstring("spec.volSyncAddress to LoadBalancer"))
		})
	}
	g := NewWithT(t)
	fresh := export()
	fresh.CreationTimestamp = metav1.Now()
	_, res := exportState(fresh, address)
	g.Expect(res.Reason).To(Equal(v1alpha1.ReasonProgressing), "an export just made is given VolSync's grace")
}

// With spec.volSync.address ServiceExport the destination's Service is ClusterIP, exported by a
// ServiceExport of its name that the destination owns; the clusterset address is reported once
// the export is Valid, and going back to LoadBalancer deletes the export.
func TestEnsureDestinationExportsAClusterIPServiceAndReportsItsClustersetAddress(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	vrg := group()
	vrg.Spec.VolSync = &v1alpha1.VolSyncSpec{Address: v1alpha1.VolSyncAddressServiceExport}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-file"}, Provisioner: driver}
	cl := newClient(g, class, ptr.To(snapshotClass("lab-file-snapshot", driver, false)))
	b := New(cl, cl)
	rp := v1alpha1.VolSyncReceivePVC{PVCNamespace: "app", PVCName: "data", StorageClassName: "lab-file",
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: resource.MustParse("1Gi"),
		MoverSecurityContext: appUser()}

	_, res := b.EnsureDestination(ctx, vrg, rp, "")
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry))
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data"}, rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.ServiceType).To(HaveValue(Equal(corev1.ServiceTypeClusterIP)))
	d, res := b.EnsureDestination(ctx, vrg, rp, "")
	g.Expect(d).To(BeNil(), "no address before the export is valid: %s", res)
	se := &mcsv1alpha1.ServiceExport{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "app", Name: "volsync-rsync-tls-dst-data"}, se)).To(Succeed())
	g.Expect(se.OwnerReferences).To(ConsistOf(HaveField("UID", rd.UID)), "the export goes with its destination")
	g.Expect(se.Labels).To(Equal(GroupLabels(vrg)))

	meta.SetStatusCondition(&se.Status.Conditions, metav1.Condition{Type: mcsv1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: mcsv1alpha1.ReasonValid})
	g.Expect(cl.Status().Update(ctx, se)).To(Succeed())
	d, res = b.EnsureDestination(ctx, vrg, rp, "")
	g.Expect(res.IsDone()).To(BeTrue(), "%s", res)
	g.Expect(d.Address).To(Equal("volsync-rsync-tls-dst-data.app.svc.clusterset.local"))

	vrg.Spec.VolSync.Address = v1alpha1.VolSyncAddressLoadBalancer
	_, _ = b.EnsureDestination(ctx, vrg, rp, "")
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(rd), rd)).To(Succeed())
	g.Expect(rd.Spec.RsyncTLS.ServiceType).To(HaveValue(Equal(corev1.ServiceTypeLoadBalancer)))
	err := cl.Get(ctx, client.ObjectKeyFromObject(se), se)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the export is deleted with the mode: %v", err)
}
