package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/actions"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/quantile"
	"github.com/drover-io/drover/internal/story"
)

// RunLabel labels the DRPlacementControls of one benchmark run, so the mass actions and the
// waits select them and nothing else.
const RunLabel = "bench.lab.drover.io/run"

// Defaults of a benchmark.
const (
	// DefaultSettleWindow is how long the settled API writes are counted.
	DefaultSettleWindow = time.Minute
	// stepBase and stepPerApp bound each step: a slow main must still finish N=100.
	stepBase   = 5 * time.Minute
	stepPerApp = 10 * time.Second
	// maxPVCs bounds the PVCs per application (a StatefulSet's replicas).
	maxPVCs = 100
)

// Options configure a benchmark.
type Options struct {
	// Lab is a running lab with drover installed (lab.Options.RunDrover); Env the story's
	// view of it (clients of the hub and of east and west, stop and start).
	Lab *lab.Lab
	Env story.Env
	// Sizes are the numbers of applications; PVCs the PVCs per application (a StatefulSet of
	// that many replicas, one volumeClaimTemplate). Every combination runs, smallest first.
	Sizes, PVCs []int
	// SettleWindow is how long the settled API writes are counted; 0 means DefaultSettleWindow.
	SettleWindow time.Duration
	// Drills, when not zero, runs the drill mode after the sizes with that many applications
	// drilled at once (drills.go), of the smallest of PVCs PVCs each.
	Drills int
	// HubDRPCs, when not zero, runs the hub-fill mode last with that many DRPlacementControls.
	HubDRPCs int
	// Out receives progress lines; nil discards them.
	Out io.Writer
	// Audit prints, after each step, the requests each API server received during it by client
	// (from the audit logs of a lab brought up with lab.Options.Audit).
	Audit bool
}

// Result is the measurement of N applications of PVCs PVCs each.
type Result struct {
	PVCs, N int
	// Floor is what the cluster alone takes to start the workloads over their bound PVCs.
	Floor time.Duration
	// RestoreFloor is what the cluster alone takes to start them from their PVs, PVCs and
	// StatefulSets created anew, as a restore creates them: the least any failover does.
	RestoreFloor time.Duration
	// FloorBusy and SettledBusy are how many cores the lab's processes kept busy during the
	// floor's step (before drover protects anything) and over the settle window: the actions
	// start from a machine as busy as settled protection keeps it.
	FloorBusy, SettledBusy float64
	// Protect: DRPCs created → each Deployed, Protected and PeerReady once. Failover: the mass
	// request with east stopped → all Available on west. Recover: east back (started) → all PeerReady.
	// Relocate: the mass request → all Available on east.
	Protect, Failover, Recover, Relocate time.Duration
	// FailoverP50 and RelocateP50 are the median of each application's own time, from its
	// request to its Available (the CLI's summary): what most applications waited for, where
	// Failover and Relocate are the last one's.
	FailoverP50, RelocateP50 time.Duration
	// RecordsKept and RecordsLost count the writers' records over the relocation (0 lost is
	// the check).
	RecordsKept, RecordsLost uint64
	// VRGWritesPerMin is drover.io write requests per VolumeReplicationGroup per minute on east
	// and west while settled; AllWritesPerMin every write request on both, per minute.
	VRGWritesPerMin, AllWritesPerMin float64
	// LeftProtected counts the DRPCs seen with Protected not True while settled (0 is the
	// goal); SyncLagP50 and SyncLagP99 are how far the DRPCs' lastGroupSyncTime trailed the
	// storage's syncs then, over SyncLags syncs (settled.go).
	LeftProtected, SyncLags int
	SyncLagP50, SyncLagP99  time.Duration
	// StorageGapP99 and StorageGapMax are the intervals between the storage's own syncs then:
	// a storage that misses the policy's interval leaves Protected whatever drover does.
	StorageGapP99, StorageGapMax time.Duration
	// HubRSS and AgentRSS are the largest resident memory seen (the agent: of east and west).
	HubRSS, AgentRSS int64
	// AgentCPU is the CPU east's and west's agents used over drover's steps (protect, settle,
	// failover, recover, relocate); Sealing what they spent sealing and opening their objects
	// then (sealing.go).
	AgentCPU time.Duration
	Sealing  Sealing
	// HubP99 and AgentP99 are the reconcile-time p99 of the DRPlacementControl and
	// VolumeReplicationGroup controllers over the run.
	HubP99, AgentP99 time.Duration
	// Err is the first failure; the fields after it are not measured.
	Err error
}

