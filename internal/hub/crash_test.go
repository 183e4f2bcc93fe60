package hub_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/crash"
	"github.com/drover-io/drover/internal/objectstore"
	"github.com/drover-io/drover/internal/story"
)

// The crash sweep (after Sieve): a fault-free story counts the writes of the hub and of
// each agent in each action; then, for chosen writes, a story kills that component right before
// or right after the write (internal/lab/crash; the suite restarts it at once) and must still
// pass: every action completes, the records hold (0 lost on relocate, a failover's loss within
// its bound), never two writable primaries, and the end state is the fault-free run's (the same
// objects of each kind on each cluster and in each store). make test runs a few points
// (crashSubset); make crash-sweep every write (DROVER_CRASH_SWEEP=full, DROVER_CRASH_STRIDE=N
// for every N-th). The application's pods run as writer processes in every story.

// crashComponents are the components the sweep kills.
var crashComponents = []string{"hub", lab.East, lab.West}

// crashAction is one action of the sweep's story and the story's steps that make it.
type crashAction struct {
	name string
	run  func(ctx context.Context, r *story.Run) []story.Step
}

var crashActions = []crashAction{
	{"protect", func(ctx context.Context, r *story.Run) []story.Step { return []story.Step{r.Protect(ctx)} }},
	// The failover includes the return of the lost cluster: its group demoted, its workloads
	// removed (the cleanup of the old primary).
	{"failover", func(ctx context.Context, r *story.Run) []story.Step {
		return []story.Step{r.Failover(ctx, lab.East), r.Recover(ctx, lab.East)}
	}},
	{"relocate", func(ctx context.Context, r *story.Run) []story.Step { return []story.Step{r.Relocate(ctx, lab.West)} }},
	{"unprotect", func(ctx context.Context, r *story.Run) []story.Step { return []story.Step{r.Unprotect(ctx)} }},
}

// crashAt is a crash point of one action: a component and its point in the action.
type crashAt struct {
	component string
	point     crash.Point
}

// crashPlan is the crash point of each action of one story (none for an action not named).
type crashPlan map[string]crashAt

// crashRun is what one story of the sweep did.
type crashRun struct {
	// writes[action][component] counts the writes, the one crashed at included.
	writes map[string]map[string]int
	// fired names each crash that happened.
	fired []string
	// unreached is the plan's points the run did not reach: it made fewer writes than the
	// fault-free run.
	unreached crashPlan
	end       map[string]int
	err       error
}

// missed names the points the run did not reach, with the writes it made, in action order.
func (res crashRun) missed() []string {
	var out []string
	for _, a := range crashActions {
		if at, ok := res.unreached[a.name]; ok {
			out = append(out, fmt.Sprintf("%s: %s %v (this run made %d)", a.name, at.component, at.point, res.writes[a.name][at.component]))
		}
	}
	return out
}

// runCrashStory runs the sweep's story in namespace ns with plan's crash points armed.
func runCrashStory(t *testing.T, ns string, plan crashPlan) crashRun {
	ctx := context.Background()
	res := crashRun{writes: map[string]map[string]int{}}
	// The application's pods are writer processes on the lab kubelet's node (AppProcesses), as
	// in the demo, the soak and the e2e matrix: each copy the storage makes freezes them, so the
	// records judge a point a real process left, not one the storage's own writer paused for.
	r := story.New(storyEnv(t), story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: policyVolRep,
		StorageClass: lab.BlockStorageClass, Mode: story.SelfContained, Namespace: ns, AppProcesses: true}, lab.East)
	if res.err = r.Start(ctx); res.err != nil {
		return res
	}
	for _, a := range crashActions {
		before := allWrites()
		at, armed := plan[a.name]
		if armed {
			armCrash(at.component, at.point)
		}
		steps := a.run(ctx, r)
		res.writes[a.name] = since(before)
		if plan == nil {
			t.Logf("fault-free writes of %s: %v", a.name, writeList(before))
		}
		if armed {
			if killed := disarmCrash(); killed != "" {
				res.fired = append(res.fired, fmt.Sprintf("%s: %s at %v: %s", a.name, at.component, at.point, killed))
			} else {
				if res.unreached == nil {
					res.unreached = crashPlan{}
				}
				res.unreached[a.name] = at
			}
		}
		if res.err = failedStep(steps); res.err != nil {
			break
		}
	}
	if err := r.Close(); err != nil && res.err == nil {
		res.err = err
	}
	story.PrintTable(os.Stderr, r.Steps)
	if res.err == nil {
		res.end, res.err = endState(ctx, ns)
	}
	return res
}

