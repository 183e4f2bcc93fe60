package vrg

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/webhook"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/replication/volrep"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// This file drives Reconcile with a fake client, the fake backend and fake stores: the
// decisions of one pass (marks, retain, selection, store outcomes, conditions) without an API
// server. The lab test in protect_test.go proves the same against real control planes.

type fixture struct {
	client  client.Client
	backend *replication.Fake
	stores  map[string]*objectstore.Fake
	r       *Reconciler
	vrg     *v1alpha1.VolumeReplicationGroup
}

func s3Secret(name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "drover-system", Name: name},
		Data: map[string][]byte{
			objectstore.SecretAccessKeyIDKey: []byte("key"), objectstore.SecretSecretAccessKeyKey: []byte("secret"),
			objectstore.SecretStoreKeysKey:  []byte("k1:" + base64.StdEncoding.EncodeToString(make([]byte, objectstore.StoreKeySize))),
			objectstore.SecretStoreKeyIDKey: []byte("k1"),
		},
	}
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme, err := testScheme()
	if err != nil {
		t.Fatal(err)
	}
	group := &v1alpha1.VolumeReplicationGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 1},
		Spec: v1alpha1.VolumeReplicationGroupSpec{
			ReplicationState: v1alpha1.ReplicationStatePrimary,
			PVCSelector:      metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			S3Profiles: []v1alpha1.S3Profile{
				{Name: "s3-east", Endpoint: "http://127.0.0.1:9000", Insecure: true, Bucket: "drover", SecretRef: v1alpha1.SecretRef{Namespace: "drover-system", Name: "s3-east"}},
				{Name: "s3-west", Endpoint: "http://127.0.0.1:9001", Insecure: true, Bucket: "drover", SecretRef: v1alpha1.SecretRef{Namespace: "drover-system", Name: "s3-west"}},
			},
			SchedulingInterval: "5s",
			StorageClassBackends: []v1alpha1.StorageClassBackend{
				{Provisioner: "block.lab.drover.io", Backend: v1alpha1.BackendVolRep},
				{StorageClassName: "lab-file", Backend: v1alpha1.BackendVolSync},
			},
		},
	}
	base := []client.Object{
		group, s3Secret("s3-east"), s3Secret("s3-west"),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-block"}, Provisioner: "block.lab.drover.io"},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "lab-file"}, Provisioner: "file.lab.drover.io"},
	}
	for _, o := range objs {
		// As the fake client wants objects to be created: no server-set fields.
		o.SetResourceVersion("")
		o.SetManagedFields(nil)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(append(base, objs...)...).
		WithIndex(&corev1.Pod{}, indexPodPVC, podPVCs).
		WithIndex(&storagev1.VolumeAttachment{}, indexVolumeAttachmentPV, volumeAttachmentPV).
		WithStatusSubresource(&v1alpha1.VolumeReplicationGroup{}).Build()
	f := &fixture{
		client: c, backend: replication.NewFake(v1alpha1.BackendVolRep), vrg: group,
		stores: map[string]*objectstore.Fake{"s3-east": objectstore.NewFake("s3-east"), "s3-west": objectstore.NewFake("s3-west")},
	}
	backends, err := replication.NewRegistry(f.backend)
	if err != nil {
		t.Fatal(err)
	}
	f.r = &Reconciler{Client: c, APIReader: c, Backends: backends, ClusterName: "east", NewStore: func(p objectstore.Profile) (objectstore.Store, error) {
		return f.stores[p.Name], nil
	}, written: newLedger()}
	return f
}

// reconcile runs passes until the finalizer is in place and one full pass ran.
func (f *fixture) reconcile(g Gomega) (ctrl.Result, error) {
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.vrg)}
	_, err := f.r.Reconcile(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred(), "the first pass adds the finalizer")
	return f.r.Reconcile(context.Background(), req)
}

func (f *fixture) group(g Gomega) *v1alpha1.VolumeReplicationGroup {
	got := &v1alpha1.VolumeReplicationGroup{}
	g.Expect(f.client.Get(context.Background(), client.ObjectKeyFromObject(f.vrg), got)).To(Succeed())
	return got
}

