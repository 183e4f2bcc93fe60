package vrg_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/s3fault"
)

// A primary protects a StatefulSet with east's store behind the lab's fault proxy. Each fault in
// turn makes ClusterDataProtected False with a reason and a message naming the store, while
// west's store keeps the metadata; when the fault heals, protection resumes by itself and
// east's store holds the metadata again.
func TestProtectionReportsAFaultyStoreAndResumesWhenItHeals(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(60 * time.Second)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	createOrKeep(ctx, g, east, replicationClass("lab-block-5s", "5s"))
	createOrKeep(ctx, g, vrglab.ClusterClient(t, lab.West), replicationClass("lab-block-5s", "5s"))
	ns := "store-faults"
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(east.Create(ctx, vrglab.StatefulSet(ns, "db", 1))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	g.Expect(profiles[0].Name).To(Equal("s3-east"))
	proxy, err := s3fault.Start(profiles[0].Endpoint)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = proxy.Close() }()
	profiles[0].Endpoint = proxy.URL()
	group := vrglab.PrimaryVRG(ns, "db", "db", "5s", profiles)
	g.Expect(east.Create(ctx, group)).To(Succeed())
	prefix := vrg.StorePrefix(group)

	protected := func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		for _, s := range stores {
			keys, err := s.List(ctx, prefix)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keys).To(HaveLen(3), "%s holds the marker, the PV and the PVC", s.Name())
		}
	}
	g.Eventually(protected).Should(Succeed(), "the group is protected through the proxy")

	for _, tc := range []struct {
		fault  s3fault.Fault
		delay  time.Duration
		reason string
		says   string
	}{
		{s3fault.Refuse, 0, "StoreUnreachable", "is unreachable"},
		{s3fault.SlowDown, 0, "StoreError", "SlowDown: Please reduce your request rate"},
		{s3fault.Latency, 12 * time.Second, "StoreUnreachable", "no answer within the timeout"},
		{s3fault.TruncateBody, 0, "StoreUnreachable", "the connection closed without a complete answer"},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			g := NewWithT(t)
			// East's copy goes, so the next pass must write it again: the metadata reaches
			// the faulty store only when it works.
			g.Expect(stores[0].DeletePrefix(ctx, prefix)).To(Succeed())
			g.Expect(proxy.Set(tc.fault, tc.delay)).To(Succeed())
			started := time.Now()
			g.Eventually(func(g Gomega) {
				got := &v1alpha1.VolumeReplicationGroup{}
				g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
				c := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionClusterDataProtected)
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(tc.reason), c.Message)
				g.Expect(c.Message).To(And(ContainSubstring("s3-east"), ContainSubstring(tc.says)))
			}).WithTimeout(90*time.Second).Should(Succeed(), "the condition names the faulty store and what it did")
			t.Logf("%s: reported in %s", tc.fault, time.Since(started).Round(time.Millisecond))
			keys, err := stores[1].List(ctx, prefix)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(keys).To(HaveLen(3), "west's store keeps the metadata meanwhile")

			g.Expect(proxy.Set(s3fault.None, 0)).To(Succeed())
			healed := time.Now()
			g.Eventually(protected).WithTimeout(90*time.Second).Should(Succeed(), "protection resumes by itself once the store heals")
			t.Logf("%s: protected again %s after the store healed", tc.fault, time.Since(healed).Round(time.Millisecond))
		})
	}

	// Unprotected while the proxy still forwards: the group's copy leaves both stores.
	g.Expect(east.Delete(ctx, group)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(east.Get(ctx, client.ObjectKeyFromObject(group), &v1alpha1.VolumeReplicationGroup{}))
	}).Should(BeTrue())
}
