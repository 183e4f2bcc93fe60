package deployer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmv1beta1 "github.com/drover-io/drover/internal/extapi/ocm/v1beta1"
)

const (
	// FieldOwner is the field manager of everything the deployer applies.
	FieldOwner = "lab-deployer"
	// DefaultInterval is how often the deployer reads the decision when Interval is zero.
	DefaultInterval = time.Second
	// clusterTimeout bounds one cluster's apply or removal, so a cluster whose API server hangs
	// is retried in a later round instead of never.
	clusterTimeout = 30 * time.Second
)

// State is what the deployer did on a cluster in its last pass there.
type State string

const (
	// StateApplied means the decision names the cluster and every manifest was applied.
	StateApplied State = "Applied"
	// StateRemoved means the decision does not name the cluster and no manifest is left there.
	StateRemoved State = "Removed"
	// StateUntouched means the decision does not name the cluster and the deployer never
	// applied the manifests there (or removed them already): it leaves the cluster alone.
	StateUntouched State = "Untouched"
	// StateError means the pass failed (the cluster is unreachable, a manifest was refused, or the
	// decision names a cluster the deployer has no client for); it is retried next round.
	StateError State = "Error"
)

// ClusterResult is the outcome of the last pass on one cluster.
type ClusterResult struct {
	State State
	// Message is the error of a StateError pass, empty otherwise.
	Message string
	// Round is the round (Status.Rounds) whose decision the pass acted on.
	Round int
	// Time is when the pass ended.
	Time time.Time
}

// Status is what the deployer did last, for tests and people.
type Status struct {
	// Rounds counts the reads of the decision, successful or not.
	Rounds int
	// DecisionFound is false when the last successful read found no PlacementDecision labelled
	// for the placement. Nothing is applied or removed anywhere then.
	DecisionFound bool
	// Decided lists, sorted, the clusters the last decision found names.
	Decided []string
	// HubError is the error of the last read of the decision; empty when it succeeded.
	HubError string
	// Clusters holds the last result of every cluster the deployer acted on, by name.
	Clusters map[string]ClusterResult
}

// Deployer applies Manifests to the clusters that the placement's PlacementDecisions name and
// removes them from the other clusters it knows. Set the fields, then call Run; do not change
// them while it runs, and do not copy a Deployer.
//
// A missing decision changes nothing anywhere (a GitOps tool does not delete an application
// because its generator has no answer); a decision that names no cluster removes the manifests
// from every cluster where the deployer applied them, and only there (a GitOps tool prunes what
// its Application deployed, never a cluster it never deployed to). Removal deletes each manifest's object with background propagation and nothing
// else: the namespace stays, and so do the PVCs a StatefulSet created, as Kubernetes leaves
// them. A cluster that fails is reported (Status) and retried next round while the others go on.
type Deployer struct {
	// Hub reads the PlacementDecisions. Its scheme must know internal/extapi/ocm/v1beta1.
	// Required.
	Hub client.Client
	// Clusters are the managed clusters the deployer knows, by the names that decisions use.
	// Required.
	Clusters map[string]client.Client
	// Namespace is the hub namespace of the PlacementDecisions. Required.
	Namespace string
	// Placement is the value of the decisions' label cluster.open-cluster-management.io/placement.
	// Required.
	Placement string
	// AppNamespace is the namespace on the managed clusters of every namespaced manifest that
	// names none; it is created when missing and never deleted. Namespace when empty.
	AppNamespace string
	// Manifests are applied as they are (server-side, FieldOwner, forcing ownership) except for
	// the namespace. LoadDir reads them from a directory. Required.
	Manifests []*unstructured.Unstructured
	// Interval is the time between two reads of the decision; DefaultInterval when zero.
	Interval time.Duration

	mu     sync.Mutex
	status Status
	// busy marks the clusters whose pass is still running; a round skips them.
	busy map[string]bool
	// holds marks the clusters where the deployer applied the manifests and has not removed
	// them since: the only clusters it removes them from.
	holds map[string]bool
}

// Status returns a copy of what the deployer did last.
func (d *Deployer) Status() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.status
	st.Decided = slices.Clone(d.status.Decided)
	st.Clusters = make(map[string]ClusterResult, len(d.status.Clusters))
	for name, r := range d.status.Clusters {
		st.Clusters[name] = r
	}
	return st
}

