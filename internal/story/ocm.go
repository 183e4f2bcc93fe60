package story

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
	"github.com/drover-io/drover/internal/lab/ocm"
)

// startPlacementController makes the hub behave as an OCM hub in placement mode: it creates the
// case's OCM Placement, selecting one cluster, and runs the lab's placement controller
// (internal/lab/ocm) until bg is done. As on a real hub, the controller places the application
// first (on the first cluster by name, home in every story the lab tells) and keeps writing the
// Placement's decisions for as long as drover has not disabled its scheduling.
func (r *Run) startPlacementController(ctx, bg context.Context) error {
	ns := r.c.PlacementNamespace
	if ns == "" {
		ns = r.c.Namespace
	}
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
