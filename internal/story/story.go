package story

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/deployer"
	"github.com/drover-io/drover/internal/tenancy"
)

// Mode is how the application is named to drover.
type Mode string

const (
	// SelfContained protects protectedNamespaces: drover captures and restores the objects.
	SelfContained Mode = "self-contained"
	// Placement protects a placementRef: a GitOps tool (the lab's deployer) deploys the
	// application where the PlacementDecision says, first OCM's placement controller's (the
	// lab's, on the case's Placement), drover's from protection on.
	Placement Mode = "placement"
)

// Case is one application and how it is protected.
type Case struct {
	Workload Workload
	// Policy is the DRPolicy; StorageClass the class of the application's PVCs, which the
	// policy replicates.
	Policy, StorageClass string
	Mode                 Mode
	// Namespace is the application's namespace (on the hub, for the DRPC, and the managed
	// clusters).
	Namespace string
	// Replicas of a StatefulSet; 3 when zero.
	Replicas int32
	// Placement names the placement of placement mode (db when empty); PlacementNamespace is
	// where its decision lives, the namespace a GitOps tool reads (Namespace when empty).
	Placement, PlacementNamespace string
	// AppProcesses runs the application's pods as real processes on the lab kubelet's node,
	// each running `drover lab writer` over its mounted PVCs, in place of pods on kwok's fake
	// nodes for which the lab storage writes the records. It needs a lab that runs drover (its
	// kubelets). The demo, the soak and the e2e suite set it; the packages' story tests do not.
	AppProcesses bool
	// ConsistencyGroups are the DRPlacementControl's consistency groups; none when empty.
	ConsistencyGroups []v1alpha1.ConsistencyGroup
	// Hooks protects the application with its recipe (the Postgres workload's, PostgresRecipe,
	// in self-contained mode), which the DRPlacementControl names: after each failover and
	// relocation the story checks that the recipe's hooks for it ran and succeeded, on the
	// cluster each belongs to.
	Hooks bool
}

// placement is the placement's name.
func (c Case) placement() string {
	if c.Placement == "" {
		return "db"
	}
	return c.Placement
}

// Name is a short name of the case, for test names and tables: workload/policy/mode, and
// @class after them when the storage class is not the one the lab's policy replicates by default
// (not /class: a subtest level that a -run pattern for the default class's case would enter).
func (c Case) Name() string {
	name := fmt.Sprintf("%s/%s/%s", c.Workload, c.Policy, c.Mode)
	if c.Hooks {
		name = fmt.Sprintf("%s+hooks/%s/%s", c.Workload, c.Policy, c.Mode)
	}
	if c.StorageClass != "" && c.StorageClass != labClass(c.Policy) {
		name += "@" + c.StorageClass
	}
	return name
}

// Unit is what the case's table counts: TRANSACTIONS of the Postgres workload's pgbench,
// RECORDS of the lab's writers.
func (c Case) Unit() string {
	if c.Workload.isPostgres() {
		return "TRANSACTIONS"
	}
	return "RECORDS"
}

// Env is the lab as a story sees it.
type Env struct {
	// Hub is a client of the hub with drover's, OCM's and client-go's types; Clusters are
	// clients of east and west with drover's and client-go's types.
	Hub      client.Client
	Clusters map[string]client.Client
	// DataDir returns a managed cluster's lab storage directory, where the records are read;
	// LogDir, when set, the directory of its lab kubelet's container logs.
	DataDir, LogDir func(cluster string) string
	// StopCluster loses a cluster (control plane, storage, agent); StartCluster brings it back.
	StopCluster  func(cluster string) error
	StartCluster func(ctx context.Context, cluster string) error
	// Partition cuts a running cluster off from the hub and its peer (the lab's network
	// partition); Heal ends it. Nil when the lab has none: the partition steps then fail.
	Partition, Heal func(cluster string) error
	// Out receives a line per step and per change of what drover waits for; nil discards.
	Out io.Writer
	// Timeout bounds each step; 4 minutes when zero.
	Timeout time.Duration
	// StartGitOps, when set, makes a real GitOps tool follow the case's placement (Argo CD
	// in the lab); nil runs the lab's deployer.
	StartGitOps func(ctx context.Context, c Case) error
}

