package drpc

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication/volsync"
)

func TestOnlyDestinationsInAProtectedNamespaceWithTheDerivedKeyAreHandedOver(t *testing.T) {
	g := NewWithT(t)
	group := types.NamespacedName{Namespace: "app", Name: "db"}
	good := v1alpha1.VolSyncDestination{PVCNamespace: "app", PVCName: "data-0", Address: "10.0.0.1", KeySecretName: volsync.KeySecretName("db", "data-0")}
	otherNS := v1alpha1.VolSyncDestination{PVCNamespace: "kube-system", PVCName: "data-0", Address: "10.0.0.1", KeySecretName: volsync.KeySecretName("db", "data-0")}
	otherKey := v1alpha1.VolSyncDestination{PVCNamespace: "app", PVCName: "data-1", Address: "10.0.0.1", KeySecretName: "db-data-0-volsync-key"}
	reported := []v1alpha1.VolSyncDestination{good, otherNS, otherKey}

	ok, refused := trustedDestinations(group, nil, reported)
	g.Expect(ok).To(ConsistOf(good), "a group with no protectedNamespaces protects its own namespace only")
	g.Expect(refused).To(HaveLen(2))
	g.Expect(refused[0]).To(ContainSubstring(`status.volSyncDestinations[1] (kube-system/data-0): namespace "kube-system" is not one the group protects (app)`))
	g.Expect(refused[1]).To(ContainSubstring(`keySecretName "db-data-0-volsync-key" is not the Secret drover derives ("db-data-1-volsync-key")`))

	ok, refused = trustedDestinations(group, []string{"app", "kube-system"}, reported[:2])
	g.Expect(ok).To(ConsistOf(good, otherNS), "a namespace the group protects is accepted")
	g.Expect(refused).To(BeEmpty())

	spec := v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStatePrimary}
	secondary := &v1alpha1.VolumeReplicationGroup{Spec: v1alpha1.VolumeReplicationGroupSpec{ReplicationState: v1alpha1.ReplicationStateSecondary},
		Status: v1alpha1.VolumeReplicationGroupStatus{VolSyncDestinations: reported}}
	handOff(&spec, group, nil, secondary)
	g.Expect(spec.VolSync).NotTo(BeNil())
	g.Expect(spec.VolSync.Destinations).To(ConsistOf(good), "only the trusted destination reaches the primary")
}