func failedStep(steps []story.Step) error {
	for _, s := range steps {
		if err := s.Failure(); err != nil {
			return err
		}
	}
	return nil
}

func allWrites() map[string]int {
	out := map[string]int{}
	for _, c := range crashComponents {
		out[c] = writes(c)
	}
	return out
}

// writeList is each component's writes since before (as allWrites counts them), in order;
// only for a run without crashes, whose instances are the ones that made them.
func writeList(before map[string]int) map[string][]string {
	mu.Lock()
	defer mu.Unlock()
	out := map[string][]string{}
	for _, c := range crashComponents {
		if inst := running[c]; inst != nil {
			out[c] = inst.inj.Since(max(0, before[c]-retired[c]))
		}
	}
	return out
}

// awaitQuiet waits until no component has written for quietFor (at most quietWait), so the
// fault-free story counts the writes of its actions, not those of the processes' start (the
// hub's first probes of each cluster): a crash point among those would never be reached again.
func awaitQuiet(t *testing.T) {
	const quietFor, quietWait = 3 * time.Second, time.Minute
	last, quietSince := allWrites(), time.Now()
	for deadline := time.Now().Add(quietWait); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if now := allWrites(); !maps.Equal(now, last) {
			last, quietSince = now, time.Now()
		} else if time.Since(quietSince) >= quietFor {
			return
		}
	}
	t.Logf("the components still write after %s (%v): the fault-free counts may include them", quietWait, last)
}

func since(before map[string]int) map[string]int {
	out := map[string]int{}
	for c, n := range allWrites() {
		out[c] = n - before[c]
	}
	return out
}

// endState counts the application's objects of each kind on each cluster and its keys in each
// store once the story is over.
func endState(ctx context.Context, ns string) (map[string]int, error) {
	out := map[string]int{}
	for _, name := range []string{lab.East, lab.West} {
		cl, err := testLab.Client(name, v1alpha1.AddToScheme, replicationv1alpha1.AddToScheme, clientgoscheme.AddToScheme)
		if err != nil {
			return nil, err
		}
		lists := map[string]client.ObjectList{
			"VolumeReplicationGroup": &v1alpha1.VolumeReplicationGroupList{}, "VolumeReplication": &replicationv1alpha1.VolumeReplicationList{},
			"PersistentVolumeClaim": &corev1.PersistentVolumeClaimList{}, "StatefulSet": &appsv1.StatefulSetList{},
		}
		for kind, l := range lists {
			if err := cl.List(ctx, l, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			items, err := apimeta.ExtractList(l)
			if err != nil {
				return nil, err
			}
			out[name+" "+kind] = len(items)
		}
		pvs := &corev1.PersistentVolumeList{}
		if err := cl.List(ctx, pvs); err != nil {
			return nil, err
		}
		for _, pv := range pvs.Items {
			if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
				out[name+" PersistentVolume"]++
			}
		}
	}
	profiles, err := testLab.S3Profiles()
	if err != nil {
		return nil, err
	}
	for _, p := range profiles {
		s, err := objectstore.NewS3(objectstore.Profile{Name: p.Name, Endpoint: p.Endpoint, Insecure: p.Insecure, Bucket: p.Bucket, Region: p.Region,
			AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey})
		if err != nil {
			return nil, err
		}
		keys, err := s.List(ctx, ns+"/")
		if err != nil {
			return nil, err
		}
		out[p.Name+" keys"] = len(keys)
	}
	return out, nil
}