// Report is a whole benchmark.
type Report struct {
	Machine Machine
	Results []Result
	// Drills is the drill mode's measurement; nil when it did not run.
	Drills *Drills
	// Hub is the hub-fill mode's measurement; nil when it did not run.
	Hub *HubFill
}

// Run measures every combination of Sizes and PVCs in the lab, then the drill mode, then the
// hub-fill mode.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Lab == nil || o.Env.Hub == nil {
		return nil, errors.New("the benchmark needs a running lab with drover and its clients")
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.SettleWindow == 0 {
		o.SettleWindow = DefaultSettleWindow
	}
	rep := &Report{Machine: ThisMachine()}
	p := &probe{l: o.Lab}
	var errs []error
	for _, pvcs := range o.PVCs {
		for _, n := range o.Sizes {
			r := runOne(ctx, &o, p, pvcs, n)
			rep.Results = append(rep.Results, r)
			if r.Err != nil {
				errs = append(errs, fmt.Errorf("%d apps × %d PVCs: %w", n, pvcs, r.Err))
			}
		}
	}
	if o.Drills > 0 {
		// The drill mode leaves its applications and their drills in the lab when it runs last,
		// as the hub fill does: the lab goes down after it, or is kept to read them.
		pvcs := 1
		if len(o.PVCs) > 0 {
			pvcs = slices.Min(o.PVCs)
		}
		d := runDrills(ctx, &o, o.Drills, pvcs, o.HubDRPCs == 0)
		rep.Drills = &d
		if d.Err != nil {
			errs = append(errs, fmt.Errorf("drills at once: %w", d.Err))
		}
	}
	if o.HubDRPCs > 0 {
		h := fillHub(ctx, &o, p, o.HubDRPCs)
		rep.Hub = &h
		if h.Err != nil {
			errs = append(errs, fmt.Errorf("hub fill: %w", h.Err))
		}
	}
	return rep, errors.Join(errs...)
}

// say prints a progress line.
func say(o *Options, format string, args ...any) {
	fmt.Fprintf(o.Out, "[%s] %s\n", time.Now().UTC().Format(time.TimeOnly), fmt.Sprintf(format, args...))
}

// run is one combination in progress.
type run struct {
	o        *Options
	p        *probe
	fleet    *story.Fleet
	selector map[string]string
	env      story.Env
	// before are drover's metrics at the start, for the reconcile-time quantiles.
	before map[string]snapshot
	res    *Result
}

// runOne measures N applications of pvcs PVCs: deploy, floor, protect, settle, failover with
// east stopped, recover, relocate back with the records checked, then removes them.
func runOne(ctx context.Context, o *Options, p *probe, pvcs, n int) Result {
	res := Result{PVCs: pvcs, N: n}
	name := fmt.Sprintf("p%d-n%d", pvcs, n)
	env := o.Env
	env.Timeout = stepBase + time.Duration(n)*stepPerApp
	var cases []story.Case
	for i := range n {
		cases = append(cases, story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolRep, StorageClass: lab.BlockStorageClass,
			Mode: story.SelfContained, Namespace: fmt.Sprintf("bench-%s-%d", name, i), Replicas: int32(min(pvcs, maxPVCs))}) //nolint:gosec // bounded by maxPVCs
	}
	r := &run{o: o, p: p, fleet: story.NewFleet(env, cases, lab.East), selector: map[string]string{RunLabel: name}, env: env, res: &res}
	say(o, "== %d applications × %d PVCs (StatefulSets of %d replicas, %s, policy %s)", n, pvcs, pvcs, lab.BlockStorageClass, lab.PolicyVolRep)
	// A step of drover's (profile) prints where its workers spent it.
	steps := []struct {
		name    string
		fn      func(context.Context) error
		profile bool
	}{
		{"deploy", r.deploy, false}, {"floor", r.floor, false}, {"restore floor", r.restoreFloor, false}, {"protect", r.protect, true}, {"settle", r.settle, true},
		{"failover", r.failover, true}, {"recover", r.recover, true}, {"relocate", r.relocate, true}, {"observe", r.observe, false},
	}
	for _, s := range steps {
		began, scraped, cpu := time.Now(), r.scrapeDrover(ctx), r.readCPU()
		err := s.fn(ctx)
		// The CPU is read right at the step's end, before the audit log is read.
		end, cpuEnd := time.Now(), r.readCPU()
		r.auditStep(s.name, began, end)
		if s.profile {
			profile := cpuProfileOf(cpu, cpuEnd, end.Sub(began), runtime.NumCPU())
			say(o, "%s: %s", s.name, profile)
			after := r.scrapeDrover(ctx)
			r.profileStep(s.name, scraped, after)
			r.countSealing(s.name, scraped, after, profile)
		}
		if err != nil {
			res.Err = err
			if !strings.HasPrefix(err.Error(), s.name+":") {
				res.Err = fmt.Errorf("%s: %w", s.name, err)
			}
			say(o, "%s FAILED: %v", s.name, err)
			break
		}
		r.sampleRSS()
	}
	if err := r.fleet.Remove(ctx, r.selector); err != nil && res.Err == nil {
		res.Err = fmt.Errorf("remove: %w", err)
	}
	return res
}

