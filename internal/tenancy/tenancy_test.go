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