func pvcCondition(g Gomega, vrg *v1alpha1.VolumeReplicationGroup, name, condType string) metav1.Condition {
	for _, p := range vrg.Status.ProtectedPVCs {
		if p.Name == name {
			c := apimeta.FindStatusCondition(p.Conditions, condType)
			g.Expect(c).NotTo(BeNil())
			return *c
		}
	}
	g.Expect(name).To(BeEmpty(), "no protectedPVCs entry for %s", name)
	return metav1.Condition{}
}

func TestReconcileProtectsBoundPVCsAndReportsTheRest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	pv.Annotations = nil
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Labels, pvc.Finalizers, pvc.ResourceVersion = map[string]string{"app": "db"}, nil, ""
	pv.ResourceVersion = ""
	pending := boundPVC("app", "data-db-1", "")
	pending.Labels, pending.Finalizers, pending.ResourceVersion = map[string]string{"app": "db"}, nil, ""
	pending.Status.Phase = corev1.ClaimPending
	filePV := boundPV("pv-f", "app", "files")
	filePV.ResourceVersion, filePV.Spec.CSI.Driver = "", "file.lab.drover.io"
	filePVC := boundPVC("app", "files", "pv-f")
	filePVC.Labels, filePVC.Finalizers, filePVC.ResourceVersion = map[string]string{"app": "db"}, nil, ""
	filePVC.Spec.StorageClassName = ptr.To("lab-file")
	other := boundPVC("app", "unselected", "")
	other.Labels, other.Finalizers, other.ResourceVersion = map[string]string{"app": "web"}, nil, ""

	f := newFixture(t, pv, pvc, pending, filePV, filePVC, other)
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0))})
	f.stores["s3-west"].SetError(objectstore.ErrUnreachable)

	res, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred(), "a store that does not answer is a condition, retried on a fixed delay")
	g.Expect(res.RequeueAfter).To(Equal(requeueStoreDown))

	for _, name := range []string{"data-db-0", "data-db-1", "files"} {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: name}, got)).To(Succeed())
		g.Expect(got.Finalizers).To(ContainElement(PVCFinalizer), name)
		g.Expect(got.Labels).To(HaveKeyWithValue(LabelProtectedBy, "db"), name)
		g.Expect(got.Labels).To(HaveKeyWithValue(LabelProtectedByNamespace, "app"), name)
	}
	got := &corev1.PersistentVolumeClaim{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "unselected"}, got)).To(Succeed())
	g.Expect(got.Finalizers).To(BeEmpty())

	gotPV := &corev1.PersistentVolume{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "pv-0"}, gotPV)).To(Succeed())
	g.Expect(gotPV.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))
	g.Expect(gotPV.Annotations).To(HaveKeyWithValue(AnnotationOriginalReclaimPolicy, "Delete"))
	g.Expect(f.backend.Protected()).To(Equal([]string{"app/data-db-0"}), "only the bound VolRep PVC reaches the backend")

	vrg := f.group(g)
	g.Expect(pvcCondition(g, vrg, "data-db-0", v1alpha1.ConditionDataProtected).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(pvcCondition(g, vrg, "data-db-1", v1alpha1.ConditionDataReady).Reason).To(Equal(v1alpha1.ReasonPVCNotBound))
	volsync := pvcCondition(g, vrg, "files", v1alpha1.ConditionDataReady)
	g.Expect(volsync.Reason).To(Equal(v1alpha1.ReasonBackendNotAvailable))
	g.Expect(volsync.Message).To(ContainSubstring("backend VolSync"))
	g.Expect(volsync.Message).To(ContainSubstring("not implemented by this drover agent yet"))
	ready := apimeta.FindStatusCondition(vrg.Status.Conditions, v1alpha1.ConditionDataReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(v1alpha1.ReasonBackendNotAvailable), "a PVC that needs a person is reported first")
	cdp := apimeta.FindStatusCondition(vrg.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
	g.Expect(cdp.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cdp.Reason).To(Equal(objectstore.ReasonStoreUnreachable))
	g.Expect(cdp.Message).To(ContainSubstring("s3-west"))
	g.Expect(cdp.Message).To(ContainSubstring("the metadata is written to S3 profiles s3-east"))
	g.Expect(vrg.Status.ObservedGeneration).To(BeZero())

	keys := dataKeys(g, f.stores["s3-east"], "pv")
	g.Expect(keys).To(ConsistOf(HaveSuffix("/pvs/pv-0.json"), HaveSuffix("/pvcs/app/data-db-0.json")),
		"s3-east holds the replicating PVC; the unbound and the VolSync PVC are not stored")
}

func TestReconcileRetainsOnceAndSucceedsWhenEverythingIsProtected(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion, pv.Annotations = "", nil
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Labels, pvc.Finalizers, pvc.ResourceVersion = map[string]string{"app": "db"}, nil, ""
	f := newFixture(t, pv, pvc)
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0))})

	res, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(requeueSafety))
	// A second pass must not record Retain as the original policy.
	_, err = f.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.vrg)})
	g.Expect(err).NotTo(HaveOccurred())
	gotPV := &corev1.PersistentVolume{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "pv-0"}, gotPV)).To(Succeed())
	g.Expect(gotPV.Annotations).To(HaveKeyWithValue(AnnotationOriginalReclaimPolicy, "Delete"))

	vrg := f.group(g)
	for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected} {
		c := apimeta.FindStatusCondition(vrg.Status.Conditions, ct)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ct, c.Message)
	}
	g.Expect(vrg.Status.State).To(Equal(v1alpha1.StatePrimary))
	g.Expect(vrg.Status.ObservedGeneration).To(Equal(vrg.Generation))
	g.Expect(vrg.Status.LastGroupSyncTime.Time).To(BeTemporally("==", t0))
	for _, s := range f.stores {
		g.Expect(dataKeys(g, s, "pv")).To(HaveLen(2), "store %s", s.Name())
	}
}

