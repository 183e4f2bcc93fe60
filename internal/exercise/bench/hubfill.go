package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
)

// HubFill is the hub-fill mode's measurement: many DRPlacementControls, each over a namespace
// with no workload (a group of no PVC), settled; the hub's requests to each managed cluster
// per second, from the hub's own client metrics, and its memory.
type HubFill struct {
	DRPCs int
	// Deployed is how many reached phase Deployed and Available before the settle window;
	// Fill how long that took.
	Deployed int
	Fill     time.Duration
	// Window is how long the requests were counted.
	Window time.Duration
	// RequestsPerSecond is the hub's requests per second to each managed cluster, by name.
	RequestsPerSecond map[string]float64
	HubRSS            int64
	Err               error
}

const fillLabel = "fill"

// fillHub creates count DRPlacementControls, one per namespace fill-<i> with no workload,
// waits until they are Deployed (or the step's time is up, reporting how many were), and
// counts the hub's requests to east and west over the settle window. It leaves them in the
// lab: it runs last, and the lab goes down after it.
func fillHub(ctx context.Context, o *Options, p *probe, count int) HubFill {
	h := HubFill{DRPCs: count, RequestsPerSecond: map[string]float64{}}
	say(o, "== hub fill: %d DRPlacementControls over namespaces without workloads (groups of no PVC)", count)
	began := time.Now()
	if err := createFill(ctx, o, count); err != nil {
		h.Err = err
		return h
	}
	h.Deployed, h.Fill, h.Err = awaitFill(ctx, o, count, began)
	say(o, "hub fill: %d of %d Deployed and Available after %s", h.Deployed, count, h.Fill.Round(100*time.Millisecond))
	if h.Err != nil {
		return h
	}
	window := o.SettleWindow
	before, err := p.drover(ctx, lab.Hub)
	if err != nil {
		h.Err = err
		return h
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		h.Err = ctx.Err()
		return h
	case <-time.After(window):
	}
	after, err := p.drover(ctx, lab.Hub)
	if err != nil {
		h.Err = err
		return h
	}
	h.Window = time.Since(t0)
	for _, name := range []string{lab.East, lab.West} {
		c, err := o.Lab.Cluster(name)
		if err != nil {
			h.Err = err
			return h
		}
		to := hostIs(":" + strconv.Itoa(c.Ports.APIServer))
		h.RequestsPerSecond[name] = (after.counter("rest_client_requests_total", to) - before.counter("rest_client_requests_total", to)) / h.Window.Seconds()
	}
	h.HubRSS, h.Err = p.rss(lab.Hub)
	say(o, "hub fill: requests per second to east %.2f, to west %.2f; hub RSS %s", h.RequestsPerSecond[lab.East], h.RequestsPerSecond[lab.West], mib(h.HubRSS))
	return h
}

func hostIs(portSuffix string) func(map[string]string) bool {
	return func(l map[string]string) bool { return strings.HasSuffix(l["host"], portSuffix) }
}

// createFill creates the namespaces and DRPlacementControls, 16 at once.
func createFill(ctx context.Context, o *Options, count int) error {
	hub := o.Env.Hub
	sem := make(chan struct{}, 16)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := range count {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ns := fmt.Sprintf("fill-%d", i)
			d := &v1alpha1.DRPlacementControl{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "group", Labels: map[string]string{RunLabel: fillLabel}},
				Spec: v1alpha1.DRPlacementControlSpec{
					DRPolicyRef: v1alpha1.PolicyReference{Name: lab.PolicyVolRep}, PreferredCluster: lab.East,
					PVCSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}, ProtectedNamespaces: []string{ns},
				},
			}
			err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err == nil || apierrors.IsAlreadyExists(err) {
				err = hub.Create(ctx, d)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("failed to create DRPlacementControl %s/group: %w", ns, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// awaitFill waits until every fill DRPlacementControl is Deployed and Available, or the step's
// time is up; it returns how many were and when the last one was first seen so.
func awaitFill(ctx context.Context, o *Options, count int, began time.Time) (int, time.Duration, error) {
	deadline := time.Now().Add(stepBase + time.Duration(count)*time.Second)
	seen := map[string]bool{}
	var last time.Duration
	for {
		list := &v1alpha1.DRPlacementControlList{}
		if err := o.Env.Hub.List(ctx, list, client.MatchingLabels{RunLabel: fillLabel}); err != nil {
			return len(seen), last, err
		}
		for i := range list.Items {
			d := &list.Items[i]
			if !seen[d.Namespace] && d.Status.Phase == v1alpha1.PhaseDeployed && isAvailable(d) {
				seen[d.Namespace] = true
				last = time.Since(began)
			}
		}
		if len(seen) == count || time.Now().After(deadline) {
			return len(seen), last, nil
		}
		select {
		case <-ctx.Done():
			return len(seen), last, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func isAvailable(d *v1alpha1.DRPlacementControl) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == v1alpha1.ConditionAvailable {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
