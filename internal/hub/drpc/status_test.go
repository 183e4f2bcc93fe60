package drpc

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

func TestASummaryKeepsTheDataConditionsStatusesAndOnlyTheConditionsThatSaySomethingIsWrong(t *testing.T) {
	g := NewWithT(t)
	cond := func(t string, s metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, LastTransitionTime: metav1.Now()}
	}
	last := metav1.NewTime(time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC))
	primary := &v1alpha1.VolumeReplicationGroup{
		Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStatePrimary},
		Status: v1alpha1.VolumeReplicationGroupStatus{State: v1alpha1.StatePrimary, ObservedGeneration: 3, LastGroupSyncTime: &last, AgentVersion: "v1.2.3",
			Conditions: []metav1.Condition{
				cond(v1alpha1.ConditionDataReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "all 3 PVCs are primary"),
				cond(v1alpha1.ConditionDataProtected, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "1 of 3 PVCs has not synced yet"),
				cond(v1alpha1.ConditionClusterDataProtected, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the metadata is in S3"),
				cond(v1alpha1.ConditionKubeObjectsReady, metav1.ConditionUnknown, v1alpha1.ReasonProgressing, "capturing"),
			}},
	}
	s := summary("east", primary)
	g.Expect(s.Cluster).To(Equal("east"))
	g.Expect(s.ReplicationState).To(Equal(v1alpha1.ReplicationStatePrimary))
	g.Expect(s.State).To(Equal(v1alpha1.StatePrimary))
	g.Expect(s.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(s.AgentVersion).To(Equal("v1.2.3"), "the version of the agent that wrote the group's status")
	g.Expect(s.LastGroupSyncTime).To(Equal(&last))
	g.Expect(s.DataReady).To(Equal(metav1.ConditionTrue))
	g.Expect(s.DataProtected).To(Equal(metav1.ConditionFalse))
	g.Expect(s.Problems).To(ConsistOf(primary.Status.Conditions[1], primary.Status.Conditions[3]), "the conditions that are not True, with their messages")

	secondary := &v1alpha1.VolumeReplicationGroup{
		Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStateSecondary},
		Status: v1alpha1.VolumeReplicationGroupStatus{State: v1alpha1.StateSecondary, Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionDataReady, metav1.ConditionTrue, v1alpha1.ReasonSecondary, "secondary"),
			cond(v1alpha1.ConditionDataProtected, metav1.ConditionUnknown, v1alpha1.ReasonSecondary, "the primary reports it"),
			cond(v1alpha1.ConditionClusterDataReady, metav1.ConditionFalse, v1alpha1.ReasonPVCInUse, "PVC data-db-0 is in use by pod db-0"),
		}},
	}
	s = summary("west", secondary)
	g.Expect(s.DataReady).To(Equal(metav1.ConditionTrue))
	g.Expect(s.DataProtected).To(Equal(metav1.ConditionUnknown))
	g.Expect(s.Problems).To(ConsistOf(secondary.Status.Conditions[2]), "a secondary's deferrals to the primary are no problem")
	g.Expect(summary("west", &v1alpha1.VolumeReplicationGroup{}).DataReady).To(BeEmpty(), "not reported yet")
}