func TestAPVCTheStorageMadePrimaryDuringThePassIsReportedReadyByThatPass(t *testing.T) {
	g := NewWithT(t)
	var objs []client.Object
	for _, name := range []string{"data-db-0", "data-db-1", "data-db-2"} {
		pv := boundPV("pv-"+name, "app", name)
		pv.ResourceVersion = ""
		pvc := boundPVC("app", name, "pv-"+name)
		pvc.Labels, pvc.Finalizers, pvc.ResourceVersion = map[string]string{"app": "db"}, nil, ""
		objs = append(objs, pv, pvc)
	}
	f := newFixture(t, objs...)
	waiting := replication.Retry(time.Second, v1alpha1.ReasonProgressing, "waiting for the storage to act on VolumeReplication")
	for _, key := range []string{"app/data-db-0", "app/data-db-1", "app/data-db-2"} {
		f.backend.SetResult(key, waiting)
	}
	// By the end of the pass the storage made data-db-0 primary; data-db-1 it has not acted on
	// yet; of data-db-2 the backend cannot tell without writing.
	f.backend.SetObserved("app/data-db-0", replication.Done())
	f.backend.SetObserved("app/data-db-1", waiting)
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{ReplicationID: "vrc-5s"})

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	vrg := f.group(g)
	ready := pvcCondition(g, vrg, "data-db-0", v1alpha1.ConditionDataReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	g.Expect(vrg.Status.ProtectedPVCs[0].ReplicationID).To(Equal("vrc-5s"), "the status read again with the second look")
	for _, name := range []string{"data-db-1", "data-db-2"} {
		c := pvcCondition(g, vrg, name, v1alpha1.ConditionDataReady)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), name)
		g.Expect(c.Message).To(ContainSubstring("waiting for the storage"), name)
	}

	// Once the storage has acted on all three, one pass reports the group ready.
	f.backend.SetObserved("app/data-db-1", replication.Done())
	f.backend.SetObserved("app/data-db-2", replication.Done())
	_, err = f.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(f.vrg)})
	g.Expect(err).NotTo(HaveOccurred())
	c := apimeta.FindStatusCondition(f.group(g).Status.Conditions, v1alpha1.ConditionDataReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
}

func TestReconcileRefusesAPVCOfAnotherGroup(t *testing.T) {
	g := NewWithT(t)
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion = ""
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.ResourceVersion, pvc.Labels = "", map[string]string{"app": "db", LabelProtectedBy: "other"}
	f := newFixture(t, pv, pvc)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	c := pvcCondition(g, f.group(g), "data-db-0", v1alpha1.ConditionDataReady)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPVCSelectedByOtherGroup))
	g.Expect(c.Message).To(ContainSubstring("already protected by VolumeReplicationGroup other"))
	g.Expect(f.backend.Protected()).To(BeEmpty())
}

