package hub_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/replication/volsync"
)

// A compromised managed cluster writes its group's status as it likes. West, the secondary,
// reports VolSync destinations naming a key Secret in kube-system and a key Secret drover does
// not derive: the hub must neither copy those Secrets onto east nor hand the destinations to
// east's primary, and must say which cluster reported what.
func TestACompromisedSecondaryCannotSteerThePrimarysDataOrSecretsThroughItsStatus(t *testing.T) {
	a := emptyApp(t, "hub-untrusted-peer")
	ctx := context.Background()
	east, west := a.clusters[lab.East], a.clusters[lab.West]
	vrg := &v1alpha1.VolumeReplicationGroup{}
	a.g.Eventually(func(g Gomega) {
		g.Expect(west.Get(ctx, a.key, vrg)).To(Succeed())
		g.Expect(vrg.Spec.ReplicationState).To(Equal(v1alpha1.ReplicationStateSecondary))
	}).Should(Succeed(), "west holds the secondary group")

	// West's agent is stopped: the attacker, not the agent, writes the group's status now.
	stop(lab.West)
	t.Cleanup(func() {
		if err := startAgent(lab.West); err != nil {
			t.Errorf("failed to start west's agent again: %v", err)
		}
	})
	bait := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "attacker-key"},
		StringData: map[string]string{"psk.txt": "volsync:attacker"}}
	a.g.Expect(client.IgnoreAlreadyExists(west.Create(ctx, bait))).To(Succeed())
	wrongKey := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.ns, Name: "someone-elses-secret"},
		StringData: map[string]string{"psk.txt": "volsync:attacker"}}
	a.g.Expect(west.Create(ctx, wrongKey)).To(Succeed())
	a.g.Expect(west.Get(ctx, a.key, vrg)).To(Succeed())
	before := vrg.DeepCopy()
	vrg.Status.VolSyncDestinations = []v1alpha1.VolSyncDestination{
		{PVCNamespace: "kube-system", PVCName: "coredns", Address: "198.51.100.7", KeySecretName: "attacker-key"},
		{PVCNamespace: a.ns, PVCName: "data", Address: "198.51.100.7", KeySecretName: "someone-elses-secret"},
	}
	a.g.Expect(west.Status().Patch(ctx, vrg, client.MergeFrom(before))).To(Succeed())

	var pr metav1.Condition
	a.g.Eventually(func(g Gomega) {
		pr = cond(a.drpc(g), v1alpha1.ConditionPeerReady)
		g.Expect(pr.Reason).To(Equal(v1alpha1.ReasonUntrustedPeerStatus), "PeerReady %s %s: %s", pr.Status, pr.Reason, pr.Message)
	}).Should(Succeed(), "the hub says west reported destinations it refuses")
	t.Logf("PeerReady %s %s: %s", pr.Status, pr.Reason, pr.Message)
	a.g.Expect(pr.Status).To(Equal(metav1.ConditionFalse))
	a.g.Expect(pr.Message).To(ContainSubstring("west reported"))
	a.g.Expect(pr.Message).To(ContainSubstring(`status.volSyncDestinations[0] (kube-system/coredns): namespace "kube-system" is not one the group protects`))
	a.g.Expect(pr.Message).To(ContainSubstring(`keySecretName "someone-elses-secret" is not the Secret drover derives (%q)`, volsync.KeySecretName(a.key.Name, "data")))
	a.expectEvents(v1alpha1.EventUntrustedPeerStatus)

	primary := &v1alpha1.VolumeReplicationGroup{}
	a.g.Consistently(func(g Gomega) {
		g.Expect(east.Get(ctx, a.key, primary)).To(Succeed())
		if primary.Spec.VolSync != nil {
			g.Expect(primary.Spec.VolSync.Destinations).To(BeEmpty(), "east's primary is handed no destination")
		}
		for _, key := range []client.ObjectKey{client.ObjectKeyFromObject(bait), client.ObjectKeyFromObject(wrongKey)} {
			err := east.Get(ctx, key, &corev1.Secret{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the hub copied west's Secret %s onto east: %v", key, err)
		}
	}).WithTimeout(3*interval).Should(Succeed(), "nothing west reported reaches east")
	a.g.Expect(west.Delete(ctx, bait)).To(Succeed())
}