// Step is the outcome of one action.
type Step struct {
	Action   string
	From, To string
	Duration time.Duration
	// Kept and Lost count the records of the writers that ran before the action, summed over
	// the PVCs: kept on the target, and lost (written, not on the target).
	Kept, Lost uint64
	// LossBound is what a failover may lose: the time from the last group sync to the loss of
	// the cluster. Zero for a relocation, which may lose nothing. A drill's RPO.
	LossBound time.Duration
	// Note, when set, replaces the bound in the table: what a readiness drill checked.
	Note string
	// Check, when set, is what a drill's check Job said, or what a failover's target holds
	// out of twin order; the table shows it with the verdict.
	Check string
	// TornTwins are the writers whose volumes a failover's target holds from different
	// instants, out of twin order (TornTwin): reported, not a failure, while drover has no
	// consistency groups.
	TornTwins []TornTwin
	// Err is why the step's check failed; nil when it passed.
	Err error
}

// Failure is the step's failed check naming the action and its clusters; nil when it passed.
func (s Step) Failure() error {
	if s.Err == nil {
		return nil
	}
	return fmt.Errorf("%s %s→%s: %w", s.Action, s.From, s.To, s.Err)
}

// Run is a story in progress: it holds what the steps learned (the application's writers, the
// clusters that are down) for the next steps and the watcher.
type Run struct {
	env  Env
	c    Case
	key  client.ObjectKey
	out  io.Writer
	t0   time.Time
	home string
	// Steps are the outcomes so far.
	Steps []Step

	mu sync.Mutex
	// down are the stopped clusters; back is when each cluster last came back (started, or
	// healed).
	down map[string]bool
	back map[string]time.Time
	// droverBack is when a drover process killed during a return's grace ran again
	// (DroverRestarted): the grace counts from it as from a return.
	droverBack time.Time
	// cut are the partitioned clusters, with what the partition step learned (partition.go).
	cut map[string]*partition
	// violations are the moments the watcher saw two writable primaries.
	violations []string
	// splits are the overlaps the watcher saw during a partition, when drover cannot know:
	// reported, not violations.
	splits []string
	// overlap is the longest time both clusters ran writers after a cluster came back.
	overlap time.Duration

	stopBackground context.CancelFunc
	background     sync.WaitGroup
	deployer       *deployer.Deployer
	// pg is what the Postgres workload's judge learned (pgjudge.go).
	pg pgState
}

// New prepares a story of case c whose application starts on home.
func New(env Env, c Case, home string) *Run {
	if c.Replicas == 0 {
		c.Replicas = 3
	}
	if env.Timeout == 0 {
		env.Timeout = 4 * time.Minute
	}
	out := env.Out
	if out == nil {
		out = io.Discard
	}
	return &Run{env: env, c: c, key: client.ObjectKey{Namespace: c.Namespace, Name: "db"}, out: out, home: home,
		down: map[string]bool{}, back: map[string]time.Time{}, cut: map[string]*partition{}}
}

// say prints a progress line with the time since the story began.
func (r *Run) say(format string, args ...any) {
	fmt.Fprintf(r.out, "[%7.1fs] %s\n", time.Since(r.t0).Seconds(), fmt.Sprintf(format, args...))
}

// Start deploys the application on home with the lab's writer and starts the watcher and, in
// placement mode, the lab's OCM placement controller and the deployer. Close stops them.
func (r *Run) Start(ctx context.Context) error {
	r.t0 = time.Now()
	bg, cancel := context.WithCancel(context.Background())
	r.stopBackground = cancel
	objs, err := manifests(r.c.Workload, r.c.Replicas, r.c.StorageClass, r.c.AppProcesses)
	if err != nil {
		return err
	}
	if err := createNamespace(ctx, r.env.Hub, r.c.Namespace); err != nil {
		return err
	}
	if err := r.allowPlacementNamespace(ctx); err != nil {
		return err
	}
	if err := r.createRecipe(ctx); err != nil {
		return err
	}
	switch r.c.Mode {
	case SelfContained:
		r.say("deploy: %s in namespace %s on %s (%s)", r.c.Workload, r.c.Namespace, r.home, r.c.StorageClass)
		if err := r.deploy(ctx, objs); err != nil {
			return err
		}
	case Placement:
		if err := r.startPlacementController(ctx, bg); err != nil {
			return err
		}
		if r.env.StartGitOps != nil {
			r.say("deploy: the GitOps tool follows placement %s (%s)", r.c.placement(), r.c.Workload)
			if err := r.env.StartGitOps(ctx, r.c); err != nil {
				return err
			}
			break
		}
		r.say("deploy: the lab's GitOps deployer follows placement db in namespace %s (%s)", r.c.Namespace, r.c.Workload)
		var us []*unstructured.Unstructured
		for _, o := range objs {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return err
			}
			us = append(us, &unstructured.Unstructured{Object: m})
		}
		r.deployer = &deployer.Deployer{Hub: r.env.Hub, Clusters: r.env.Clusters, Namespace: r.c.Namespace, Placement: "db",
			Manifests: us, Interval: 500 * time.Millisecond}
		r.background.Add(1)
		go func() {
			defer r.background.Done()
			_ = r.deployer.Run(bg)
		}()
	}
	r.background.Add(1)
	go func() {
		defer r.background.Done()
		r.watch(bg)
	}()
	return nil
}

