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
	all := &ocmv1beta1.PlacementDecisionList{}
	if err := s.Hub.List(ctx, all); err != nil {
		return fmt.Errorf("failed to list PlacementDecisions: %w", err)
	}
	var decisions []*ocmv1beta1.PlacementDecision
	var existing []string
	load := map[string]int{}
	for i := range all.Items {
		d := &all.Items[i]
		own := d.Namespace == p.Namespace && d.Labels[ocmv1beta1.PlacementLabel] == p.Name
		if own {
			decisions = append(decisions, d)
		}
		for _, c := range d.Status.Decisions {
			if own {
				existing = append(existing, c.ClusterName)
			} else {
				load[c.ClusterName]++
			}
		}
	}
	chosen := choose(p.Spec.NumberOfClusters, s.Clusters, existing, load)
	name := p.Name + "-decision-1"
	if err := s.writeDecision(ctx, p, name, chosen); err != nil {
		return err
	}
	for _, d := range decisions {
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
	labels := map[string]string{ocmv1beta1.PlacementLabel: p.Name, ocmv1beta1.DecisionGroupNameLabel: "", ocmv1beta1.DecisionGroupIndexLabel: "0"}
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

// maxClusterScore is the score a prioritizer gives its most preferred cluster
// (pkg/placement/plugins/interface.go, MaxClusterScore); scores range from -100 to 100.
const maxClusterScore = 100

// choose is the placement's choice among clusters, scored as OCM's default prioritizers score
// them, each with weight 1 (pkg/placement/controllers/scheduling/schedule.go,
// defaultPrioritizerConfig): Steady gives the clusters the placement's own decisions name now
// 100 and the others 0 (plugins/steady); Balance gives a cluster that no other placement's
// decision names 100 and one named count times 2·⌊100·(0.5 − count/max)⌋, where max is the
// count of the busiest cluster, so the busiest scores −100 (plugins/balance). The clusters are
// sorted by the sum, ties by name, and the first numberOfClusters taken (all when it is nil);
// the chosen are listed by name. So a placement on the busiest cluster scores 100 − 100 = 0
// there and moves to a cluster no other placement uses, which scores 0 + 100.
func choose(numberOfClusters *int32, clusters, existing []string, load map[string]int) []string {
	busiest := 0
	for _, c := range clusters {
		busiest = max(busiest, load[c])
	}
	score := map[string]int64{}
	for _, c := range clusters {
		balance := int64(maxClusterScore)
		if n := load[c]; n > 0 {
			usage := float64(n) / float64(busiest)
			balance = 2 * int64(float64(maxClusterScore)*(0.5-usage))
		}
		steady := int64(0)
		if slices.Contains(existing, c) {
			steady = maxClusterScore
		}
		score[c] = balance + steady
	}
	sorted := slices.Clone(clusters)
	slices.SortStableFunc(sorted, func(a, b string) int {
		if score[a] != score[b] {
			return cmp.Compare(score[b], score[a])
		}
		return cmp.Compare(a, b)
	})
	if numberOfClusters != nil && int(*numberOfClusters) < len(sorted) {
		sorted = sorted[:max(0, int(*numberOfClusters))]
	}
	slices.Sort(sorted)
	return sorted
}
