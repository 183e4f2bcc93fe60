package actions

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/quantile"
)

// Results of one application of a mass action, as the summary prints them.
const (
	resultAvailable = "Available"
	resultFailed    = "failed"
	resultTimedOut  = "timed out"
	resultRefused   = "refused"
	resultNoop      = "nothing to do"
	resultAsked     = "asked"
)

// tracked is one application of a mass action: what was asked and how it ended.
type tracked struct {
	*entry
	// follow: the action was asked (or was already under way) and Wait follows it.
	follow     bool
	generation int64
	asked      time.Time
	// result is one of the result constants; "" while it runs.
	result string
	took   time.Duration
	detail string
	// last is the latest progress read; seen the DRPlacementControl it was read from.
	last progress
	seen *v1alpha1.DRPlacementControl
}

// ActAll asks for the action on every application the options select, each with one patch of
// its DRPlacementControl, at most Workers at once. It prints the plan first; a batch with a
// refused application is refused whole unless SkipRefused. With Wait it follows them all,
// printing a progress line every ProgressInterval (done/total, the slowest still running)
// and each failure as it happens, then a summary table; it fails when any asked action failed.
func ActAll(ctx context.Context, c client.Client, w io.Writer, o MassOptions) (MassResult, error) {
	entries, err := massPreview(ctx, c, &o)
	if err != nil {
		return MassResult{}, err
	}
	out := w
	w = cli.ProgressWriter(w, o.Output, o.Log)
	printMassPlan(w, &o, entries)
	n := countOf(entries)
	if n.refused > 0 && !o.SkipRefused {
		return MassResult{}, refusedBatch(&o, n)
	}
	if o.Confirm != nil && n.start > 0 {
		if err := o.Confirm.Confirm(confirmWhat(&o, n.start)); err != nil {
			return MassResult{}, err
		}
	}
	ts := make([]*tracked, 0, len(entries))
	for _, e := range entries {
		t := &tracked{entry: e}
		v, detail := e.verdict()
		switch v {
		case "refused":
			t.result, t.detail = resultRefused, detail
		case "nothing to do":
			t.result, t.detail = resultNoop, detail
			// An action already under way to the target is followed like an asked one.
			if !cli.Settled(e.a.DRPC.Status.Phase) {
				t.result, t.follow, t.generation, t.asked = "", true, e.a.DRPC.Generation, cli.Now(o.Now)
			}
		}
		ts = append(ts, t)
	}
	askAll(ctx, c, &o, ts)
	verb := strings.ToLower(string(o.Action))
	fmt.Fprintf(w, "\nAsked the hub to %s %d applications to %s.\n", verb, countFollowed(ts), o.To)
	if o.Wait {
		waitAll(ctx, c, w, &o, ts)
	} else {
		for _, t := range ts {
			if t.follow && t.result == "" {
				t.result = resultAsked
			}
		}
	}
	if o.Output == "" {
		printSummary(w, &o, ts)
	} else if err := printMassReports(out, &o, entries, ts); err != nil {
		return MassResult{}, err
	}
	return MassResult{Available: availableAfter(ts)}, massError(&o, ts)
}

// confirmWhat is what a person confirms for a mass action, and the name to type: the cluster
// the applications leave (failover --all always names it), else the one they move to.
func confirmWhat(o *MassOptions, n int) (string, string) {
	if o.Action == v1alpha1.ActionFailover {
		return fmt.Sprintf("fail over %d applications from cluster %s to %s, losing the writes made since their last sync", n, o.From, o.To), o.From
	}
	if o.From != "" {
		return fmt.Sprintf("relocate %d applications from cluster %s to %s", n, o.From, o.To), o.From
	}
	return fmt.Sprintf("relocate %d applications to cluster %s", n, o.To), o.To
}

// MassResult is what a mass action measured.
type MassResult struct {
	// Available is how long each application that became Available took (from its request, or
	// from when the command began following an action already under way), in the plan's order.
	Available []time.Duration
}

// availableAfter is how long each application that became Available took.
func availableAfter(ts []*tracked) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		if t.result == resultAvailable && t.took > 0 {
			out = append(out, t.took)
		}
	}
	return out
}

