package story

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/lab/ocm"
)

// startPlacementController makes the hub behave as an OCM hub in placement mode: it creates the
// case's OCM Placement, selecting one cluster, and runs the lab's placement controller
// (internal/lab/ocm) until bg is done. As on a real hub, the controller places the application
// first (on the first cluster by name, home in every story the lab tells) and keeps writing the
// Placement's decisions for as long as drover has not disabled its scheduling.
func (r *Run) startPlacementController(ctx, bg context.Context) error {
	ns := r.placementNamespace()
	p := &ocmv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: r.c.placement()},
		Spec: ocmv1beta1.PlacementSpec{NumberOfClusters: ptr.To(int32(1))}}
	if err := r.env.Hub.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create Placement %s/%s: %w", ns, p.Name, err)
	}
	clusters := sortedKeys(r.env.Clusters)
	s := &ocm.Scheduler{Hub: r.env.Hub, Clusters: clusters}
	r.say("deploy: OCM's placement controller (the lab's) schedules Placement %s/%s, one cluster of %v", ns, p.Name, clusters)
	r.background.Add(1)
	go func() {
		defer r.background.Done()
		_ = s.Run(bg)
	}()
	return nil
}

// placementNamespace is where the case's Placement lives.
func (r *Run) placementNamespace() string {
	if r.c.PlacementNamespace != "" {
		return r.c.PlacementNamespace
	}
	return r.c.Namespace
}

// deletePlacement removes the case's Placement and its decisions once the story ends (its
// application runs on where it is). OCM's Balance prioritizer counts every other Placement's
// decisions (plugins/balance), so Placements left by earlier stories would send the next
// story's application away from its home cluster: each story starts its own on an even hub.
func (r *Run) deletePlacement() error {
	if r.c.Mode != Placement {
		return nil
	}
	ctx := context.Background()
	ns := r.placementNamespace()
	p := &ocmv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: r.c.placement()}}
	if err := client.IgnoreNotFound(r.env.Hub.Delete(ctx, p)); err != nil {
		return fmt.Errorf("failed to delete Placement %s/%s: %w", ns, p.Name, err)
	}
	err := r.env.Hub.DeleteAllOf(ctx, &ocmv1beta1.PlacementDecision{}, client.InNamespace(ns),
		client.MatchingLabels{ocmv1beta1.PlacementLabel: p.Name})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to delete the PlacementDecisions of Placement %s/%s: %w", ns, p.Name, err)
	}
	return nil
}
