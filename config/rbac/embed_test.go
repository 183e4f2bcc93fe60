package rbac_test

import (
	"strings"
	"testing"

	"github.com/drover-io/drover/config/rbac"
)

func TestHubOnManagedClusterHoldsTheRolesTheAdmissionPolicyAndTheirBindings(t *testing.T) {
	docs, err := rbac.Manifests(rbac.HubOnManagedCluster, rbac.HubOnManagedClusterDir)
	if err != nil {
		t.Fatalf("failed to read the embedded kustomization: %v", err)
	}
	var kinds []string
	for _, d := range docs {
		for _, line := range strings.Split(string(d), "\n") {
			if k, ok := strings.CutPrefix(line, "kind: "); ok {
				kinds = append(kinds, k)
			}
		}
		if !strings.Contains(string(d), "name: drover-hub-on-managed-cluster\n") {
			t.Errorf("a resource of %s is not named drover-hub-on-managed-cluster:\n%s", rbac.HubOnManagedClusterDir, d)
		}
	}
	if strings.Join(kinds, ",") != "ClusterRole,ClusterRoleBinding,Role,RoleBinding,ValidatingAdmissionPolicy,ValidatingAdmissionPolicyBinding" {
		t.Fatalf("kinds = %v, want the ClusterRole, the Role of the token's renewal, their bindings and the admission policy with its binding", kinds)
	}
}

func TestManifestsNamesAMissingKustomization(t *testing.T) {
	_, err := rbac.Manifests(rbac.HubOnManagedCluster, "nowhere")
	if err == nil || !strings.Contains(err.Error(), "failed to read the kustomization of nowhere") {
		t.Fatalf("err = %v, want it to name the missing kustomization", err)
	}
}
