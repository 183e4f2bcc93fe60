package drpc

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Two DRPlacementControls created in the same second protecting one namespace: the one of the
// smaller UID keeps it (b here, although a sorts first by name), whichever the hub reconciles
// first.
func TestANamespaceConflictIsDecidedTheSameWhicheverDRPCIsSeenFirst(t *testing.T) {
	for _, first := range []string{"a", "b"} {
		t.Run("reconciling "+first+" first", func(t *testing.T) {
			a := appDRPC()
			a.Name, a.UID = "a", types.UID("2")
			w := newWorld(t, a)
			b := appDRPC()
			b.Name, b.UID = "b", types.UID("1")
			b.CreationTimestamp = a.CreationTimestamp
			w.g.Expect(w.hub.Create(context.Background(), b)).To(Succeed())
			// The fake client keeps neither the UID nor the creation time it is given.
			for _, d := range []*v1alpha1.DRPlacementControl{a, b} {
				got := &v1alpha1.DRPlacementControl{}
				w.g.Expect(w.hub.Get(context.Background(), client.ObjectKeyFromObject(d), got)).To(Succeed())
				got.UID, got.CreationTimestamp = d.UID, metav1.Unix(1_800_000_000, 0)
				w.g.Expect(w.hub.Update(context.Background(), got)).To(Succeed())
			}
			order := []string{first, map[string]string{"a": "b", "b": "a"}[first]}
			for _, name := range order {
				w.key = client.ObjectKey{Namespace: "app", Name: name}
				w.reconcile()
			}
			w.key = client.ObjectKey{Namespace: "app", Name: "b"}
			w.g.Expect(w.cond(v1alpha1.ConditionValidated).Status).To(Equal(metav1.ConditionTrue))
			w.key = client.ObjectKey{Namespace: "app", Name: "a"}
			v := w.cond(v1alpha1.ConditionValidated)
			w.g.Expect(v.Reason).To(Equal(v1alpha1.ReasonNamespaceConflict))
			w.g.Expect(v.Message).To(ContainSubstring("already protected by DRPlacementControl app/b"))
		})
	}
}
