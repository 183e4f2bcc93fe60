package volrep

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

func groupClass(name, provisioner string) *replicationv1alpha1.VolumeGroupReplicationClass {
	return &replicationv1alpha1.VolumeGroupReplicationClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: replicationv1alpha1.VolumeGroupReplicationClassSpec{Provisioner: provisioner}}
}

// memberContext is pvcContext for a member of consistency group "wal".
func memberContext() *replication.PVCContext {
	pc := pvcContext(5*time.Second, nil)
	pc.Group = &replication.GroupContext{Name: "wal", Label: "db.wal"}
	return pc
}

func TestProtectOfAMemberCreatesOneVolumeGroupReplicationAndNoVolumeReplication(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newClient(t, class("vrc-5s", driver, "5s", nil), groupClass("vgrc", driver), groupClass("other", "other.csi.example"))
	b, pc := New(c), memberContext()

	res := b.Protect(ctx, pc)
	g.Expect(res.Outcome).To(Equal(replication.OutcomeRetry), res.String())
	g.Expect(res.Message).To(ContainSubstring("waiting for the storage to act on VolumeGroupReplication app/db-wal"))
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db-wal"}, vgr)).To(Succeed())
	g.Expect(vgr.Spec.VolumeGroupReplicationClassName).To(Equal("vgrc"), "the one group class of the PVC's provisioner")
	g.Expect(vgr.Spec.VolumeReplicationClassName).To(Equal("vrc-5s"), "the class a PVC of the interval gets on its own")
	g.Expect(vgr.Spec.Source.Selector.MatchLabels).To(Equal(map[string]string{v1alpha1.LabelConsistencyGroup: "db.wal"}))
	g.Expect(vgr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Primary))
	g.Expect(vgr.Spec.VolumeGroupReplicationContentName).To(BeEmpty(), "a new group: the storage makes its content")
	g.Expect(vgr.Labels).To(Equal(map[string]string{LabelVRGName: "db", LabelVRGNamespace: "app"}))
	list := &replicationv1alpha1.VolumeReplicationList{}
	g.Expect(c.List(ctx, list)).To(Succeed())
	g.Expect(list.Items).To(BeEmpty(), "a member is never replicated on its own")

	// The storage reports the group primary, but without the PVC yet: not Done.
	synced := metav1.NewTime(time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC))
	vgr.Status = replicationv1alpha1.VolumeGroupReplicationStatus{VolumeReplicationStatus: replicationv1alpha1.VolumeReplicationStatus{
		State: replicationv1alpha1.PrimaryState, ObservedGeneration: vgr.Generation, LastSyncTime: &synced,
		Conditions: []metav1.Condition{{Type: replicationv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Promoted", LastTransitionTime: synced}},
	}, PersistentVolumeClaimsRefList: []corev1.LocalObjectReference{{Name: "log-db-0"}}}
	g.Expect(c.Status().Update(ctx, vgr)).To(Succeed())
	res = b.Protect(ctx, pc)
	g.Expect(res.Message).To(ContainSubstring("waiting for VolumeGroupReplication app/db-wal to take PVC data-db-0 in"))

	vgr.Status.PersistentVolumeClaimsRefList = append(vgr.Status.PersistentVolumeClaimsRefList, corev1.LocalObjectReference{Name: "data-db-0"})
	g.Expect(c.Status().Update(ctx, vgr)).To(Succeed())
	g.Expect(b.Protect(ctx, pc).IsDone()).To(BeTrue())
	st, err := b.Status(ctx, pc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.LastSyncTime.Time).To(BeTemporally("==", synced.Time), "the member reports the group's point")
	g.Expect(st.Primary).To(BeTrue())

	g.Expect(b.Demote(ctx, pc, true).Outcome).To(Equal(replication.OutcomeRetry))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vgr), vgr)).To(Succeed())
	g.Expect(vgr.Spec.ReplicationState).To(Equal(replicationv1alpha1.Secondary), "a demotion demotes the group")
	g.Expect(vgr.Spec.AutoResync).To(BeTrue())
}

