package ocm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
)

// The labels upstream's placement controller puts on the decisions it writes, besides
// ocmv1beta1.PlacementLabel (open-cluster-management-io/api cluster/v1beta1/types_placementdecision.go).
const (
	decisionGroupIndexLabel = "cluster.open-cluster-management.io/decision-group-index"
	decisionGroupNameLabel  = "cluster.open-cluster-management.io/decision-group-name"
)

// fieldOwner names the lab's placement controller in managedFields.
const fieldOwner = "lab-placement-controller"

// DefaultInterval is the time between two passes when Scheduler.Interval is zero. The real
// controller reacts to events within moments; a short interval keeps the lab's fight as close.
const DefaultInterval = 500 * time.Millisecond

// Scheduler writes the PlacementDecisions of every Placement on the hub that does not carry the
// disable annotation, as OCM's placement controller does (package doc).
type Scheduler struct {
	// Hub is a client of the hub with the OCM types.
	Hub client.Client
	// Clusters are the clusters a Placement may select, by the name the decisions use.
	Clusters []string
	// Interval is the time between two passes; DefaultInterval when zero.
	Interval time.Duration
}

// Run makes a pass every Interval until ctx is done. A pass that fails is logged and the next
// one tries again, as the real controller retries.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.Hub == nil || len(s.Clusters) == 0 {
		return errors.New("the lab placement scheduler needs a hub client and the clusters")
	}
	interval := cmp.Or(s.Interval, DefaultInterval)
	log := ctrl.LoggerFrom(ctx).WithName("lab-placement")
	for {
		if err := s.Pass(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Scheduling pass failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Pass schedules every Placement on the hub once.
func (s *Scheduler) Pass(ctx context.Context) error {
	list := &ocmv1beta1.PlacementList{}
	if err := s.Hub.List(ctx, list); err != nil {
		return fmt.Errorf("failed to list Placements: %w", err)
	}
	var errs []error
	for i := range list.Items {
		p := &list.Items[i]
		if !p.DeletionTimestamp.IsZero() || p.Annotations[ocmv1beta1.PlacementDisableAnnotation] == "true" {
			continue
		}
		if err := s.schedule(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// schedule writes the placement's choice into <placement>-decision-1, deletes its other
// decisions and reports the number selected in its status.
func (s *Scheduler) schedule(ctx context.Context, p *ocmv1beta1.Placement) error {
	decisions := &ocmv1beta1.PlacementDecisionList{}
	if err := s.Hub.List(ctx, decisions, client.InNamespace(p.Namespace), client.MatchingLabels{ocmv1beta1.PlacementLabel: p.Name}); err != nil {
		return fmt.Errorf("failed to list the PlacementDecisions of Placement %s: %w", klog.KObj(p), err)
	}
	var existing []string
	for _, d := range decisions.Items {
		for _, c := range d.Status.Decisions {
			existing = append(existing, c.ClusterName)
		}
	}
	chosen := choose(p.Spec.NumberOfClusters, s.Clusters, existing)
	name := p.Name + "-decision-1"
	if err := s.writeDecision(ctx, p, name, chosen); err != nil {
		return err
	}
	for i := range decisions.Items {
		d := &decisions.Items[i]
		if d.Name == name {
			continue
		}
		if err := s.Hub.Delete(ctx, d); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete PlacementDecision %s: %w", klog.KObj(d), err)
		}
		ctrl.LoggerFrom(ctx).Info("Deleted a PlacementDecision the placement did not write", "placement", klog.KObj(p), "decision", klog.KObj(d))
	}
	if p.Status.NumberOfSelectedClusters == int32(len(chosen)) { //nolint:gosec // at most the lab's clusters
		return nil
	}
	before := p.DeepCopy()
	p.Status.NumberOfSelectedClusters = int32(len(chosen)) //nolint:gosec // at most the lab's clusters
	if err := s.Hub.Status().Patch(ctx, p, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch the status of Placement %s: %w", klog.KObj(p), err)
	}
	return nil
}

// writeDecision makes the decision name exactly the chosen clusters and carry exactly the
// placement controller's labels, creating it owned by the Placement when it is missing. Like
// upstream, it first writes the status and, once the status is right, the labels.
func (s *Scheduler) writeDecision(ctx context.Context, p *ocmv1beta1.Placement, name string, chosen []string) error {
	labels := map[string]string{ocmv1beta1.PlacementLabel: p.Name, decisionGroupNameLabel: "", decisionGroupIndexLabel: "0"}
	pd := &ocmv1beta1.PlacementDecision{}
	err := s.Hub.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, pd)
	switch {
	case apierrors.IsNotFound(err):
		pd = &ocmv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p, ocmv1beta1.GroupVersion.WithKind("Placement"))}}}
		if err := s.Hub.Create(ctx, pd, client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("failed to create PlacementDecision %s/%s: %w", p.Namespace, name, err)
		}
	case err != nil:
		return fmt.Errorf("failed to get PlacementDecision %s/%s: %w", p.Namespace, name, err)
	}
	want := make([]ocmv1beta1.ClusterDecision, 0, len(chosen))
	for _, c := range chosen {
		want = append(want, ocmv1beta1.ClusterDecision{ClusterName: c})
	}
	if !slices.Equal(pd.Status.Decisions, want) {
		before := pd.DeepCopy()
		pd.Status.Decisions = want
		if err := s.Hub.Status().Patch(ctx, pd, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return fmt.Errorf("failed to patch the status of PlacementDecision %s: %w", klog.KObj(pd), err)
		}
		ctrl.LoggerFrom(ctx).Info("Scheduled a placement", "placement", klog.KObj(p), "clusters", chosen)
		return nil
	}
	if maps.Equal(pd.Labels, labels) {
		return nil
	}
	before := pd.DeepCopy()
	pd.Labels = labels
	if err := s.Hub.Patch(ctx, pd, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to patch the labels of PlacementDecision %s: %w", klog.KObj(pd), err)
	}
	return nil
}

// choose is the placement's choice among clusters: those named in the existing decisions
// first, then by name; the first numberOfClusters of them (all when it is nil), listed by name
// as upstream lists them by default (spec.sortBy ClusterName).
func choose(numberOfClusters *int32, clusters, existing []string) []string {
	sorted := slices.Clone(clusters)
	slices.SortStableFunc(sorted, func(a, b string) int {
		if sa, sb := slices.Contains(existing, a), slices.Contains(existing, b); sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	if numberOfClusters != nil && int(*numberOfClusters) < len(sorted) {
		sorted = sorted[:max(0, int(*numberOfClusters))]
	}
	slices.Sort(sorted)
	return sorted
}
