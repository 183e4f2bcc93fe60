package drill_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab/storage"
)

// annotateDestination sets (value non-empty) or removes a lab annotation of a destination.
func annotateDestination(ctx context.Context, g Gomega, cl client.Client, key client.ObjectKey, annotation, value string) {
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(cl.Get(ctx, key, rd)).To(Succeed())
		patch := client.MergeFrom(rd.DeepCopy())
		if value != "" {
			metav1.SetMetaDataAnnotation(&rd.ObjectMeta, annotation, value)
		} else {
			delete(rd.Annotations, annotation)
		}
		g.Expect(cl.Patch(ctx, rd, patch)).To(Succeed())
	}).Should(Succeed())
}

// runningAfterItsImage brings a destination into the state upstream's continuous destinations
// are in nearly all the time, and keeps it there: a sync running that started after the last
// image (later at the API's second precision: the lab's clean-up takes 1.5 s), its own image
// not taken yet (held by the lab).
func runningAfterItsImage(ctx context.Context, g Gomega, cl client.Client, key client.ObjectKey) {
	annotateDestination(ctx, g, cl, key, storage.CleanupDelayAnnotation, "1500ms")
	// Every sync started after an image recorded from now on starts after the delay. An image
	// recorded in the second of the annotation, or before the lab saw it, may be followed by a
	// sync started within its second: wait for one recorded in a later second (the API's
	// precision).
	annotated := time.Now()
	rd := &volsyncv1alpha1.ReplicationDestination{}
	g.Eventually(func(g Gomega) {
		g.Expect(cl.Get(ctx, key, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		g.Expect(rd.Status.LastSyncTime).NotTo(BeNil())
		g.Expect(rd.Status.LastSyncTime.Time.After(annotated)).To(BeTrue())
	}).WithTimeout(2*time.Minute).Should(Succeed(), "%s records an image after the clean-up delay is set", key)
	annotateDestination(ctx, g, cl, key, storage.HoldImageAnnotation, "true")
	g.Eventually(func(g Gomega) {
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(cl.Get(ctx, key, rd)).To(Succeed())
		g.Expect(rd.Status).NotTo(BeNil())
		c := apimeta.FindStatusCondition(rd.Status.Conditions, volsyncv1alpha1.ConditionSynchronizing)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring(storage.HoldImageAnnotation), "a sync is received and its image held")
		st := rd.Status
		g.Expect(st.LastSyncStartTime).NotTo(BeNil())
		g.Expect(st.LastSyncTime).NotTo(BeNil())
		g.Expect(st.LastSyncStartTime.After(st.LastSyncTime.Time)).To(BeTrue(), "the running sync started after the latest image")
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

// A drill of a VolSync application whose destinations always show a running sync, as upstream's
// continuous destinations do (VolSync sets lastSyncStartTime again right after each completion):
// the drill takes the latest image, the last complete sync, instead of waiting for a moment
// with no sync running, which may never come.
func TestADrillPicksTheLatestImageOfADestinationThatIsAlwaysSyncing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := protectedApp(t)
	keys := []client.ObjectKey{{Namespace: p.ns, Name: "data-db-0"}, {Namespace: p.ns, Name: "data-db-1"}}
	t.Cleanup(func() {
		for _, key := range keys {
			for _, a := range []string{storage.HoldImageAnnotation, storage.CleanupDelayAnnotation} {
				annotateDestination(ctx, NewWithT(t), p.west, key, a, "")
			}
		}
	})
	latest := map[string]string{}
	for _, key := range keys {
		runningAfterItsImage(ctx, g, p.west, key)
		rd := &volsyncv1alpha1.ReplicationDestination{}
		g.Expect(p.west.Get(ctx, key, rd)).To(Succeed())
		latest[key.Name] = rd.Status.LatestImage.Name
	}
	sb := p.sandbox(g, "busy", nil)
	got := p.awaitResult(t, g, sb)
	g.Expect(got.Status.Result).To(Equal(v1alpha1.DrillResultPassed), "the drill passed: %s", got.Status.Message)
	g.Expect(got.Status.Volumes).To(HaveLen(len(keys)))
	for _, v := range got.Status.Volumes {
		g.Expect(v.Point).To(Equal(latest[v.PVCName]), "%s: the point is the destination's latest image", v.PVCName)
		t.Logf("%s: point %s (the destination's running sync started after it)", v.PVCName, v.Point)
	}
	g.Expect(p.west.Delete(ctx, got)).To(Succeed())
	checkGone(g, p, sb, "busy")
}