// A group of the same name in another namespace (an admin namespace's group protecting app) owns
// the PVC: the labels name the group's namespace as well as its name.
func TestReconcileRefusesAPVCOfAGroupOfTheSameNameInAnotherNamespace(t *testing.T) {
	g := NewWithT(t)
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion = ""
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.ResourceVersion, pvc.Labels = "", map[string]string{"app": "db", LabelProtectedBy: "db", LabelProtectedByNamespace: "drover-system"}
	f := newFixture(t, pv, pvc)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	c := pvcCondition(g, f.group(g), "data-db-0", v1alpha1.ConditionDataReady)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonPVCSelectedByOtherGroup))
	g.Expect(c.Message).To(ContainSubstring("already protected by VolumeReplicationGroup drover-system/db"))
	g.Expect(f.backend.Protected()).To(BeEmpty())
}

// A PVC labelled before the namespace label existed stays the group's, and is labelled with it.
func TestAPVCLabelledByNameAloneIsKeptAndGetsTheNamespaceLabel(t *testing.T) {
	g := NewWithT(t)
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion = ""
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.ResourceVersion, pvc.Labels, pvc.Finalizers = "", map[string]string{"app": "db", LabelProtectedBy: "db"}, []string{PVCFinalizer}
	f := newFixture(t, pv, pvc)

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	got := &corev1.PersistentVolumeClaim{}
	g.Expect(f.client.Get(context.Background(), client.ObjectKeyFromObject(pvc), got)).To(Succeed())
	g.Expect(got.Labels).To(HaveKeyWithValue(LabelProtectedByNamespace, "app"))
	c := pvcCondition(g, f.group(g), "data-db-0", v1alpha1.ConditionDataReady)
	g.Expect(c.Reason).NotTo(Equal(v1alpha1.ReasonPVCSelectedByOtherGroup))
}

func TestADeletedPVCIsReleasedSoItsDeletionCompletes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.Annotations = map[string]string{AnnotationOriginalReclaimPolicy: "Delete"}
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Finalizers = []string{PVCFinalizer}
	f := newFixture(t, pv, pvc)
	store := f.stores["s3-east"]
	g.Expect(store.Put(ctx, "app/db/pvs/pv-0.json", []byte("{}"))).To(Succeed())
	g.Expect(store.Put(ctx, "app/db/pvcs/app/data-db-0.json", []byte("{}"))).To(Succeed())
	g.Expect(f.client.Delete(ctx, pvc)).To(Succeed(), "the owner deletes the PVC; drover's finalizer holds it")

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	err = f.client.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
	g.Expect(err).To(MatchError(ContainSubstring("not found")), "released, the deletion completed")
	gotPV := &corev1.PersistentVolume{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "pv-0"}, gotPV)).To(Succeed())
	g.Expect(gotPV.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete), "the original policy is back")
	g.Expect(gotPV.Annotations).NotTo(HaveKey(AnnotationOriginalReclaimPolicy))
	keys, _ := store.List(ctx, "app/db/pv")
	g.Expect(keys).To(BeEmpty(), "its metadata is removed from the stores")
	g.Expect(f.group(g).Status.ProtectedPVCs).To(BeEmpty())
}

func TestADeletedPVCStaysProtectedDuringARelocation(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv := boundPV("pv-0", "app", "data-db-0")
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Finalizers = []string{PVCFinalizer}
	f := newFixture(t, pv, pvc)
	f.vrg.Spec.FinalSyncRequest = "2026-11-30T01:00:00Z"
	g.Expect(f.client.Update(ctx, f.vrg)).To(Succeed())
	g.Expect(f.client.Delete(ctx, pvc)).To(Succeed())

	_, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	got := &corev1.PersistentVolumeClaim{}
	g.Expect(f.client.Get(ctx, client.ObjectKeyFromObject(pvc), got)).To(Succeed())
	g.Expect(got.Finalizers).To(ContainElement(PVCFinalizer), "the final sync still needs it")
	g.Expect(dataKeys(g, f.stores["s3-east"], "pv")).To(HaveLen(2), "its metadata stays for the peer's restore")
}