// deploy creates the application's namespace and objects on home (self-contained mode).
func (r *Run) deploy(ctx context.Context, objs []client.Object) error {
	home := r.env.Clusters[r.home]
	if err := createNamespace(ctx, home, r.c.Namespace); err != nil {
		return err
	}
	for _, o := range objs {
		o.SetNamespace(r.c.Namespace)
		if err := home.Create(ctx, o); err != nil {
			return fmt.Errorf("failed to create %s %s on %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), r.home, err)
		}
	}
	return nil
}

// Close stops the watcher and the deployer, starts a stopped cluster and heals a partitioned
// one, and returns the watcher's verdict: an error naming every moment both clusters ran a
// writable primary outside a partition and the grace after a return.
func (r *Run) Close() error {
	if r.stopBackground != nil {
		r.stopBackground()
	}
	r.background.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	// A story that failed with a cluster stopped leaves the lab as it found it.
	var errs []error
	if err := r.deletePlacement(); err != nil {
		errs = append(errs, err)
	}
	for _, cluster := range sortedKeys(r.down) {
		if err := r.env.StartCluster(context.Background(), cluster); err != nil {
			errs = append(errs, fmt.Errorf("failed to start %s again: %w", cluster, err))
		}
		delete(r.down, cluster)
	}
	for _, cluster := range sortedKeys(r.cut) {
		if err := r.env.Heal(cluster); err != nil {
			errs = append(errs, fmt.Errorf("failed to heal %s's partition: %w", cluster, err))
		}
		delete(r.cut, cluster)
	}
	if len(r.violations) > 0 {
		errs = append(errs, fmt.Errorf("two writable primaries: %v", r.violations))
	}
	return errors.Join(errs...)
}

// Abandon removes the story's application from the lab, so that it does not load the cases
// after it: its DRPlacementControl is deleted if it is still there (a story that failed
// halfway; drover stops protecting it) and the application's namespace on each managed cluster,
// so that its pods (PostgreSQL, pgbench, the writers) stop and its volumes leave the storage's
// sync. Call it after Close, whose clusters are all up.
func (r *Run) Abandon(ctx context.Context) error {
	var errs []error
	if err := r.env.Hub.Delete(ctx, r.drpcObject()); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("failed to delete DRPlacementControl %s: %w", r.key, err))
	}
	for _, name := range sortedKeys(r.env.Clusters) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.c.Namespace}}
		if err := r.env.Clusters[name].Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("failed to delete namespace %s on %s: %w", r.c.Namespace, name, err))
		}
	}
	return errors.Join(errs...)
}

// Overlap is the longest time both clusters ran the application's writers, after a lost
// cluster came back and before drover removed them there.
func (r *Run) Overlap() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.overlap
}

func createNamespace(ctx context.Context, cl client.Client, name string) error {
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create namespace %s: %w", name, err)
	}
	return nil
}

// allowPlacementNamespace lets the application's DRPlacementControl name a Placement of
// another namespace (a GitOps tool's) as an administrator does: by labelling the application's
// namespace on the hub (docs/install.md, "Who may protect what").
func (r *Run) allowPlacementNamespace(ctx context.Context) error {
	if r.c.PlacementNamespace == "" || r.c.PlacementNamespace == r.c.Namespace {
		return nil
	}
	ns := &corev1.Namespace{}
	if err := r.env.Hub.Get(ctx, client.ObjectKey{Name: r.c.Namespace}, ns); err != nil {
		return fmt.Errorf("failed to get namespace %s: %w", r.c.Namespace, err)
	}
	before := ns.DeepCopy()
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[tenancy.LabelPlacementNamespace] = r.c.PlacementNamespace
	if err := r.env.Hub.Patch(ctx, ns, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("failed to label namespace %s: %w", r.c.Namespace, err)
	}
	return nil
}