// askAll patches the DRPlacementControls that can start, Workers at once.
func askAll(ctx context.Context, c client.Client, o *MassOptions, ts []*tracked) {
	workers := o.Workers
	if workers == 0 {
		workers = DefaultWorkers
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for _, t := range ts {
		if t.result != "" || t.follow {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t.asked = cli.Now(o.Now)
			if _, err := askHub(ctx, c, t.a.DRPC, o.Action, o.To); err != nil {
				t.result, t.detail = resultFailed, err.Error()
				return
			}
			t.follow, t.generation = true, t.a.DRPC.Generation
		}()
	}
	wg.Wait()
}

func countFollowed(ts []*tracked) int {
	n := 0
	for _, t := range ts {
		if t.follow {
			n++
		}
	}
	return n
}

// massError is the mass action's verdict: nil when every asked action succeeded (or was asked,
// without Wait).
func massError(o *MassOptions, ts []*tracked) error {
	var failed []string
	for _, t := range ts {
		if t.result == resultFailed || t.result == resultTimedOut {
			failed = append(failed, t.key())
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return cli.Partial(fmt.Errorf("the %s of %d of %d applications did not complete: %s (see the summary above; the hub goes on: follow them with `drover status -A`)",
		strings.ToLower(string(o.Action)), len(failed), len(ts), strings.Join(failed, ", ")))
}

// waitAll follows the asked actions with one list of the DRPlacementControls per poll until
// every one is done or failed, or the timeout passes.
func waitAll(ctx context.Context, c client.Reader, w io.Writer, o *MassOptions, ts []*tracked) {
	timeout, interval := cli.OrDefault(o.Timeout, DefaultTimeout), cli.OrDefault(o.PollInterval, cli.DefaultPollInterval)
	stallAfter, every := cli.OrDefault(o.StallAfter, cli.DefaultStallAfter), cli.OrDefault(o.ProgressInterval, DefaultProgressInterval)
	start := cli.Now(o.Now)
	lastLine := start
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := pollAll(ctx, c, w, o, ts, stallAfter); err != nil && ctx.Err() == nil {
			fmt.Fprintf(w, "%7s  failed to list the DRPlacementControls: %v (retrying)\n", seconds(cli.Now(o.Now).Sub(start)), err)
		}
		running := runningOf(ts)
		t := cli.Now(o.Now)
		if len(running) == 0 || t.Sub(lastLine) >= every {
			fmt.Fprintln(w, massProgressLine(t.Sub(start), ts, running, t))
			lastLine = t
		}
		if len(running) == 0 {
			return
		}
		var stop string
		select {
		case <-ctx.Done():
			stop = fmt.Sprintf("stopped waiting: %v", ctx.Err())
		case <-time.After(timeout - cli.Now(o.Now).Sub(start)):
			stop = fmt.Sprintf("timed out after %s", timeout)
		case <-ticker.C:
		}
		if stop != "" {
			for _, r := range running {
				r.result, r.took = resultTimedOut, cli.Now(o.Now).Sub(r.asked)
				r.detail = fmt.Sprintf("%s at phase %s, step %s, %s", stop, r.last.phase, r.last.progression, r.last.available)
			}
			return
		}
	}
}

// pollAll judges each action still running once; a failure is printed the moment it is seen.
// It lists the DRPlacementControls' metadata only and reads in full those whose
// resourceVersion changed since the last poll: a full list of 100 is about 1 MB to encode on
// the hub's API server at every poll (measured: a tenth of the hub API server's CPU during a
// failover of 100 polled every 250 ms).
func pollAll(ctx context.Context, c client.Reader, w io.Writer, o *MassOptions, ts []*tracked, stallAfter time.Duration) error {
	metas := &metav1.PartialObjectMetadataList{}
	metas.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("DRPlacementControlList"))
	opts := []client.ListOption{}
	if !o.AllNamespaces {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	if err := c.List(ctx, metas, opts...); err != nil {
		return err
	}
	versions := map[string]string{}
	for i := range metas.Items {
		versions[metas.Items[i].Namespace+"/"+metas.Items[i].Name] = metas.Items[i].ResourceVersion
	}
	t := cli.Now(o.Now)
	for _, r := range runningOf(ts) {
		version, ok := versions[r.key()]
		if !ok {
			r.result, r.took, r.detail = resultFailed, t.Sub(r.asked), "the DRPlacementControl was deleted while waiting"
			fmt.Fprintf(w, "%7s  FAILED %s: %s\n", seconds(r.took), r.key(), r.detail)
			continue
		}
		if r.seen == nil || r.seen.ResourceVersion != version {
			d := &v1alpha1.DRPlacementControl{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(r.a.DRPC), d); err != nil {
				if apierrors.IsNotFound(err) {
					continue // deleted since the list: the next poll says so
				}
				return err
			}
			r.seen = d
		}
		d := r.seen
		r.last = progressOf(d)
		ao := ActionOptions{Namespace: d.Namespace, App: d.Name, Action: o.Action, To: o.To}
		done, err := outcome(d, &ao, r.generation)
		if err == nil && !done && t.Sub(r.asked) >= stallAfter && !observed(d, r.generation) {
			err = fmt.Errorf("the hub has not observed the change in %s: %s", t.Sub(r.asked).Round(time.Second), cli.HubHint)
		}
		switch {
		case err != nil:
			r.result, r.took, r.detail = resultFailed, t.Sub(r.asked), err.Error()
			fmt.Fprintf(w, "%7s  FAILED %s: %s\n", seconds(r.took), r.key(), r.detail)
		case done:
			r.result, r.took = resultAvailable, t.Sub(r.asked)
		}
	}
	return nil
}

// runningOf are the followed actions not yet judged, the longest running first.
func runningOf(ts []*tracked) []*tracked {
	var out []*tracked
	for _, t := range ts {
		if t.follow && t.result == "" {
			out = append(out, t)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].asked.Before(out[j].asked) })
	return out
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// massProgressLine is one progress line: done/total, failures, and the slowest still running
// with their step.
func massProgressLine(elapsed time.Duration, ts []*tracked, running []*tracked, t time.Time) string {
	done, failed := 0, 0
	for _, r := range ts {
		switch r.result {
		case resultAvailable:
			done++
		case resultFailed, resultTimedOut:
			failed++
		}
	}
	line := fmt.Sprintf("%7s  %d/%d available, %d failed, %d running", seconds(elapsed), done, countFollowed(ts), failed, len(running))
	var slow []string
	for _, r := range running[:min(len(running), slowestShown)] {
		slow = append(slow, fmt.Sprintf("%s (%s, %s %s)", r.key(), seconds(t.Sub(r.asked)), r.last.phase, r.last.progression))
	}
	if len(slow) > 0 {
		line += "; slowest: " + strings.Join(slow, ", ")
	}
	return line
}

// printSummary prints a row per application: its result, how long it took and why it failed.
func printSummary(w io.Writer, o *MassOptions, ts []*tracked) {
	fmt.Fprintln(w, "\nSummary:")
	tw := cli.NewTabWriter(w)
	fmt.Fprintln(tw, "NAMESPACE\tAPP\tRESULT\tDURATION\tDETAIL")
	var slowest time.Duration
	for _, t := range ts {
		took := "-"
		if t.took > 0 {
			took = seconds(t.took)
			slowest = max(slowest, t.took)
		}
		result := t.result
		if result == resultAvailable {
			result += " on " + o.To
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.a.DRPC.Namespace, t.a.DRPC.Name, result, took, cli.Dash(t.detail))
	}
	_ = tw.Flush()
	byResult := map[string]int{}
	for _, t := range ts {
		byResult[t.result]++
	}
	parts := []string{}
	for _, r := range []string{resultAvailable, resultAsked, resultFailed, resultTimedOut, resultRefused, resultNoop} {
		if byResult[r] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", byResult[r], r))
		}
	}
	spread := ""
	if took := availableAfter(ts); len(took) > 1 {
		// The distribution, not only the slowest: what most applications waited for.
		spread = fmt.Sprintf("; half were Available within %s, nine in ten within %s",
			seconds(quantile.NearestRank(took, 0.5)), seconds(quantile.NearestRank(took, 0.9)))
	}
	fmt.Fprintf(w, "%s of %d applications; the slowest took %s%s.\n", strings.Join(parts, ", "), len(ts), seconds(slowest), spread)
}
