package drpolicy

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
)

func TestAPolicyIsValidatedWhenBothClustersAreAndTheirProfilesAreDefined(t *testing.T) {
	cluster := func(name, profile string, validated bool) *v1alpha1.DRCluster {
		c := &v1alpha1.DRCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.DRClusterSpec{S3ProfileName: profile}}
		if validated {
			c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded}}
		} else {
			c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoKubeconfig,
				Message: "no usable kubeconfig for DRCluster " + name}}
		}
		return c
	}
	// lost is a DRCluster as drover hub restore declares one that did not answer: no
	// kubeconfig, so never Validated.
	lost := func(name, profile string) *v1alpha1.DRCluster {
		c := cluster(name, profile, false)
		c.Spec.Lost = &v1alpha1.DRClusterLost{Reason: "it did not answer when drover hub restore rebuilt this hub"}
		return c
	}
	policy := &v1alpha1.DRPolicy{Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{"east", "west"},
		S3Profiles: []v1alpha1.S3Profile{{Name: "s3-east"}, {Name: "s3-west"}},
	}}
	for _, tc := range []struct {
		name     string
		clusters map[string]*v1alpha1.DRCluster
		status   metav1.ConditionStatus
		reason   string
		message  string
	}{
		{"both validated with their profiles", map[string]*v1alpha1.DRCluster{"east": cluster("east", "s3-east", true), "west": cluster("west", "s3-west", true)},
			metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "both clusters"},
		{"a missing cluster", map[string]*v1alpha1.DRCluster{"east": cluster("east", "s3-east", true)},
			metav1.ConditionFalse, v1alpha1.ReasonClusterNotValidated, "DRCluster west does not exist: join the cluster (drover cluster join), or, on a hub being restored, run drover hub restore again"},
		{"a cluster not validated", map[string]*v1alpha1.DRCluster{"east": cluster("east", "s3-east", true), "west": cluster("west", "s3-west", false)},
			metav1.ConditionFalse, v1alpha1.ReasonClusterNotValidated, "DRCluster west is not Validated"},
		{"a cluster declared lost, never Validated, beside a Validated one", map[string]*v1alpha1.DRCluster{"east": lost("east", "s3-east"), "west": cluster("west", "s3-west", true)},
			metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "DRCluster east is declared lost (its Fenced condition says why), so it need not be Validated"},
		{"a cluster declared lost beside one not Validated", map[string]*v1alpha1.DRCluster{"east": lost("east", "s3-east"), "west": cluster("west", "s3-west", false)},
			metav1.ConditionFalse, v1alpha1.ReasonClusterNotValidated, "DRCluster west is not Validated: no usable kubeconfig for DRCluster west"},
		{"a cluster declared lost whose profile the policy does not define", map[string]*v1alpha1.DRCluster{"east": lost("east", "s3-north"), "west": cluster("west", "s3-west", true)},
			metav1.ConditionFalse, v1alpha1.ReasonNoS3Profile, `DRCluster east names S3 profile "s3-north"`},
		{"both clusters declared lost", map[string]*v1alpha1.DRCluster{"east": lost("east", "s3-east"), "west": lost("west", "s3-west")},
			metav1.ConditionFalse, v1alpha1.ReasonClusterNotValidated, "both clusters are declared lost (east, west)"},
		{"a profile the policy does not define", map[string]*v1alpha1.DRCluster{"east": cluster("east", "s3-east", true), "west": cluster("west", "s3-north", true)},
			metav1.ConditionFalse, v1alpha1.ReasonNoS3Profile, `names S3 profile "s3-north", which spec.s3Profiles does not define`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ValidatedCondition(policy, tc.clusters)
			if c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
				t.Fatalf("got %s/%s %q, want %s/%s containing %q", c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.message)
			}
		})
	}
}
