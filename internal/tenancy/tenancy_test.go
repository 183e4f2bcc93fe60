package tenancy

import "testing"

func TestRules(t *testing.T) {
	r := Rules{AdminNamespaces: []string{"platform"}, SystemNamespaces: []string{"monitoring"}}
	for ns, want := range map[string]bool{"kube-system": true, "kube-public": true, "openshift-etcd": true, "drover-system": true,
		"monitoring": true, "team-a": false, "kubeflow": false, "default": false} {
		if got := r.IsSystem(ns); got != want {
			t.Errorf("IsSystem(%s) = %v, want %v", ns, got, want)
		}
	}
	for ns, want := range map[string]bool{"drover-system": true, "platform": true, "team-a": false} {
		if got := r.IsAdmin(ns); got != want {
			t.Errorf("IsAdmin(%s) = %v, want %v", ns, got, want)
		}
	}
	if got := r.FirstSystem([]string{"team-a", "kube-system"}); got != "kube-system" {
		t.Errorf("FirstSystem = %q", got)
	}
}

func TestPolicyProblem(t *testing.T) {
	r := Rules{AdminNamespaces: []string{"platform"}}
	listed := map[string]string{AnnotationTenantNamespaces: "team-a, team-b"}
	cases := []struct {
		name        string
		ns          string
		annotations map[string]string
		privileged  bool
		refused     bool
	}{
		{"a policy without a list, from a tenant", "team-c", nil, false, false},
		{"a policy listing the tenant", "team-b", listed, false, false},
		{"a policy listing others", "team-c", listed, false, true},
		{"privileged movers, from a tenant, even listed", "team-a", listed, true, true},
		{"privileged movers, from drover-system", "drover-system", nil, true, false},
		{"privileged movers, from an admin namespace of the flags", "platform", listed, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.PolicyProblem(tc.ns, "p", tc.annotations, tc.privileged); (got != "") != tc.refused {
				t.Errorf("PolicyProblem = %q, want refused %v", got, tc.refused)
			}
		})
	}
}