func TestOnlyAGroupsOwnStatusChangeIsIgnored(t *testing.T) {
	base := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db", Generation: 1}}
	statusOnly := base.DeepCopy()
	statusOnly.Status.State = v1alpha1.StatePrimary
	spec := base.DeepCopy()
	spec.Generation = 2
	finalizer := base.DeepCopy()
	finalizer.Finalizers = []string{Finalizer}
	deleted := base.DeepCopy()
	deleted.DeletionTimestamp = ptr.To(metav1.Now())
	annotated := func(kv ...string) *v1alpha1.VolumeReplicationGroup {
		vrg := base.DeepCopy()
		vrg.Annotations = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			vrg.Annotations[kv[i]] = kv[i+1]
		}
		return vrg
	}
	tests := []struct {
		name string
		new  *v1alpha1.VolumeReplicationGroup
		want bool
	}{
		{"a status change alone is ignored", statusOnly, false},
		{"a spec change counts", spec, true},
		{"a finalizer change counts", finalizer, true},
		{"a deletion counts", deleted, true},
		{"the capture's time alone is ignored", annotated(AnnotationKubeObjectsCapturedAt, "2026-12-02T10:00:00Z"), false},
		{"the claimed epoch alone is ignored", annotated(AnnotationPrimaryEpoch, `{"epoch":2}`), false},
		{"the final capture's record alone is ignored", annotated(AnnotationKubeObjectsFinalCapture, "2"), false},
		{"the restore's record counts: it wakes the first capture", annotated(AnnotationKubeObjectsRestored, "2"), true},
		{"the fence counts", annotated(webhook.AnnotationFence, webhook.FenceRelocate), true},
		{"another annotation with a bookkeeping one counts", annotated(AnnotationKubeObjectsCapturedAt, "t", AnnotationDemotedAt, "t"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := notOnlyStatusChanged().Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tt.new})
			NewWithT(t).Expect(got).To(Equal(tt.want))
			back := notOnlyStatusChanged().Update(event.UpdateEvent{ObjectOld: tt.new, ObjectNew: base})
			NewWithT(t).Expect(back).To(Equal(tt.want), "and the change back")
		})
	}
}

func TestAPodOrAnAttachmentWakesOnlyTheGroupsThatWaitForTheirConsumers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pv := boundPV("pv-0", "app", "data-db-0")
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Labels = map[string]string{"app": "db"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db-0"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}}},
	}}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va-0"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "block.lab.drover.io", NodeName: "node-0", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-0")},
	}}
	f := newFixture(t, pv, pvc)
	want := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(f.vrg)}}

	g.Expect(f.r.pvcToVRGs(ctx, pvc)).To(Equal(want), "the PVC wakes its group whatever its role")
	g.Expect(f.r.podToVRGs(ctx, pod)).To(BeEmpty(), "a primary reads no pod")
	g.Expect(f.r.volumeAttachmentToVRGs(ctx, va)).To(BeEmpty(), "nor any attachment")

	vrg := f.group(g)
	vrg.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(f.client.Update(ctx, vrg)).To(Succeed())
	g.Expect(f.r.podToVRGs(ctx, pod)).To(Equal(want), "a demotion waits for the pod to end")
	g.Expect(f.r.volumeAttachmentToVRGs(ctx, va)).To(Equal(want), "and for the attachment")
}

func TestAStoreThatRefusesIsAnErrorRetriedWithBackoff(t *testing.T) {
	g := NewWithT(t)
	pv := boundPV("pv-0", "app", "data-db-0")
	pv.ResourceVersion = ""
	pvc := boundPVC("app", "data-db-0", "pv-0")
	pvc.Labels, pvc.Finalizers, pvc.ResourceVersion = map[string]string{"app": "db"}, nil, ""
	f := newFixture(t, pv, pvc)
	f.backend.SetStatus("app/data-db-0", replication.SyncStatus{ReplicationID: "vrc-5s", LastSyncTime: ptr.To(metav1.NewTime(t0))})
	f.stores["s3-west"].SetError(objectstore.ErrUnauthorized)

	_, err := f.reconcile(g)
	g.Expect(err).To(MatchError(ContainSubstring("S3 profile s3-west")), "credentials refused need a person: an error, with backoff")
}

