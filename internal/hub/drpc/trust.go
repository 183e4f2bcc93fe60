package drpc

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-io/drover/api/v1alpha1"
)

// A managed cluster is not trusted by its peer: what a secondary reports in its group's status
// is data that cluster chose, and the hub hands some of it to the primary. A destination the hub
// hands over makes the primary send a PVC's data to the destination's address with the key the
// primary's agent makes, under the destination's Secret name, from the group's stores. So each
// reported destination must name a namespace the group protects and the key Secret drover derives
// for that PVC; any other is refused, and PeerReady names the cluster and the entry
// (docs/security.md, "A compromised managed cluster"). The primary's agent checks the same again
// (internal/agent/vrg, volsync_keys.go): it trusts no writer of its group.

// trustedDestinations splits the destinations a secondary reported into those the hub may hand
// to the primary and the reasons the others are refused. group is the group's namespace and
// name (the DRPlacementControl's); namespaces the namespaces it protects (its own when empty).
func trustedDestinations(group types.NamespacedName, namespaces []string, reported []v1alpha1.VolSyncDestination) ([]v1alpha1.VolSyncDestination, []string) {
	if len(namespaces) == 0 {
		namespaces = []string{group.Namespace}
	}
	var ok []v1alpha1.VolSyncDestination
	var refused []string
	for i, d := range reported {
		entry := fmt.Sprintf("status.volSyncDestinations[%d] (%s/%s)", i, d.PVCNamespace, d.PVCName)
		switch want := v1alpha1.VolSyncKeySecretName(group.Name, d.PVCName); {
		case !slices.Contains(namespaces, d.PVCNamespace):
			refused = append(refused, fmt.Sprintf("%s: namespace %q is not one the group protects (%s)", entry, d.PVCNamespace, strings.Join(namespaces, ", ")))
		case d.KeySecretName != want:
			refused = append(refused, fmt.Sprintf("%s: keySecretName %q is not the Secret drover derives (%q)", entry, d.KeySecretName, want))
		default:
			ok = append(ok, d)
		}
	}
	return ok, refused
}

// untrustedPeerStatus is PeerReady's message when the peer's group reports destinations the hub
// refuses to hand over, or "".
func untrustedPeerStatus(sc *scope, peer *clusterView) string {
	if !peer.reachable() || peer.vrg == nil || peer.vrg.Spec.ReplicationState != v1alpha1.ReplicationStateSecondary {
		return ""
	}
	group := types.NamespacedName{Namespace: sc.drpc.Namespace, Name: sc.drpc.Name}
	_, refused := trustedDestinations(group, sc.drpc.Spec.ProtectedNamespaces, peer.vrg.Status.VolSyncDestinations)
	if len(refused) == 0 {
		return ""
	}
	return fmt.Sprintf("%s reported VolSync destinations the hub does not hand to the primary: %s; drover never writes such entries, so check %s's agent and who may write its VolumeReplicationGroups' status",
		peer.name, strings.Join(refused, "; "), peer.name)
}