// drpc returns the application's DRPlacementControl.
func (r *Run) drpc(ctx context.Context) (*v1alpha1.DRPlacementControl, error) {
	d := &v1alpha1.DRPlacementControl{}
	if err := r.env.Hub.Get(ctx, r.key, d); err != nil {
		return nil, fmt.Errorf("failed to get DRPlacementControl %s: %w", r.key, err)
	}
	return d, nil
}

func condition(d *v1alpha1.DRPlacementControl, t string) metav1.Condition {
	if c := apimeta.FindStatusCondition(d.Status.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Message: "not reported yet"}
}

// poll calls check every interval until it returns nil or the step's timeout passes, and then
// returns check's last error: each caller says in it what was still awaited.
func (r *Run) poll(ctx context.Context, every time.Duration, check func(ctx context.Context) error) error {
	return pollUntil(ctx, r.env.Timeout, every, check)
}

// pollUntil calls check every interval until it returns nil or timeout passes, and then returns
// check's last error.
func pollUntil(ctx context.Context, timeout, every time.Duration, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(every):
		}
	}
}

// await polls the DRPlacementControl until done says it is, printing a line (progressLine: short,
// in words) whenever the phase, the step or what drover waits for changes. It fails at the
// timeout with the last state.
func (r *Run) await(ctx context.Context, what string, done func(*v1alpha1.DRPlacementControl) bool) error {
	last, lastFull := "", ""
	return r.poll(ctx, 250*time.Millisecond, func(ctx context.Context) error {
		if d, err := r.drpc(ctx); err == nil {
			av := condition(d, v1alpha1.ConditionAvailable)
			full := fmt.Sprintf("%s/%s: %s", d.Status.Phase, d.Status.Progression, av.Message)
			if av.Status == metav1.ConditionTrue {
				pr := condition(d, v1alpha1.ConditionPeerReady)
				full = fmt.Sprintf("%s/%s on %s; PeerReady %s: %s", d.Status.Phase, d.Status.Progression, d.Status.CurrentPrimary, pr.Status, pr.Message)
			}
			if line := progressLine(full); line != last {
				r.say("  %s", line)
				last = line
			}
			lastFull = full
			if done(d) {
				return nil
			}
		}
		return fmt.Errorf("%s: not done after %s; last seen: %s", what, r.env.Timeout, lastFull)
	})
}

// settled reports whether the application runs on cluster in phase, Available, with the
// status judging the current spec.
func settled(d *v1alpha1.DRPlacementControl, phase v1alpha1.DRPCPhase, cluster string) bool {
	return d.Status.ObservedGeneration == d.Generation && d.Status.Phase == phase && d.Status.CurrentPrimary == cluster &&
		condition(d, v1alpha1.ConditionAvailable).Status == metav1.ConditionTrue
}

func isTrue(d *v1alpha1.DRPlacementControl, t string) bool {
	return condition(d, t).Status == metav1.ConditionTrue
}

// record appends a step and prints its verdict.
func (r *Run) record(s Step) Step {
	r.Steps = append(r.Steps, s)
	verdict := "ok"
	if s.Err != nil {
		verdict = "FAILED: " + s.Err.Error()
	}
	r.say("%s %s→%s done in %s: kept %d, lost %d; %s", s.Action, s.From, s.To, s.Duration.Round(time.Millisecond), s.Kept, s.Lost, verdict)
	return s
}

// errorsOf joins the step errors of the story so far.
func (r *Run) errorsOf() error {
	var errs []error
	for _, s := range r.Steps {
		if err := s.Failure(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Err is the first failure of the story so far, nil when every step passed.
func (r *Run) Err() error { return r.errorsOf() }

// other returns the peer of a lab cluster.
func (r *Run) other(cluster string) string {
	for name := range r.env.Clusters {
		if name != cluster {
			return name
		}
	}
	return ""
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Violations are the moments so far the watcher saw two writable primaries outside the grace
// after a return; Close reports the same as an error.
func (r *Run) Violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.violations)
}

// Settle waits, with no action asked, until the application is Available on a cluster with its
// status judging the current spec, its peer ready and its data protected, and returns that
// cluster: where a run whose step failed may go on from. It starts no stopped cluster.
func (r *Run) Settle(ctx context.Context) (string, error) {
	primary := ""
	err := r.await(ctx, "settle", func(d *v1alpha1.DRPlacementControl) bool {
		primary = d.Status.CurrentPrimary
		return primary != "" && d.Status.ObservedGeneration == d.Generation && isTrue(d, v1alpha1.ConditionAvailable) &&
			isTrue(d, v1alpha1.ConditionPeerReady) && isTrue(d, v1alpha1.ConditionProtected)
	})
	return primary, err
}