// Run reads the decision every Interval and starts a pass on every cluster whose previous pass
// has ended, until ctx is done; it then waits for the running passes and returns nil. It
// returns an error only when the Deployer's fields are not valid.
func (d *Deployer) Run(ctx context.Context) error {
	if err := d.validate(); err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("placement", klog.KRef(d.Namespace, d.Placement))
	ctx = ctrl.LoggerInto(ctx, log)
	log.Info("Starting the lab deployer", "clusters", slices.Sorted(maps.Keys(d.Clusters)), "manifests", len(d.Manifests))

	interval := d.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	var passes sync.WaitGroup
	defer passes.Wait()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		d.round(ctx, &passes)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

func (d *Deployer) validate() error {
	var errs []error
	if d.Hub == nil {
		errs = append(errs, errors.New("the Hub client is required"))
	} else if !d.Hub.Scheme().Recognizes(ocmv1beta1.GroupVersion.WithKind("PlacementDecisionList")) {
		errs = append(errs, errors.New("the Hub client's scheme does not know PlacementDecision: register internal/extapi/ocm/v1beta1"))
	}
	if len(d.Clusters) == 0 {
		errs = append(errs, errors.New("at least one cluster client is required in Clusters"))
	}
	for name, cl := range d.Clusters {
		if cl == nil {
			errs = append(errs, fmt.Errorf("the client of cluster %s is nil", name))
		}
	}
	if d.Namespace == "" {
		errs = append(errs, errors.New("the Namespace of the decisions is required"))
	}
	if d.Placement == "" {
		errs = append(errs, errors.New("the Placement name is required"))
	}
	if len(d.Manifests) == 0 {
		errs = append(errs, errors.New("at least one manifest is required in Manifests"))
	}
	for i, m := range d.Manifests {
		if err := validateManifest(m); err != nil {
			errs = append(errs, fmt.Errorf("manifest %d: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid lab deployer: %w", err)
	}
	return nil
}

// round reads the decision and starts a pass on every idle cluster.
func (d *Deployer) round(ctx context.Context, passes *sync.WaitGroup) {
	log := ctrl.LoggerFrom(ctx)
	decided, found, err := d.readDecision(ctx)
	if ctx.Err() != nil {
		return
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	prev := d.status
	d.status.Rounds++
	round := d.status.Rounds
	if err != nil {
		d.status.HubError = err.Error()
		if prev.HubError != d.status.HubError {
			log.Error(err, "Failed to read the placement decision; retrying")
		}
		return
	}
	d.status.HubError = ""
	if prev.HubError != "" {
		log.Info("Reading the placement decision again")
	}
	d.status.DecisionFound = found
	d.status.Decided = decided
	if !found {
		if prev.DecisionFound || round == 1 {
			log.Info("Found no placement decision; applying and removing nothing")
		}
		return
	}
	if !prev.DecisionFound || !slices.Equal(prev.Decided, decided) {
		log.Info("Placement decision changed", "clusters", decided)
	}

	if d.busy == nil {
		d.busy = map[string]bool{}
	}
	for _, name := range decided {
		if _, known := d.Clusters[name]; !known {
			d.recordLocked(log.WithValues("cluster", name), name, ClusterResult{
				State:   StateError,
				Message: fmt.Sprintf("the decision names cluster %s, which the lab deployer has no client for", name),
				Round:   round, Time: time.Now(),
			})
		}
	}
	d.startPassesLocked(ctx, passes, decided, round)
}

// startPassesLocked starts a pass on every idle cluster the decision names (to apply) or that
// holds what the deployer applied (to remove it); d.mu is held.
func (d *Deployer) startPassesLocked(ctx context.Context, passes *sync.WaitGroup, decided []string, round int) {
	log := ctrl.LoggerFrom(ctx)
	if d.holds == nil {
		d.holds = map[string]bool{}
	}
	for name, cl := range d.Clusters {
		if d.busy[name] {
			continue
		}
		place := slices.Contains(decided, name)
		if !place && !d.holds[name] {
			// Like a GitOps tool, the deployer removes only what it deployed: a cluster that
			// never held the application (or whose removal completed) is left alone, so what
			// others create there (drover restoring a PVC before the decision names the
			// cluster) is never touched.
			if prev, seen := d.status.Clusters[name]; !seen || prev.State != StateRemoved {
				d.recordLocked(log.WithValues("cluster", name), name, ClusterResult{State: StateUntouched, Round: round, Time: time.Now()})
			}
			continue
		}
		if place {
			d.holds[name] = true
		}
		d.busy[name] = true
		passes.Go(func() {
			clog := log.WithValues("cluster", name)
			res := d.pass(ctrl.LoggerInto(ctx, clog), cl, place)
			res.Round, res.Time = round, time.Now()
			d.mu.Lock()
			defer d.mu.Unlock()
			d.busy[name] = false
			if !place && res.State == StateRemoved {
				d.holds[name] = false
			}
			if ctx.Err() == nil {
				d.recordLocked(clog, name, res)
			}
		})
	}
}

// readDecision returns the sorted union of the cluster names of the placement's decisions
// (OCM spreads a placement's decisions over several objects) and whether any decision exists.
func (d *Deployer) readDecision(ctx context.Context) (decided []string, found bool, err error) {
	list := &ocmv1beta1.PlacementDecisionList{}
	if err := d.Hub.List(ctx, list, client.InNamespace(d.Namespace),
		client.MatchingLabels{ocmv1beta1.PlacementLabel: d.Placement}); err != nil {
		return nil, false, fmt.Errorf("failed to list PlacementDecisions of placement %s/%s: %w", d.Namespace, d.Placement, err)
	}
	for _, pd := range list.Items {
		for _, dec := range pd.Status.Decisions {
			if dec.ClusterName != "" && !slices.Contains(decided, dec.ClusterName) {
				decided = append(decided, dec.ClusterName)
			}
		}
	}
	slices.Sort(decided)
	return decided, len(list.Items) > 0, nil
}

// recordLocked stores a cluster's result and logs it when it differs from the last one. d.mu
// must be held.
func (d *Deployer) recordLocked(log logr.Logger, name string, res ClusterResult) {
	if d.status.Clusters == nil {
		d.status.Clusters = map[string]ClusterResult{}
	}
	prev, seen := d.status.Clusters[name]
	d.status.Clusters[name] = res
	if seen && prev.State == res.State && prev.Message == res.Message {
		return
	}
	switch res.State {
	case StateApplied:
		log.Info("Applied the manifests")
	case StateRemoved:
		log.Info("Removed the manifests")
	case StateUntouched:
		log.V(1).Info("Leaving the cluster alone: the deployer never applied the manifests there")
	default:
		log.Error(errors.New(res.Message), "Failed to deploy on the cluster; retrying next round")
	}
}

// pass applies the manifests to one cluster (place) or removes them from it.
func (d *Deployer) pass(ctx context.Context, cl client.Client, place bool) ClusterResult {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	objs, err := d.objectsFor(cl)
	if err == nil {
		if place {
			err = d.apply(ctx, cl, objs)
		} else {
			err = remove(ctx, cl, objs)
		}
	}
	switch {
	case err != nil:
		return ClusterResult{State: StateError, Message: err.Error()}
	case place:
		return ClusterResult{State: StateApplied}
	default:
		return ClusterResult{State: StateRemoved}
	}
}

// objectsFor copies the manifests and puts the namespaced ones that name no namespace into the
// application's namespace. Whether a kind is namespaced comes from the cluster's discovery.
func (d *Deployer) objectsFor(cl client.Client) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(d.Manifests))
	for _, m := range d.Manifests {
		u := m.DeepCopy()
		if u.GetNamespace() == "" {
			namespaced, err := cl.IsObjectNamespaced(u)
			if err != nil {
				return nil, fmt.Errorf("failed to find whether %s %s is namespaced: %w", u.GetKind(), u.GetName(), err)
			}
			if namespaced {
				u.SetNamespace(d.appNamespace())
			}
		}
		objs = append(objs, u)
	}
	return objs, nil
}

func (d *Deployer) appNamespace() string {
	if d.AppNamespace != "" {
		return d.AppNamespace
	}
	return d.Namespace
}

// apply applies the namespaces the objects need, then the objects in order.
func (d *Deployer) apply(ctx context.Context, cl client.Client, objs []*unstructured.Unstructured) error {
	var namespaces []string
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" && !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	for _, ns := range namespaces {
		nsObj := &unstructured.Unstructured{}
		nsObj.SetAPIVersion("v1")
		nsObj.SetKind("Namespace")
		nsObj.SetName(ns)
		if err := applyObject(ctx, cl, nsObj); err != nil {
			return err
		}
	}
	for _, u := range objs {
		if err := applyObject(ctx, cl, u); err != nil {
			return err
		}
	}
	return nil
}

func applyObject(ctx context.Context, cl client.Client, u *unstructured.Unstructured) error {
	if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to apply %s %s: %w", u.GetKind(), klog.KObj(u), err)
	}
	return nil
}

// remove deletes the objects in reverse order with background propagation: the garbage
// collector removes their dependents (a StatefulSet's pods), never the PVCs a StatefulSet
// created, which it does not own. An object already gone, or of a kind the cluster does not
// serve, counts as removed.
func remove(ctx context.Context, cl client.Client, objs []*unstructured.Unstructured) error {
	for _, u := range slices.Backward(objs) {
		err := cl.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			return fmt.Errorf("failed to delete %s %s: %w", u.GetKind(), klog.KObj(u), err)
		}
	}
	return nil
}