func TestOnlyStoresDownNeedsEveryJoinedErrorToBeAStoreThatDoesNotAnswer(t *testing.T) {
	down := fmt.Errorf("failed to write the metadata to S3 profile s3-east: %w", objectstore.ErrUnreachable)
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"one store down", down, true},
		{"two stores down", errors.Join(down, fmt.Errorf("s3-west: %w", objectstore.ErrUnreachable)), true},
		{"nested joins", errors.Join(errors.Join(down), down), true},
		{"a store down and a PVC failing", errors.Join(down, errors.New("failed to patch PVC app/data")), false},
		{"a store refusing", fmt.Errorf("s3-west: %w", objectstore.ErrUnauthorized), false},
	} {
		if got := onlyStoresDown(tc.err); got != tc.want {
			t.Errorf("%s: onlyStoresDown(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestASecondarysSyncWakesItsGroupOnlyWhileItWaitsForTheFinalSync(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	synced := func(state replicationv1alpha1.ReplicationState, at time.Time) *replicationv1alpha1.VolumeReplication {
		vr := &replicationv1alpha1.VolumeReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", ResourceVersion: at.Format(time.RFC3339),
			Labels: map[string]string{volrep.LabelVRGName: f.vrg.Name, volrep.LabelVRGNamespace: f.vrg.Namespace}}}
		vr.Spec.ReplicationState = state
		vr.Status.State = replicationv1alpha1.SecondaryState
		vr.Status.Conditions = []metav1.Condition{{Type: replicationv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Demoted"}}
		vr.Status.LastSyncTime, vr.Status.LastSyncBytes = &metav1.Time{Time: at}, ptr.To(int64(at.Second()))
		return vr
	}
	t0 := time.Date(2026, 12, 2, 19, 0, 0, 0, time.UTC)
	wakes := func(old, new *replicationv1alpha1.VolumeReplication) bool {
		return f.r.volumeReplicationChangeMatters(event.UpdateEvent{ObjectOld: old, ObjectNew: new})
	}
	g := NewWithT(t)
	g.Expect(wakes(synced(replicationv1alpha1.Primary, t0), synced(replicationv1alpha1.Primary, t0.Add(5*time.Second)))).To(BeTrue(),
		"a primary's sync is what its status reports")
	g.Expect(wakes(synced(replicationv1alpha1.Secondary, t0), synced(replicationv1alpha1.Secondary, t0.Add(5*time.Second)))).To(BeFalse(),
		"a settled secondary's status says nothing of its syncs")
	degraded := synced(replicationv1alpha1.Secondary, t0.Add(5*time.Second))
	degraded.Status.Conditions = append(degraded.Status.Conditions, metav1.Condition{Type: replicationv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "VolumeDegraded"})
	g.Expect(wakes(synced(replicationv1alpha1.Secondary, t0), degraded)).To(BeTrue(), "the storage's other news wake it")
	relabelled := synced(replicationv1alpha1.Secondary, t0)
	relabelled.Labels = map[string]string{volrep.LabelVRGName: f.vrg.Name}
	g.Expect(wakes(synced(replicationv1alpha1.Secondary, t0), relabelled)).To(BeTrue(), "and so does any other change")

	vrg := f.group(g)
	vrg.Spec.FinalSyncRequest = "relocate-1"
	g.Expect(f.client.Update(ctx, vrg)).To(Succeed())
	g.Expect(wakes(synced(replicationv1alpha1.Secondary, t0), synced(replicationv1alpha1.Secondary, t0.Add(5*time.Second)))).To(BeTrue(),
		"a relocated group proves its final sync by the secondary's sync")
	vrg.Status.FinalSync = &v1alpha1.FinalSyncStatus{Request: "relocate-1", CompletionTime: metav1.Now()}
	g.Expect(f.client.Status().Update(ctx, vrg)).To(Succeed())
	g.Expect(wakes(synced(replicationv1alpha1.Secondary, t0), synced(replicationv1alpha1.Secondary, t0.Add(5*time.Second)))).To(BeFalse(),
		"and needs it no more once recorded")

	g.Expect(f.client.Delete(ctx, vrg)).To(Succeed())
	g.Expect(wakes(synced(replicationv1alpha1.Secondary, t0), synced(replicationv1alpha1.Secondary, t0.Add(5*time.Second)))).To(BeTrue(),
		"a group that cannot be read is woken")
}

func TestADestinationsSyncWakesOnlyAGroupAskedToBePrimary(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	received := func(at time.Time) *volsyncv1alpha1.ReplicationDestination {
		rd := &volsyncv1alpha1.ReplicationDestination{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", ResourceVersion: at.Format(time.RFC3339),
			Labels:      map[string]string{volsync.LabelVRGName: f.vrg.Name, volsync.LabelVRGNamespace: f.vrg.Namespace},
			Annotations: map[string]string{volsync.AnnotationReceivedSeen: at.Add(-time.Second).Format(time.RFC3339) + " " + at.Format(time.RFC3339)}}}
		rd.Status = &volsyncv1alpha1.ReplicationDestinationStatus{
			LastSyncTime: &metav1.Time{Time: at}, LastSyncStartTime: &metav1.Time{Time: at.Add(-time.Second)},
			LastSyncDuration: &metav1.Duration{Duration: time.Second},
			LatestImage:      &corev1.TypedLocalObjectReference{Kind: "VolumeSnapshot", Name: "snap-" + at.Format("150405")},
			RsyncTLS:         &volsyncv1alpha1.ReplicationDestinationRsyncTLSStatus{Address: ptr.To("10.0.0.1")},
		}
		return rd
	}
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	wakes := func(old, new *volsyncv1alpha1.ReplicationDestination) bool {
		return f.r.destinationChangeMatters(event.UpdateEvent{ObjectOld: old, ObjectNew: new})
	}
	g := NewWithT(t)
	vrg := f.group(g)
	vrg.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(f.client.Update(ctx, vrg)).To(Succeed())
	g.Expect(wakes(received(t0), received(t0.Add(time.Minute)))).To(BeFalse(), "a secondary's pass reads no sync of its destinations")
	due := received(t0.Add(5 * time.Second))
	due.Annotations[volsync.AnnotationReceivedSeen] = received(t0).Annotations[volsync.AnnotationReceivedSeen]
	g.Expect(wakes(received(t0), due)).To(BeTrue(), "but a sync one interval (5s) after the one recorded: the pass records the point it holds")
	due.Status.LastSyncTime = &metav1.Time{Time: t0.Add(4 * time.Second)}
	g.Expect(wakes(received(t0), due)).To(BeFalse(), "not before")
	recorded := received(t0)
	recorded.Annotations[volsync.AnnotationReceivedPoint] = t0.Add(-time.Minute).Format(time.RFC3339)
	g.Expect(wakes(received(t0), recorded)).To(BeFalse(), "recording it wakes nothing")
	listening, receiving := received(t0), received(t0)
	listening.Status.Conditions = []metav1.Condition{{Type: volsyncv1alpha1.ConditionSynchronizing, Status: metav1.ConditionTrue,
		Reason: volsyncv1alpha1.SynchronizingReasonSync, Message: "Listening"}}
	receiving.Status.Conditions = []metav1.Condition{{Type: volsyncv1alpha1.ConditionSynchronizing, Status: metav1.ConditionTrue,
		Reason: volsyncv1alpha1.SynchronizingReasonSync, Message: "Received 4096 bytes"}}
	g.Expect(wakes(listening, receiving)).To(BeFalse(), "nor the steps of each sync")
	moved := received(t0.Add(time.Minute))
	moved.Status.RsyncTLS.Address = ptr.To("10.0.0.2")
	g.Expect(wakes(received(t0), moved)).To(BeTrue(), "a new address is what the secondary reports to its peer")
	failing := received(t0.Add(time.Minute))
	failing.Status.Conditions = []metav1.Condition{{Type: volsyncv1alpha1.ConditionSynchronizing, Status: metav1.ConditionFalse,
		Reason: volsyncv1alpha1.SynchronizingReasonError, Message: "refused"}}
	g.Expect(wakes(listening, failing)).To(BeTrue(), "an error wakes it, as any other change does")

	vrg = f.group(g)
	vrg.Spec.ReplicationState = v1alpha1.ReplicationStatePrimary
	g.Expect(f.client.Update(ctx, vrg)).To(Succeed())
	g.Expect(wakes(received(t0), received(t0.Add(time.Minute)))).To(BeTrue(), "a promotion's restore waits for the latest image")

	g.Expect(f.client.Delete(ctx, vrg)).To(Succeed())
	g.Expect(wakes(received(t0), received(t0.Add(time.Minute)))).To(BeTrue(), "a group that cannot be read is woken")
}