// positiveEnv is the positive number in environment variable name, 1 when it is not set.
func positiveEnv(t *testing.T, name string) int {
	s := os.Getenv(name)
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: give a positive number", name, s)
	}
	return n
}

// sweep is what a full sweep covers: every stride-th write from first, of the components and
// actions named (none named: all).
type sweep struct {
	first, stride       int
	components, actions []string
}

// sweepFromEnv reads the sweep from DROVER_CRASH_FIRST, _STRIDE, _COMPONENTS and _ACTIONS (the
// last two comma-separated), failing the test on a name the sweep does not know.
func sweepFromEnv(t *testing.T) sweep {
	sw := sweep{first: positiveEnv(t, "DROVER_CRASH_FIRST"), stride: positiveEnv(t, "DROVER_CRASH_STRIDE")}
	var actions []string
	for _, a := range crashActions {
		actions = append(actions, a.name)
	}
	sw.components = namesFromEnv(t, "DROVER_CRASH_COMPONENTS", crashComponents)
	sw.actions = namesFromEnv(t, "DROVER_CRASH_ACTIONS", actions)
	return sw
}

// namesFromEnv is the comma-separated names in environment variable name, all when it is empty.
func namesFromEnv(t *testing.T, name string, all []string) []string {
	s := os.Getenv(name)
	if s == "" {
		return all
	}
	names := strings.Split(s, ",")
	for _, n := range names {
		if !slices.Contains(all, n) {
			t.Fatalf("%s=%q: %q is none of %v", name, s, n, all)
		}
	}
	return names
}

// crashPlans are the stories of the sweep: with full, for each component, side and k, one story
// whose every action crashes that component at its k-th write (when it has that many), every
// stride-th k from first (a sweep split over runs: first 1 and 2 with stride 2 cover every
// write); else crashSubset.
func crashPlans(free map[string]map[string]int, full bool, sw sweep) []crashPlan {
	if !full {
		return []crashPlan{crashSubset(free)}
	}
	var plans []crashPlan
	for _, c := range sw.components {
		most := 0
		for _, a := range sw.actions {
			most = max(most, free[a][c])
		}
		for _, when := range []crash.When{crash.Before, crash.After} {
			for k := sw.first; k <= most; k += sw.stride {
				plan := crashPlan{}
				for _, a := range sw.actions {
					if k <= free[a][c] {
						plan[a] = crashAt{component: c, point: crash.Point{Write: k, When: when}}
					}
				}
				plans = append(plans, plan)
			}
		}
	}
	return plans
}

// crashSubset is the sweep's slice in make test, one story: the hub after its middle write of
// the protection, the target's agent before its middle write of the failover (the promotion),
// the source's agent after its middle write of the relocation (fence, final capture, demotion),
// the hub before its first write of the unprotection.
func crashSubset(free map[string]map[string]int) crashPlan {
	middle := func(action, c string) int { return max(1, free[action][c]/2) }
	return crashPlan{
		"protect":   {component: "hub", point: crash.Point{Write: middle("protect", "hub"), When: crash.After}},
		"failover":  {component: lab.West, point: crash.Point{Write: middle("failover", lab.West), When: crash.Before}},
		"relocate":  {component: lab.East, point: crash.Point{Write: middle("relocate", lab.East), When: crash.After}},
		"unprotect": {component: "hub", point: crash.Point{Write: 1, When: crash.Before}},
	}
}

// sweepTally adds up the stories of a sweep.
type sweepTally struct {
	free                    crashRun
	stories, planned, fired int
	failures                []string
}

