package vrg_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// expectEvents waits until the group has an event of each reason (the agent's recorder sends
// them asynchronously) and returns the notes by reason.
func expectEvents(ctx context.Context, g Gomega, cl client.Client, group client.Object, reasons ...string) map[string][]string {
	notes := map[string][]string{}
	g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(cl.List(ctx, list, client.InNamespace(group.GetNamespace()))).To(Succeed())
		notes = map[string][]string{}
		for _, e := range list.Items {
			if e.Regarding.Kind == "VolumeReplicationGroup" && e.Regarding.Name == group.GetName() {
				notes[e.Reason] = append(notes[e.Reason], e.Note)
			}
		}
		for _, r := range reasons {
			g.Expect(notes).To(HaveKey(r), "events of VolumeReplicationGroup %s/%s", group.GetNamespace(), group.GetName())
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return notes
}
