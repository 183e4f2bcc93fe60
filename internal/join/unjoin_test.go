package join_test

import (
	"bytes"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/lab"
)

func policyPairing(name string, clusters ...string) *v1alpha1.DRPolicy {
	p := &v1alpha1.DRPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.DRPolicySpec{
			DRClusters:           clusters,
			SchedulingInterval:   "5m",
			StorageClassBackends: []v1alpha1.StorageClassBackend{{Provisioner: "block.example.com", Backend: v1alpha1.BackendVolRep}},
		},
	}
	for _, c := range clusters {
		p.Spec.S3Profiles = append(p.Spec.S3Profiles, v1alpha1.S3Profile{
			Name: profileName(c), Endpoint: "http://127.0.0.1:9000", Bucket: "drover-" + c,
			SecretRef: v1alpha1.SecretRef{Namespace: join.DefaultNamespace, Name: profileName(c)},
		})
	}
	return p
}

func TestUnjoinRefusesWhileAPolicyPairsTheClusterThenRemovesEverything(t *testing.T) {
	var out bytes.Buffer
	o := joinOptions(t, lab.East, lab.East, &out)
	mustJoin(t, o)
	hub := adminClient(t, lab.Hub)
	policy := policyPairing("join-test-pair", lab.East, lab.West)
	if err := hub.Create(t.Context(), policy); err != nil {
		t.Fatalf("failed to create the policy: %v", err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(hub.Delete(t.Context(), policy)) })
	onHub, onEast := labelled(t, lab.Hub, lab.East), labelled(t, lab.East, lab.East)

	uo := join.UnjoinOptions{Name: lab.East, Hub: o.Hub, Managed: o.Managed, Out: &out}
	err := join.Unjoin(t.Context(), uo)
	if err == nil {
		t.Fatal("unjoin succeeded while DRPolicy join-test-pair pairs east")
	}
	mustContain(t, err.Error(), "DRPolicy join-test-pair pairs cluster east", "--force")
	if got := labelled(t, lab.Hub, lab.East); !mapsEqual(got, onHub) {
		t.Errorf("the refused unjoin changed the hub: %v, before %v", got, onHub)
	}
	if got := labelled(t, lab.East, lab.East); !mapsEqual(got, onEast) {
		t.Errorf("the refused unjoin changed east: %v, before %v", got, onEast)
	}

	if err := hub.Delete(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := join.Unjoin(t.Context(), uo); err != nil {
		t.Fatalf("unjoin failed: %v\n%s", err, out.String())
	}
	mustContain(t, out.String(), "DRCluster east deleted", "ServiceAccount drover-system/drover-hub deleted",
		"ConfigMap drover-system/drover-agent deleted")
	for _, c := range []string{lab.Hub, lab.East} {
		if got := labelled(t, c, lab.East); len(got) > 0 {
			t.Errorf("unjoin left on %s: %v", c, got)
		}
	}
	err = hub.Get(t.Context(), client.ObjectKey{Name: lab.East}, &v1alpha1.DRCluster{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the DRCluster is still there: %v", err)
	}
}

// A cluster lost for good can be unjoined from the hub alone; the report says what stays on it.
func TestUnjoinWithoutTheManagedClusterRemovesTheHubsSide(t *testing.T) {
	var out bytes.Buffer
	o := joinOptions(t, lab.West, lab.West, &out)
	mustJoin(t, o) // its cleanup removes what stays on west
	onWest := labelled(t, lab.West, lab.West)

	out.Reset()
	if err := join.Unjoin(t.Context(), join.UnjoinOptions{Name: lab.West, Hub: o.Hub, Out: &out}); err != nil {
		t.Fatalf("unjoin failed: %v\n%s", err, out.String())
	}
	mustContain(t, out.String(), "DRCluster west deleted", "kubectl delete clusterrolebinding,clusterrole -l drover.io/cluster=west")
	if got := labelled(t, lab.Hub, lab.West); len(got) > 0 {
		t.Errorf("unjoin left on the hub: %v", got)
	}
	if got := labelled(t, lab.West, lab.West); !mapsEqual(got, onWest) {
		t.Errorf("unjoin without west's kubeconfig changed west: %v, before %v", got, onWest)
	}
}
