package story

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// fleetWorkers bounds the requests a fleet makes at once.
const fleetWorkers = 16

// fleetPoll is how often a fleet looks again at what it waits for: one list per look.
const fleetPoll = 250 * time.Millisecond

// Fleet is many applications of the story side by side, for a benchmark: each a Run without a
// watcher (a watcher per application would load the very clusters being measured), deployed
// and checked together with one list per poll. The actions themselves are asked by the caller,
// with drover's mass actions, as a person would.
type Fleet struct {
	env  Env
	home string
	// Runs are the applications, one per case.
	Runs []*Run
	// byNamespace finds a run by its namespace.
	byNamespace map[string]*Run
	// snapshot is each application's writers when Snapshot was taken.
	snapshot map[*Run][]writer
}

// NewFleet prepares the applications of cases, each in its own namespace (self-contained mode),
// all starting on home.
func NewFleet(env Env, cases []Case, home string) *Fleet {
	f := &Fleet{env: env, home: home, byNamespace: map[string]*Run{}}
	for _, c := range cases {
		r := New(env, c, home)
		f.Runs = append(f.Runs, r)
		f.byNamespace[c.Namespace] = r
	}
	return f
}

// each runs fn for every application, fleetWorkers at once, and joins the errors.
func (f *Fleet) each(ctx context.Context, fn func(context.Context, *Run) error) error {
	sem := make(chan struct{}, fleetWorkers)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, r := range f.Runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, r); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", r.c.Namespace, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Deploy creates every application's namespace and objects on home.
func (f *Fleet) Deploy(ctx context.Context) error {
	return f.each(ctx, func(ctx context.Context, r *Run) error {
		if r.c.Mode != SelfContained {
			return errors.New("a fleet runs self-contained applications only")
		}
		objs, err := manifests(r.c.Workload, r.c.Replicas, r.c.StorageClass, r.c.AppProcesses)
		if err != nil {
			return err
		}
		if err := createNamespace(ctx, r.env.Hub, r.c.Namespace); err != nil {
			return err
		}
		r.t0 = time.Now()
		return r.deploy(ctx, objs)
	})
}

// Snapshot waits until every application writes on cluster and records its writers, for
// Relocated.
func (f *Fleet) Snapshot(ctx context.Context, cluster string) error {
	snap := map[*Run][]writer{}
	var mu sync.Mutex
	err := f.each(ctx, func(ctx context.Context, r *Run) error {
		ws, _, err := r.writing(ctx, cluster)
		mu.Lock()
		snap[r] = ws
		mu.Unlock()
		return err
	})
	f.snapshot = snap
	return err
}

// Relocated checks, once every application was relocated from to, that every record their
// writers acknowledged on from (since Snapshot) is on to; it returns the records kept and lost.
func (f *Fleet) Relocated(ctx context.Context, from, to string) (kept, lost uint64, err error) {
	var mu sync.Mutex
	err = f.each(ctx, func(ctx context.Context, r *Run) error {
		k, l, err := r.relocated(ctx, from, to, f.snapshot[r])
		mu.Lock()
		kept, lost = kept+k, lost+l
		mu.Unlock()
		return err
	})
	return kept, lost, err
}

// CreateDRPCs creates every application's DRPlacementControl, preferring home, with labels.
func (f *Fleet) CreateDRPCs(ctx context.Context, labels map[string]string) error {
	return f.each(ctx, func(ctx context.Context, r *Run) error {
		d := r.drpcObject()
		d.Labels = labels
		return r.env.Hub.Create(ctx, d)
	})
}

// Protected says whether an application is Deployed on home, Protected and PeerReady.
func (f *Fleet) Protected(d *v1alpha1.DRPlacementControl) bool {
	return settled(d, v1alpha1.PhaseDeployed, f.home) && isTrue(d, v1alpha1.ConditionProtected) && isTrue(d, v1alpha1.ConditionPeerReady)
}

// Available says whether an application runs on cluster in phase, Available.
func Available(phase v1alpha1.DRPCPhase, cluster string) func(*v1alpha1.DRPlacementControl) bool {
	return func(d *v1alpha1.DRPlacementControl) bool { return settled(d, phase, cluster) }
}

// PeerReady says whether an application runs on cluster, Available, with its peer ready.
func PeerReady(cluster string) func(*v1alpha1.DRPlacementControl) bool {
	return func(d *v1alpha1.DRPlacementControl) bool {
		return d.Status.CurrentPrimary == cluster && isTrue(d, v1alpha1.ConditionAvailable) && isTrue(d, v1alpha1.ConditionPeerReady)
	}
}

// ProtectedOn says whether an application runs on cluster, Available, PeerReady and Protected:
// what a relocation away from cluster needs.
func ProtectedOn(cluster string) func(*v1alpha1.DRPlacementControl) bool {
	return func(d *v1alpha1.DRPlacementControl) bool {
		return PeerReady(cluster)(d) && isTrue(d, v1alpha1.ConditionProtected)
	}
}