func (r *run) deploy(ctx context.Context) error {
	began := time.Now()
	if err := r.fleet.Deploy(ctx); err != nil {
		return err
	}
	if err := r.fleet.Snapshot(ctx, lab.East); err != nil {
		return err
	}
	r.before = map[string]snapshot{}
	for _, c := range []string{lab.Hub, lab.East, lab.West} {
		s, err := r.p.drover(ctx, c)
		if err != nil {
			return err
		}
		r.before[c] = s
	}
	say(r.o, "deployed, every writer writing on east, in %s", time.Since(began).Round(100*time.Millisecond))
	return nil
}

func (r *run) floor(ctx context.Context) error {
	began, cpu := time.Now(), r.readCPU()
	d, err := r.fleet.Floor(ctx, lab.East)
	r.res.Floor = d
	r.res.FloorBusy = cpuProfileOf(cpu, r.readCPU(), time.Since(began), runtime.NumCPU()).busy()
	say(r.o, "floor: the cluster alone started the workloads over their bound PVCs in %s (%.2f cores busy during the step)",
		d.Round(10*time.Millisecond), r.res.FloorBusy)
	return err
}

func (r *run) restoreFloor(ctx context.Context) error {
	removed, err := r.fleet.RemoveWorkloads(ctx, lab.East)
	if err != nil {
		return err
	}
	began, cpu := time.Now(), r.readCPU()
	d, err := r.fleet.RestoreWorkloads(ctx, removed)
	r.res.RestoreFloor = d
	busy := cpuProfileOf(cpu, r.readCPU(), time.Since(began), runtime.NumCPU()).busy()
	say(r.o, "restore floor: the cluster alone started the workloads from their PVs, PVCs and StatefulSets created anew in %s, %.1f× the floor (%.2f cores busy)",
		d.Round(10*time.Millisecond), d.Seconds()/max(r.res.Floor.Seconds(), 1e-9), busy)
	return err
}

func (r *run) protect(ctx context.Context) error {
	began := time.Now()
	if err := r.fleet.CreateDRPCs(ctx, r.selector); err != nil {
		return err
	}
	d, err := r.fleet.AwaitAll(ctx, "protect", r.selector, began, r.fleet.Protected)
	r.res.Protect = d
	say(r.o, "protect: every application Deployed, Protected and PeerReady (each at least once) after %s", d.Round(10*time.Millisecond))
	return err
}

// settle counts the API servers' write requests on east and west over the settle window.
func (r *run) settle(ctx context.Context) error {
	// Drained first: the writes are counted over the window alone.
	r.quiet(ctx)
	var before, after [2]snapshot
	clusters := [2]string{lab.East, lab.West}
	for i, c := range clusters {
		s, err := r.p.apiServer(ctx, c)
		if err != nil {
			return err
		}
		before[i] = s
	}
	began, cpu := time.Now(), r.readCPU()
	say(r.o, "settle: counting write requests on east and west for %s, watching the DRPCs' Protected and sync times", r.o.SettleWindow)
	if err := r.sampleSettled(ctx, began.Add(r.o.SettleWindow)); err != nil {
		return err
	}
	r.res.SettledBusy = cpuProfileOf(cpu, r.readCPU(), time.Since(began), runtime.NumCPU()).busy()
	minutes := time.Since(began).Minutes()
	var vrg, all float64
	for i, c := range clusters {
		s, err := r.p.apiServer(ctx, c)
		if err != nil {
			return err
		}
		after[i] = s
		vrg += after[i].counter("apiserver_request_total", isWrite(v1alpha1.GroupVersion.Group)) -
			before[i].counter("apiserver_request_total", isWrite(v1alpha1.GroupVersion.Group))
		all += after[i].counter("apiserver_request_total", isWrite("")) - before[i].counter("apiserver_request_total", isWrite(""))
	}
	r.res.VRGWritesPerMin = vrg / float64(2*r.res.N) / minutes
	r.res.AllWritesPerMin = all / minutes
	say(r.o, "settle: %.1f drover.io writes per VRG per minute, %.0f writes per minute in all; %.2f cores busy", r.res.VRGWritesPerMin, r.res.AllWritesPerMin, r.res.SettledBusy)
	return nil
}

