package story

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// DataProtected says whether an application is Protected on home (Protected) with its group
// there reporting every PVC of its workload protected: a group protected before its PVCs joined
// it is Protected by its captured objects alone, which is no recovery point to drill from.
func (f *Fleet) DataProtected(d *v1alpha1.DRPlacementControl) bool {
	r := f.byNamespace[d.Namespace]
	if r == nil || !f.Protected(d) {
		return false
	}
	for _, s := range d.Status.VRGs {
		if s.Cluster == f.home {
			return s.ProtectedPVCs != nil && int(*s.ProtectedPVCs) == r.expectedPods()
		}
	}
	return false
}

// AwaitAllAtOnce lists the fleet's DRPlacementControls (those labelled with selector) every poll
// until done holds of every one in the same list: what drills created together need, where
// AwaitAll's "each at least once" lets an application that was Protected leave it again (a
// late sync on a loaded machine) before the last one joins.
func (f *Fleet) AwaitAllAtOnce(ctx context.Context, what string, selector map[string]string,
	done func(*v1alpha1.DRPlacementControl) bool) error {
	err := f.poll(ctx, func(ctx context.Context) error {
		list := &v1alpha1.DRPlacementControlList{}
		if err := f.env.Hub.List(ctx, list, client.MatchingLabels(selector)); err != nil {
			return fmt.Errorf("failed to list the DRPlacementControls: %w", err)
		}
		var waiting []string
		for i := range list.Items {
			if d := &list.Items[i]; f.byNamespace[d.Namespace] != nil && !done(d) {
				waiting = append(waiting, fmt.Sprintf("%s (Protected %s: %s)", d.Namespace, condition(d, v1alpha1.ConditionProtected).Status,
					condition(d, v1alpha1.ConditionProtected).Message))
			}
		}
		if len(waiting) == 0 && len(list.Items) >= len(f.Runs) {
			return nil
		}
		sort.Strings(waiting)
		return fmt.Errorf("%d of %d not at the same time: %s", len(waiting), len(f.Runs), strings.Join(waiting[:min(3, len(waiting))], "; "))
	})
	if err != nil {
		return fmt.Errorf("%s: not done after %s: %w", what, f.env.Timeout, err)
	}
	return nil
}

// CreateDrills creates one DRDrill of every application at once (fleetWorkers at a time),
// labelled with labels, each keeping its sandbox for keep once it has its result: the drills run
// side by side, as an organisation drilling its applications together would run them.
func (f *Fleet) CreateDrills(ctx context.Context, labels map[string]string, keep time.Duration) error {
	return f.each(ctx, func(ctx context.Context, r *Run) error {
		d := &v1alpha1.DRDrill{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.key.Namespace, GenerateName: r.key.Name + "-", Labels: labels},
			Spec:       v1alpha1.DRDrillSpec{DRPCName: r.key.Name, KeepFor: &metav1.Duration{Duration: keep}},
		}
		if err := f.env.Hub.Create(ctx, d); err != nil {
			return fmt.Errorf("failed to create a DRDrill of %s: %w", r.key, err)
		}
		return nil
	})
}

// EndDrillKeeps shortens the keep of every drill to nothing: the hub tears their sandboxes down.
func (f *Fleet) EndDrillKeeps(ctx context.Context, drills []v1alpha1.DRDrill) error {
	var errs []error
	for i := range drills {
		errs = append(errs, endKeep(ctx, f.env.Hub, client.ObjectKeyFromObject(&drills[i])))
	}
	return errors.Join(errs...)
}

// AwaitDrills lists the DRDrills labelled with selector every poll until there is one per
// application and each has met done at least once; it returns them as last listed and when the
// last one first met done, after began. A drill that ends (a final phase) before it meets done
// fails the wait at once with what the drill says went wrong; at the timeout it says how many
// had not and where the first few stood.
func (f *Fleet) AwaitDrills(ctx context.Context, what string, selector map[string]string, began time.Time,
	done func(*v1alpha1.DRDrill) bool) ([]v1alpha1.DRDrill, time.Duration, error) {
	seen := map[string]bool{}
	var last time.Duration
	var drills []v1alpha1.DRDrill
	var ended error
	err := f.poll(ctx, func(ctx context.Context) error {
		list := &v1alpha1.DRDrillList{}
		if err := f.env.Hub.List(ctx, list, client.MatchingLabels(selector)); err != nil {
			return fmt.Errorf("failed to list the DRDrills: %w", err)
		}
		drills = list.Items
		var waiting, failed []string
		for i := range list.Items {
			d := &list.Items[i]
			key := d.Namespace + "/" + d.Name
			switch {
			case seen[key]:
			case done(d):
				seen[key] = true
				last = time.Since(began)
			case DrillFinal(d.Status.Phase):
				failed = append(failed, fmt.Sprintf("drill %s ended %s: %s", key, d.Status.Phase, DrillMessage(d)))
			default:
				waiting = append(waiting, fmt.Sprintf("%s (%s, step %s)", key, orPending(d.Status.Phase), lastStep(d)))
			}
		}
		if len(failed) > 0 {
			sort.Strings(failed)
			ended = errors.New(strings.Join(failed, "; "))
			return nil
		}
		if len(seen) >= len(f.Runs) {
			return nil
		}
		sort.Strings(waiting)
		return fmt.Errorf("%d of %d drills not yet: %s", len(f.Runs)-len(seen), len(f.Runs), strings.Join(waiting[:min(3, len(waiting))], "; "))
	})
	if err != nil {
		return drills, last, fmt.Errorf("%s: not done after %s: %w", what, f.env.Timeout, err)
	}
	if ended != nil {
		return drills, last, fmt.Errorf("%s: %w", what, ended)
	}
	return drills, last, nil
}

// orPending names a drill's phase, Pending before the hub has written one.
func orPending(p v1alpha1.DrillPhase) v1alpha1.DrillPhase {
	if p == "" {
		return v1alpha1.DrillPending
	}
	return p
}
