package lab

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrintDroverStatusSaysWhatIsDownAndWhy(t *testing.T) {
	st := DroverStatus{
		Processes: []DroverProcess{
			{Cluster: Hub, Name: HubDeployment, Pod: "drover-hub-6bb6c74c79-7zrd9", PID: 42, Running: true, RSSKiB: 41 * 1024},
			{Cluster: East, Name: AgentDeployment, Pod: "drover-agent-865c44c5db-vmzhj", Restarts: 3},
		},
		HubAnswered: true,
		Clusters: []DRClusterStatus{{
			Name:      East,
			Validated: &metav1.Condition{Status: metav1.ConditionTrue},
			Reachable: &metav1.Condition{Status: metav1.ConditionFalse, Reason: "Unreachable", Message: "unreachable since 12:04:10"},
		}, {Name: West}},
		Policies: []DRPolicyStatus{{Name: PolicyVolRep, Validated: &metav1.Condition{Status: metav1.ConditionTrue}}},
	}
	var out strings.Builder
	if err := PrintDroverStatus(&out, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"DROVER POD                     CLUSTER  STATE",
		"drover-hub-6bb6c74c79-7zrd9    hub      running",
		"drover-agent-865c44c5db-vmzhj  east     not running: see `kubectl -n drover-system describe pod drover-agent-865c44c5db-vmzhj`  3",
		"east       True       False (Unreachable: unreachable since 12:04:10)",
		"west       -          -",
		"lab-volrep  True",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestPrintDroverStatusPrintsNothingForALabWithoutDroverAndAHubThatIsDown(t *testing.T) {
	var out strings.Builder
	if err := PrintDroverStatus(&out, DroverStatus{}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("want no output, got:\n%s", out.String())
	}
}