// AwaitAll lists the fleet's DRPlacementControls (those labelled with selector) every poll
// until each has met done at least once, and returns when the last one first did, after
// began. At the timeout it says how many had not and where the first few stood.
func (f *Fleet) AwaitAll(ctx context.Context, what string, selector map[string]string, began time.Time,
	done func(*v1alpha1.DRPlacementControl) bool) (time.Duration, error) {
	seen := map[string]time.Duration{}
	var last time.Duration
	pending := ""
	err := f.poll(ctx, func(ctx context.Context) error {
		list := &v1alpha1.DRPlacementControlList{}
		if err := f.env.Hub.List(ctx, list, client.MatchingLabels(selector)); err != nil {
			return fmt.Errorf("%s: failed to list the DRPlacementControls: %w", what, err)
		}
		var waiting []string
		for i := range list.Items {
			d := &list.Items[i]
			if _, ok := seen[d.Namespace]; ok || f.byNamespace[d.Namespace] == nil {
				continue
			}
			if done(d) {
				seen[d.Namespace] = time.Since(began)
				last = max(last, seen[d.Namespace])
				continue
			}
			waiting = append(waiting, fmt.Sprintf("%s (%s/%s: %s)", d.Namespace, d.Status.Phase, d.Status.Progression,
				condition(d, v1alpha1.ConditionAvailable).Message))
		}
		if len(seen) == len(f.Runs) {
			return nil
		}
		sort.Strings(waiting)
		pending = fmt.Sprintf("%d of %d not yet: %s", len(f.Runs)-len(seen), len(f.Runs), strings.Join(waiting[:min(3, len(waiting))], "; "))
		return errors.New(pending)
	})
	if err != nil {
		return last, fmt.Errorf("%s: not done after %s: %w", what, f.env.Timeout, err)
	}
	return last, nil
}

// poll calls check every fleetPoll until it returns nil or the step's timeout passes.
func (f *Fleet) poll(ctx context.Context, check func(context.Context) error) error {
	return pollUntil(ctx, f.env.Timeout, fleetPoll, check)
}

// Floor measures what the cluster alone takes to start the fleet's workloads over their bound
// PVCs: every StatefulSet is scaled to zero, and once no pod is left, back to its replicas; it
// returns the time from the scale-up until every pod is Running and Ready. drover is not
// involved: this is the floor under any failover of these applications on this machine.
func (f *Fleet) Floor(ctx context.Context, cluster string) (time.Duration, error) {
	cl := f.env.Clusters[cluster]
	scale := func(replicas func(*Run) int32) error {
		return f.each(ctx, func(ctx context.Context, r *Run) error {
			patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas(r))
			sts := &appsv1.StatefulSet{}
			sts.Namespace, sts.Name = r.c.Namespace, "db"
			return cl.Patch(ctx, sts, client.RawPatch(types.MergePatchType, patch))
		})
	}
	if err := scale(func(*Run) int32 { return 0 }); err != nil {
		return 0, fmt.Errorf("failed to scale the workloads to zero: %w", err)
	}
	if err := f.poll(ctx, func(ctx context.Context) error { return f.podsReady(ctx, cluster, 0) }); err != nil {
		return 0, fmt.Errorf("the workloads did not stop: %w", err)
	}
	began := time.Now()
	if err := scale(func(r *Run) int32 { return r.c.Replicas }); err != nil {
		return 0, fmt.Errorf("failed to scale the workloads up: %w", err)
	}
	want := 0
	for _, r := range f.Runs {
		want += int(r.c.Replicas)
	}
	if err := f.poll(ctx, func(ctx context.Context) error { return f.podsReady(ctx, cluster, want) }); err != nil {
		return 0, fmt.Errorf("the workloads did not start again: %w", err)
	}
	return time.Since(began), nil
}

// podsReady checks that the fleet has exactly want pods on cluster, all Running and Ready
// (want 0: none at all), with one list.
func (f *Fleet) podsReady(ctx context.Context, cluster string, want int) error {
	pods := &corev1.PodList{}
	if err := f.env.Clusters[cluster].List(ctx, pods, client.MatchingLabels(AppLabel)); err != nil {
		return err
	}
	n, ready := 0, 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if f.byNamespace[p.Namespace] == nil {
			continue
		}
		n++
		if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning && podIsReady(p) {
			ready++
		}
	}
	if n != want || ready != want {
		return fmt.Errorf("%d pods, %d Ready, want %d", n, ready, want)
	}
	return nil
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Remove unprotects the fleet (deletes its DRPlacementControls, labelled with selector, and waits
// until they are gone) and then deletes its namespaces everywhere, without waiting.
func (f *Fleet) Remove(ctx context.Context, selector map[string]string) error {
	err := f.each(ctx, func(ctx context.Context, r *Run) error {
		d := &v1alpha1.DRPlacementControl{}
		d.Namespace, d.Name = r.key.Namespace, r.key.Name
		return client.IgnoreNotFound(f.env.Hub.Delete(ctx, d))
	})
	if err != nil {
		return fmt.Errorf("failed to delete the DRPlacementControls: %w", err)
	}
	err = f.poll(ctx, func(ctx context.Context) error {
		list := &v1alpha1.DRPlacementControlList{}
		if err := f.env.Hub.List(ctx, list, client.MatchingLabels(selector)); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d DRPlacementControls left", len(list.Items))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unprotect: %w", err)
	}
	clients := []client.Client{f.env.Hub}
	for _, name := range sortedKeys(f.env.Clusters) {
		clients = append(clients, f.env.Clusters[name])
	}
	return f.each(ctx, func(ctx context.Context, r *Run) error {
		for _, cl := range clients {
			ns := &corev1.Namespace{}
			ns.Name = r.c.Namespace
			if err := client.IgnoreNotFound(cl.Delete(ctx, ns)); err != nil {
				return err
			}
		}
		return nil
	})
}
