package clilab

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/internal/cli/day2"
	"github.com/drover-io/drover/internal/lab"
)

// The admission policies that bound the agent's identity (drover-agent-identity) and the hub's
// credential (drover-hub-on-managed-cluster) are what keep those identities to what drover
// does; RBAC alone allows far more. Whoever deletes one (by mistake, or to reopen the path)
// must not go unnoticed: `drover validate clusters` fails, naming each missing object, read
// with the hub's own credential.
func TestValidateFailsWhenAnIdentityPolicyIsDeleted(t *testing.T) {
	useHubCredential(t, lab.East)
	east, west := clusterClient(lab.East), clusterClient(lab.West)
	gone := []struct {
		cl  client.Client
		obj client.Object
	}{
		{east, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}},
		{west, &admissionregistrationv1.ValidatingAdmissionPolicy{}},
	}
	names := []string{"drover-hub-on-managed-cluster", "drover-agent-identity"}
	for i, g := range gone {
		if err := g.cl.Get(t.Context(), client.ObjectKey{Name: names[i]}, g.obj); err != nil {
			t.Fatal(err)
		}
		kept := g.obj.DeepCopyObject().(client.Object)
		if err := g.cl.Delete(t.Context(), g.obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			kept.SetResourceVersion("")
			kept.SetUID("")
			if err := createAll(context.Background(), g.cl, kept); err != nil {
				t.Errorf("failed to restore %s: %v", kept.GetName(), err)
			}
		})
	}
	got, out, err := rows(t, validateClusters(t), day2.ValidateOptions{})
	t.Logf("validate clusters:\n%s", out)
	if !errors.Is(err, day2.ErrValidationFailed) {
		t.Errorf("validate clusters returned %v, want a failure", err)
	}
	expect(t, got, out, map[string]day2.Result{"east: identity policies": day2.Fail, "west: identity policies": day2.Fail})
	for check, want := range map[string]string{
		"east: identity policies": "ValidatingAdmissionPolicyBinding drover-hub-on-managed-cluster",
		"west: identity policies": "ValidatingAdmissionPolicy drover-agent-identity",
	} {
		if d := got[check].Detail; !strings.Contains(d, want) {
			t.Errorf("%s says %q, want it to name %s", check, d, want)
		}
	}
}
