package drpc

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/drover-io/drover/api/v1alpha1"
)

func TestTheGroupsTakeThePolicysMoversAndAddressAndTheSecondaryReceivesABlockPVCAsBlock(t *testing.T) {
	g := NewWithT(t)
	drpc := &v1alpha1.DRPlacementControl{}
	policy := &v1alpha1.DRPolicy{Spec: v1alpha1.DRPolicySpec{
		VolSyncMovers: v1alpha1.VolSyncMoversPrivileged, VolSyncAddress: v1alpha1.VolSyncAddressServiceExport,
	}}
	spec := groupSpec(drpc, policy, v1alpha1.ReplicationStateSecondary, "", "")
	g.Expect(spec.VolSync).NotTo(BeNil())
	g.Expect(spec.VolSync.Movers).To(Equal(v1alpha1.VolSyncMoversPrivileged), "the policy's movers reach the group")
	g.Expect(spec.VolSync.Address).To(Equal(v1alpha1.VolSyncAddressServiceExport), "the policy's address reaches the group")
	g.Expect(groupSpec(drpc, &v1alpha1.DRPolicy{}, v1alpha1.ReplicationStateSecondary, "", "").VolSync).To(BeNil())

	primary := &v1alpha1.VolumeReplicationGroup{
		Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStatePrimary},
		Status: v1alpha1.VolumeReplicationGroupStatus{ProtectedPVCs: []v1alpha1.ProtectedPVC{{
			Namespace: "app", Name: "raw", Backend: v1alpha1.BackendVolSync, StorageClassName: "lab-block",
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: ptr.To(resource.MustParse("1Gi")),
			VolumeMode: ptr.To(corev1.PersistentVolumeBlock),
		}}},
	}
	handOff(&spec, types.NamespacedName{Namespace: "app", Name: "db"}, nil, primary)
	g.Expect(spec.VolSync.ReceivePVCs).To(HaveLen(1))
	g.Expect(spec.VolSync.ReceivePVCs[0].VolumeMode).To(HaveValue(Equal(corev1.PersistentVolumeBlock)), "a Block PVC is received as Block")
	g.Expect(spec.VolSync.Movers).To(Equal(v1alpha1.VolSyncMoversPrivileged), "the hand-off keeps the movers")
	g.Expect(spec.VolSync.Address).To(Equal(v1alpha1.VolSyncAddressServiceExport), "the hand-off keeps the address")
}

// The DRPlacementControl's mover user reaches both groups; without one, the secondary's
// destination of a PVC runs as the user the primary reports for that PVC.
func TestTheMoversUserGoesFromTheDRPCToTheGroupsAndFromThePrimarysPVCsToTheSecondary(t *testing.T) {
	g := NewWithT(t)
	user := &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 1000, FSGroup: ptr.To[int64](2000)}
	drpc := &v1alpha1.DRPlacementControl{Spec: v1alpha1.DRPlacementControlSpec{VolSyncMoverSecurityContext: user}}
	for _, state := range []v1alpha1.ReplicationState{v1alpha1.ReplicationStatePrimary, v1alpha1.ReplicationStateSecondary} {
		spec := groupSpec(drpc, &v1alpha1.DRPolicy{}, state, "", "")
		g.Expect(spec.VolSync).NotTo(BeNil())
		g.Expect(spec.VolSync.MoverSecurityContext).To(Equal(user), "the %s group takes the DRPlacementControl's mover user", state)
	}

	reported := &v1alpha1.VolSyncMoverSecurityContext{RunAsUser: 26, RunAsGroup: ptr.To[int64](26)}
	primary := &v1alpha1.VolumeReplicationGroup{
		Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStatePrimary},
		Status: v1alpha1.VolumeReplicationGroupStatus{ProtectedPVCs: []v1alpha1.ProtectedPVC{{
			Namespace: "app", Name: "data", Backend: v1alpha1.BackendVolSync, StorageClassName: "lab-file",
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Capacity: ptr.To(resource.MustParse("1Gi")),
			MoverSecurityContext: reported,
		}}},
	}
	spec := groupSpec(&v1alpha1.DRPlacementControl{}, &v1alpha1.DRPolicy{}, v1alpha1.ReplicationStateSecondary, "", "")
	handOff(&spec, types.NamespacedName{Namespace: "app", Name: "db"}, nil, primary)
	g.Expect(spec.VolSync.MoverSecurityContext).To(BeNil())
	g.Expect(spec.VolSync.ReceivePVCs).To(HaveLen(1))
	g.Expect(spec.VolSync.ReceivePVCs[0].MoverSecurityContext).To(Equal(reported), "the destination runs as the primary's movers do")
}

// A secondary whose VolSync destination the peer cannot reach says so in DataProtected; the hub
// takes that condition for PeerReady, and nothing else a group reports.
func TestAnUnreachableVolSyncDestinationIsTheSecondarysProblem(t *testing.T) {
	g := NewWithT(t)
	group := func(state v1alpha1.ReplicationState, reason string) *v1alpha1.VolumeReplicationGroup {
		return &v1alpha1.VolumeReplicationGroup{
			Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: state},
			Status: v1alpha1.VolumeReplicationGroupStatus{Conditions: []metav1.Condition{{
				Type: v1alpha1.ConditionDataProtected, Status: metav1.ConditionFalse, Reason: reason, Message: "choose spec.volSyncAddress",
			}}},
		}
	}
	c := unreachableDestination(group(v1alpha1.ReplicationStateSecondary, v1alpha1.ReasonVolSyncAddressUnreachable))
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Message).To(Equal("choose spec.volSyncAddress"))
	g.Expect(unreachableDestination(group(v1alpha1.ReplicationStatePrimary, v1alpha1.ReasonVolSyncAddressUnreachable))).To(BeNil())
	g.Expect(unreachableDestination(group(v1alpha1.ReplicationStateSecondary, v1alpha1.ReasonVolSyncMoverUserUnknown))).NotTo(BeNil(),
		"a destination whose mover has no user is the secondary's problem too")
	g.Expect(unreachableDestination(group(v1alpha1.ReplicationStateSecondary, v1alpha1.ReasonMoverFailed))).To(BeNil())
	g.Expect(unreachableDestination(nil)).To(BeNil())
}