// run runs one story of plan in namespace ns, tallies it, and returns the points it did not reach.
func (s *sweepTally) run(t *testing.T, ns, label string, plan crashPlan) crashPlan {
	s.stories++
	s.planned += len(plan)
	res := runCrashStory(t, ns, plan)
	s.fired += len(res.fired)
	t.Logf("story %s: crashed %v; not reached %v", label, res.fired, res.missed())
	switch {
	case res.err != nil:
		s.failures = append(s.failures, fmt.Sprintf("story %s %v: %v", label, res.fired, res.err))
	case !maps.Equal(res.end, s.free.end):
		s.failures = append(s.failures, fmt.Sprintf("story %s %v: end state %v, the fault-free run's %v", label, res.fired, res.end, s.free.end))
	}
	return res.unreached
}

// retryPlans packs the points that stories did not reach into as few stories as hold them, one
// point per action in each: a run makes a write more or less than another, so a point at the
// tail of an action may be reached the second time.
func retryPlans(missed []crashPlan) []crashPlan {
	var plans []crashPlan
	for _, a := range crashActions {
		i := 0
		for _, m := range missed {
			at, ok := m[a.name]
			if !ok {
				continue
			}
			if i == len(plans) {
				plans = append(plans, crashPlan{})
			}
			plans[i][a.name] = at
			i++
		}
	}
	return plans
}

func TestTheHubAndTheAgentsCrashAtTheirWritesAndTheStoryStillHolds(t *testing.T) {
	full := os.Getenv("DROVER_CRASH_SWEEP") == "full"
	sw := sweepFromEnv(t)
	began := time.Now()
	awaitQuiet(t)
	free := runCrashStory(t, "crash-free", nil)
	if free.err != nil {
		t.Fatalf("the fault-free story: %v", free.err)
	}
	t.Logf("fault-free writes per action: %v", free.writes)
	t.Logf("fault-free end state: %v", free.end)
	plans := crashPlans(free.writes, full, sw)
	tally := &sweepTally{free: free}
	var missed []crashPlan
	for i, plan := range plans {
		if m := tally.run(t, fmt.Sprintf("crash-%d", i), fmt.Sprintf("%d of %d", i+1, len(plans)), plan); len(m) > 0 {
			missed = append(missed, m)
		}
		if len(tally.failures) > 0 && !full {
			break
		}
	}
	points, firstPass := tally.planned, tally.fired
	var retries []crashPlan
	if full {
		retries = retryPlans(missed)
	}
	for i, plan := range retries {
		tally.run(t, fmt.Sprintf("crash-retry-%d", i), fmt.Sprintf("retry %d of %d", i+1, len(retries)), plan)
	}
	// A retry crashes only points the first pass did not reach, so what no story reached is the
	// rest.
	unreached := points - tally.fired
	summary := fmt.Sprintf("crash sweep: %d stories (%d retries), %d crash points planned, %d reached and crashed (%d on a retry), %d not reached, %d failed, in %s",
		tally.stories, len(retries), points, tally.fired, tally.fired-firstPass, unreached, len(tally.failures), time.Since(began).Round(time.Second))
	fmt.Fprintln(os.Stderr, summary)
	t.Log(summary)
	g := NewWithT(t)
	g.Expect(tally.failures).To(BeEmpty(), strings.Join(tally.failures, "\n"))
	g.Expect(tally.fired).To(BeNumerically(">", 0), "no crash point was reached: the sweep tested nothing")
}

func TestRetryPlansPackOneUnreachedPointPerActionIntoEachStory(t *testing.T) {
	at := func(c string, k int) crashAt {
		return crashAt{component: c, point: crash.Point{Write: k, When: crash.After}}
	}
	missed := []crashPlan{
		{"failover": at(lab.East, 15), "relocate": at(lab.East, 16)},
		{"failover": at(lab.East, 17)},
		{"protect": at("hub", 11)},
	}
	got := retryPlans(missed)
	want := []crashPlan{
		{"protect": at("hub", 11), "failover": at(lab.East, 15), "relocate": at(lab.East, 16)},
		{"failover": at(lab.East, 17)},
	}
	g := NewWithT(t)
	g.Expect(got).To(Equal(want))
	g.Expect(retryPlans(nil)).To(BeEmpty())
}
