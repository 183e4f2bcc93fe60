package vrg

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A workload created in a namespace wakes only the groups that remove that namespace's
// workloads (secondary, action Failover or Relocate, protecting kube objects), and only when the
// watch sees it created after its first list: a workload's updates and the agent's start wake
// no group.
func TestACreatedWorkloadWakesTheGroupsThatRemoveIt(t *testing.T) {
	g := NewWithT(t)
	scheme, err := testScheme()
	g.Expect(err).NotTo(HaveOccurred())
	group := func(name string, state v1alpha1.ReplicationState, action v1alpha1.DRAction, objects bool) client.Object {
		vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name},
			Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: state, Action: action}}
		if objects {
			vrg.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
		}
		return vrg
	}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		group("failed-over", v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover, true),
		group("relocated", v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate, true),
		group("no-action", v1alpha1.ReplicationStateSecondary, "", true),
		group("volumes-only", v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover, false),
		group("primary", v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover, true),
	).Build()}
	ctx := context.Background()
	var woken []string
	for _, req := range r.workloadToRemovingVRGs(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "late"}}) {
		woken = append(woken, req.Name)
	}
	g.Expect(woken).To(ConsistOf("failed-over", "relocated"))
	g.Expect(r.workloadToRemovingVRGs(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "late"}})).
		To(BeEmpty(), "a namespace no group protects")

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "late"}}
	g.Expect(createdAfterFirstList.Create(event.CreateEvent{Object: d})).To(BeTrue())
	g.Expect(createdAfterFirstList.Create(event.CreateEvent{Object: d, IsInInitialList: true})).To(BeFalse())
	g.Expect(createdAfterFirstList.Update(event.UpdateEvent{ObjectOld: d, ObjectNew: d})).To(BeFalse())
	g.Expect(createdAfterFirstList.Delete(event.DeleteEvent{Object: d})).To(BeFalse())
}
