package volsync

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzNamesAreValidSubdomains checks the names this package makes from a group's and a PVC's
// names: whatever valid names a user chose, the Secret and the DR-owned PVC get a name the API
// server accepts, and two different PVCs never share one.
func FuzzNamesAreValidSubdomains(f *testing.F) {
	f.Add("app", "data-db-0", "data-db-1")
	f.Add(strings.Repeat("a", 63), strings.Repeat("b", 230)+".c", strings.Repeat("b", 230)+".d")
	f.Add("g", strings.Repeat("x", 239)+".y.z", strings.Repeat("x", 239)+"-y.z")
	f.Fuzz(func(t *testing.T, group, pvc, other string) {
		if len(validation.IsDNS1123Subdomain(group)) > 0 || len(validation.IsDNS1123Subdomain(pvc)) > 0 {
			return
		}
		for what, name := range map[string]string{"key Secret": KeySecretName(group, pvc), "final-sync PVC": FinalSyncPVCName(pvc)} {
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				t.Fatalf("the %s name %q of group %q and PVC %q is not valid: %v", what, name, group, pvc, errs)
			}
		}
		if other != pvc && len(validation.IsDNS1123Subdomain(other)) == 0 {
			if KeySecretName(group, pvc) == KeySecretName(group, other) || FinalSyncPVCName(pvc) == FinalSyncPVCName(other) {
				t.Fatalf("PVCs %q and %q share a name", pvc, other)
			}
		}
	})
}
