package vrg

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

func TestWorkloadsReadySaysTheWorstProblemFirstAndWaitsForAWorkloadOnlyForAWhile(t *testing.T) {
	starting := workloadProblem{v1alpha1.ReasonPodsNotRunning, "StatefulSet a/db has 0 of 1 pods ready: pod db-0 is Pending"}
	refused := workloadProblem{v1alpha1.ReasonPodsRefused, "Deployment a/web has 0 of 1 pods available: FailedCreate: exceeded quota"}
	unbound := workloadProblem{v1alpha1.ReasonPVCNotBound, "PVC a/data is Pending"}
	for _, tc := range []struct {
		name       string
		found      int
		problems   []workloadProblem
		since      time.Duration
		wantStatus metav1.ConditionStatus
		wantReason string
		wantIn     string
	}{
		{"workloads that run are ready", 2, nil, time.Second, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the 2 workloads"},
		{"a refusal comes before a PVC and a starting pod", 3, []workloadProblem{starting, unbound, refused}, time.Second,
			metav1.ConditionFalse, v1alpha1.ReasonPodsRefused, "exceeded quota (and 2 more)"},
		{"a PVC not bound comes before a starting pod", 1, []workloadProblem{starting, unbound}, time.Second,
			metav1.ConditionFalse, v1alpha1.ReasonPVCNotBound, "PVC a/data is Pending (and 1 more)"},
		{"no workload yet: wait for one", 0, nil, time.Minute, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "waiting for a Deployment or StatefulSet"},
		{"no workload after the window: nothing to judge", 0, nil, workloadsWindow + time.Second, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "nothing to judge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := workloadsCondition(tc.found, tc.problems, tc.since)
			g.Expect(c.Type).To(Equal(v1alpha1.ConditionWorkloadsReady))
			g.Expect(c.Status).To(Equal(tc.wantStatus), c.Message)
			g.Expect(c.Reason).To(Equal(tc.wantReason), c.Message)
			g.Expect(c.Message).To(ContainSubstring(tc.wantIn))
		})
	}
}
