package hub_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// expectEvents waits until the application's DRPlacementControl has an event of each reason
// (the hub's recorder sends them asynchronously) and returns the notes by reason.
func (a *app) expectEvents(reasons ...string) map[string][]string {
	notes := map[string][]string{}
	a.g.Eventually(func(g Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(a.hub.List(context.Background(), list, client.InNamespace(a.ns))).To(Succeed())
		notes = map[string][]string{}
		for _, e := range list.Items {
			if e.Regarding.Kind == "DRPlacementControl" && e.Regarding.Name == a.key.Name {
				notes[e.Reason] = append(notes[e.Reason], e.Note)
			}
		}
		for _, r := range reasons {
			g.Expect(notes).To(HaveKey(r), "events of DRPlacementControl %s", a.key)
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return notes
}