func TestProtectOfAMemberRefusesStorageThatCannotKeepTheGroup(t *testing.T) {
	tests := []struct {
		name       string
		objs       []client.Object
		wantReason string
		wantIn     []string
	}{
		{
			name:       "no VolumeGroupReplicationClass of the provisioner: ConsistencyGroupUnsupported, naming the group, the PVC and what to create",
			objs:       []client.Object{class("vrc-5s", driver, "5s", nil), groupClass("other", "other.csi.example")},
			wantReason: v1alpha1.ReasonConsistencyGroupUnsupported,
			wantIn: []string{`no VolumeGroupReplicationClass has provisioner "block.lab.drover.io" for PVC app/data-db-0 of consistency group wal`,
				"create a VolumeGroupReplicationClass with spec.provisioner block.lab.drover.io", "or remove PVC app/data-db-0 from group wal"},
		},
		{
			name: "a group of another storage: ConsistencyGroupUnsupported",
			objs: []client.Object{class("vrc-5s", driver, "5s", nil), groupClass("other", "other.csi.example"), &replicationv1alpha1.VolumeGroupReplication{
				ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db-wal", Labels: map[string]string{LabelVRGName: "db", LabelVRGNamespace: "app"}},
				Spec:       replicationv1alpha1.VolumeGroupReplicationSpec{VolumeGroupReplicationClassName: "other"},
			}},
			wantReason: v1alpha1.ReasonConsistencyGroupUnsupported,
			wantIn:     []string{"a group's PVCs must share one storage", "remove PVC app/data-db-0 from group wal"},
		},
		{
			name:       "another's VolumeGroupReplication of the name: ReplicationConflict",
			objs:       []client.Object{&replicationv1alpha1.VolumeGroupReplication{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db-wal"}}},
			wantReason: v1alpha1.ReasonReplicationConflict,
			wantIn:     []string{"VolumeGroupReplication app/db-wal exists and does not belong to VolumeReplicationGroup app/db"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newClient(t, tt.objs...)
			res := New(c).Protect(context.Background(), memberContext())
			g.Expect(res.Outcome).To(Equal(replication.OutcomeFailed), res.String())
			g.Expect(res.Reason).To(Equal(tt.wantReason))
			for _, s := range tt.wantIn {
				g.Expect(res.Message).To(ContainSubstring(s))
			}
			list := &replicationv1alpha1.VolumeReplicationList{}
			g.Expect(c.List(context.Background(), list)).To(Succeed())
			g.Expect(list.Items).To(BeEmpty(), "never a fallback to a VolumeReplication of its own")
		})
	}
}

func TestAPromotionRestoresTheGroupUnderTheHandleThePVCCarries(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newClient(t, class("vrc-5s", driver, "5s", nil), groupClass("vgrc", driver))
	pc := memberContext()
	pc.PVC.Annotations = map[string]string{v1alpha1.AnnotationConsistencyGroupHandle: "group-east-1"}

	g.Expect(New(c).Protect(ctx, pc).Outcome).To(Equal(replication.OutcomeRetry))
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db-wal"}, vgr)).To(Succeed())
	g.Expect(vgr.Spec.VolumeGroupReplicationContentName).To(Equal("drover-app-db-wal"))
	content := &replicationv1alpha1.VolumeGroupReplicationContent{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "drover-app-db-wal"}, content)).To(Succeed())
	g.Expect(content.Spec.VolumeGroupReplicationHandle).To(Equal("group-east-1"), "the group the storage mirrored")
	g.Expect(content.Spec.Provisioner).To(Equal(driver))
	g.Expect(content.Spec.VolumeGroupReplicationClassName).To(Equal("vgrc"))
	g.Expect(content.Spec.Source.VolumeHandles).To(Equal([]string{"pv-0"}))
}

func TestCleanupOfAMemberDeletesItsOwnVolumeReplicationFirstThenTheGroup(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	own := &replicationv1alpha1.VolumeReplication{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data-db-0", Labels: map[string]string{LabelVRGName: "db", LabelVRGNamespace: "app"}},
		Spec:       replicationv1alpha1.VolumeReplicationSpec{DataSource: corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "data-db-0"}},
	}
	vgr := &replicationv1alpha1.VolumeGroupReplication{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db-wal", Labels: map[string]string{LabelVRGName: "db", LabelVRGNamespace: "app"}},
	}
	c := newClient(t, own, vgr)
	b, pc := New(c), memberContext()

	g.Expect(b.Cleanup(ctx, pc).IsDone()).To(BeFalse())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(own), own)).NotTo(Succeed(), "the member's own VolumeReplication goes first")
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vgr), vgr)).To(Succeed(), "the group stays meanwhile")
	g.Expect(b.Cleanup(ctx, pc).IsDone()).To(BeFalse())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(vgr), vgr)).NotTo(Succeed(), "then the group")
	g.Expect(b.Cleanup(ctx, pc).IsDone()).To(BeTrue())
}
