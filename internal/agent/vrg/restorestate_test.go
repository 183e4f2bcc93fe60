package vrg

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A restore whose pass failed for a PVC is not complete, whatever the other PVCs did: True would
// place the application without that PVC (a Deployment's pod then never starts; a
// StatefulSet's makes an empty one) and, kept for the generation, the restore is never retried.
// complete() is the gate of the objects' restore and of the destinations' removal: a VolSync
// replica whose image could not be held (a conflict on the snapshot) stays in place, and a
// StatefulSet restored then would start its pod on the replica, which drover can then never
// replace (PVCConflict, in use).
func TestClusterDataReadyIsNeverTrueWhileAPVCsRestoreFailed(t *testing.T) {
	rs := &restoreState{store: "s3-east", conflicts: map[string]restoreConflict{}, restored: 1}
	if c := clusterDataReadyCondition(rs); c.Status != metav1.ConditionTrue {
		t.Fatalf("a restore with nothing failed = %s %s: %s, want True", c.Status, c.Reason, c.Message)
	}
	if !rs.complete() {
		t.Fatal("a restore with nothing failed, unbound or in conflict is not complete")
	}
	rs.failed = []string{"app/data: the latest image is being deleted", "app/logs: connection refused"}
	if rs.complete() {
		t.Error("a restore with failed PVCs is complete: the objects would be restored before those PVCs")
	}
	c := clusterDataReadyCondition(rs)
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonError {
		t.Fatalf("a restore with failed PVCs = %s %s, want False %s", c.Status, c.Reason, v1alpha1.ReasonError)
	}
	for _, want := range []string{"app/data: the latest image is being deleted", "(and 1 more PVCs)", "drover retries"} {
		if !strings.Contains(c.Message, want) {
			t.Fatalf("message %q does not say %q", c.Message, want)
		}
	}
}