// Settled means the protection's work is done: quiet waits until the queues of east's agent and
// of the hub hold at most quietDepth groups at quietScrapes scrapes in a row, a second apart.
const (
	quietDepth   = 2
	quietScrapes = 3
)

// quiet waits, before the settle window, for the work the protection started to drain. The
// protect step ends when the last DRPC is first seen Protected, and it can end while east's agent
// still captures the new groups' objects and the sync status of the others waits behind that
// work in its queue: the window is to measure settled protection, not that backlog. Waiting
// longer than the step's timeout, it says so and lets the window begin.
func (r *run) quiet(ctx context.Context) {
	began, calm := time.Now(), 0
	for calm < quietScrapes {
		if time.Since(began) > r.env.Timeout {
			say(r.o, "settle: the queues did not drain within %s; measuring anyway", r.env.Timeout)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		depth := 0.0
		for c, queue := range map[string]string{lab.East: "volumereplicationgroup", lab.Hub: "drplacementcontrol"} {
			s, err := r.p.drover(ctx, c)
			if err != nil {
				depth = math.Inf(1)
				break
			}
			depth = max(depth, s.gauge("workqueue_depth", func(l map[string]string) bool { return l["name"] == queue }))
		}
		calm++
		if depth > quietDepth {
			calm = 0
		}
	}
	say(r.o, "settle: the queues of east's agent and the hub drained %s after protect", time.Since(began).Round(100*time.Millisecond))
}

// sampleSettled watches the run's DRPCs and their storage until end (settled.go) and records
// how many left Protected and their sync lag.
func (r *run) sampleSettled(ctx context.Context, end time.Time) error {
	var cfgs [2]*rest.Config
	for i, name := range []string{lab.Hub, lab.East} {
		c, err := r.p.cluster(name)
		if err != nil {
			return err
		}
		if cfgs[i], err = c.RESTConfig(); err != nil {
			return err
		}
	}
	s := newSyncSampler()
	if err := s.watch(ctx, cfgs[0], cfgs[1], r.selector, end); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	lags := s.lags(time.Now())
	r.res.LeftProtected, r.res.SyncLags = len(s.leftProtected), len(lags)
	r.res.SyncLagP50, r.res.SyncLagP99 = quantile.NearestRank(lags, 0.5), quantile.NearestRank(lags, 0.99)
	gaps := s.storageGaps()
	r.res.StorageGapP99, r.res.StorageGapMax = quantile.NearestRank(gaps, 0.99), quantile.NearestRank(gaps, 1)
	say(r.o, "settle: %d of %d DRPCs left Protected; their last sync trailed the storage's by p50 %s, p99 %s over %d syncs; the storage synced every p99 %s, at most %s",
		len(s.leftProtected), r.res.N, r.res.SyncLagP50.Round(10*time.Millisecond), r.res.SyncLagP99.Round(10*time.Millisecond), len(lags),
		r.res.StorageGapP99, r.res.StorageGapMax)
	for _, ns := range slices.Sorted(maps.Keys(s.leftProtected))[:min(3, len(s.leftProtected))] {
		say(r.o, "settle:   %s left Protected: %s", ns, s.leftProtected[ns])
	}
	return nil
}

// mass asks for action on every application of the run with drover's mass action and waits.
// It returns the median of the applications' own times to Available.
func (r *run) mass(ctx context.Context, action v1alpha1.DRAction, from, to string) (time.Duration, error) {
	o := actions.MassOptions{Action: action, From: from, To: to, Selector: RunLabel + "=" + r.selector[RunLabel], AllNamespaces: true,
		Wait: true, Timeout: r.env.Timeout, PollInterval: 250 * time.Millisecond, ProgressInterval: 10 * time.Second}
	res, err := actions.ActAll(ctx, r.env.Hub, r.o.Out, o)
	return quantile.NearestRank(res.Available, 0.5), err
}

func (r *run) failover(ctx context.Context) error {
	say(r.o, "failover: stopping east")
	if err := r.env.StopCluster(lab.East); err != nil {
		return err
	}
	began := time.Now()
	p50, err := r.mass(ctx, v1alpha1.ActionFailover, lab.East, lab.West)
	r.res.Failover, r.res.FailoverP50 = time.Since(began), p50
	say(r.o, "failover: all Available on west %s after the request (each application: p50 %s)",
		r.res.Failover.Round(10*time.Millisecond), p50.Round(10*time.Millisecond))
	return err
}

func (r *run) recover(ctx context.Context) error {
	if err := r.env.StartCluster(ctx, lab.East); err != nil {
		return err
	}
	// Measured from the moment east is back (its control plane, storage and agent up), so the
	// lab's own start time does not count.
	began := time.Now()
	d, err := r.fleet.AwaitAll(ctx, "recover", r.selector, began, story.PeerReady(lab.West))
	r.res.Recover = d
	say(r.o, "recover: east is back; every application PeerReady %s later", d.Round(10*time.Millisecond))
	return err
}

func (r *run) relocate(ctx context.Context) error {
	// A relocation needs the primary's data protected, which may follow PeerReady by a sync;
	// that wait is not the relocation's.
	if _, err := r.fleet.AwaitAll(ctx, "protected on west", r.selector, time.Now(), story.ProtectedOn(lab.West)); err != nil {
		return err
	}
	if err := r.fleet.Snapshot(ctx, lab.West); err != nil {
		return err
	}
	began := time.Now()
	p50, err := r.mass(ctx, v1alpha1.ActionRelocate, lab.West, lab.East)
	r.res.Relocate, r.res.RelocateP50 = time.Since(began), p50
	if err != nil {
		return err
	}
	r.res.RecordsKept, r.res.RecordsLost, err = r.fleet.Relocated(ctx, lab.West, lab.East)
	say(r.o, "relocate: all Available on east %s after the request (each application: p50 %s); records kept %d, lost %d",
		r.res.Relocate.Round(10*time.Millisecond), p50.Round(10*time.Millisecond), r.res.RecordsKept, r.res.RecordsLost)
	return err
}

// observe reads the reconcile-time quantiles of the run from drover's metrics.
func (r *run) observe(ctx context.Context) error {
	hub, err := r.p.droverReady(ctx, lab.Hub)
	if err != nil {
		return err
	}
	q := histogramQuantile(0.99, r.before[lab.Hub].reconcileBuckets(reconcileOf("drplacementcontrol")), hub.reconcileBuckets(reconcileOf("drplacementcontrol")))
	r.res.HubP99 = time.Duration(q * float64(time.Second))
	for _, c := range []string{lab.East, lab.West} {
		s, err := r.p.droverReady(ctx, c)
		if err != nil {
			return err
		}
		// east's agent restarted with its cluster: its counters began again, so only what it
		// observed since counts (its before is empty).
		before := r.before[c]
		if c == lab.East {
			before = snapshot{}
		}
		q := histogramQuantile(0.99, before.reconcileBuckets(reconcileOf("volumereplicationgroup")), s.reconcileBuckets(reconcileOf("volumereplicationgroup")))
		r.res.AgentP99 = max(r.res.AgentP99, time.Duration(q*float64(time.Second)))
	}
	return nil
}

// sampleRSS records the largest memory of the hub and of the agents seen so far.
func (r *run) sampleRSS() {
	if rss, err := r.p.rss(lab.Hub); err == nil {
		r.res.HubRSS = max(r.res.HubRSS, rss)
	}
	for _, c := range []string{lab.East, lab.West} {
		if rss, err := r.p.rss(c); err == nil {
			r.res.AgentRSS = max(r.res.AgentRSS, rss)
		}
	}
}

// auditTop is how many of the largest request counts auditStep prints per cluster.
const auditTop = 8

// auditStep prints, when auditing, the requests each cluster's API server received during a
// step, by client, verb and resource, the largest first.
func (r *run) auditStep(step string, began, end time.Time) {
	if !r.o.Audit {
		return
	}
	for _, c := range r.o.Lab.Clusters() {
		counts, err := lab.AuditCounts(c.AuditLogPath(), began, end)
		if err != nil {
			say(r.o, "%s: audit of %s: %v", step, c.Name, err)
			continue
		}
		var b strings.Builder
		_ = lab.WriteAuditTop(&b, counts, end.Sub(began), auditTop)
		say(r.o, "%s: requests %s received during it (%s):\n%s", step, c.Name, end.Sub(began).Round(100*time.Millisecond), strings.TrimRight(b.String(), "\n"))
	}
}
