package vrg_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/quantile"
)

// scaleGroupsEnv sets how many groups TestManyGroupsFollowTheirStorageAndSettledGroupsWriteNothing
// protects (default 10, the slice make test runs); the figures in docs/design/agent.md were
// measured with it set to 20, 30 and 100.
const scaleGroupsEnv = "DROVER_SCALE_GROUPS"

// scaleNoCaptureEnv, set, leaves the groups' kube objects out (placement mode), to measure what
// the capture costs.
const scaleNoCaptureEnv = "DROVER_SCALE_NO_CAPTURE"

// The scale test's goal and window: a group's lastGroupSyncTime shows a sync of its storage
// within maxSyncLag (p99, reported), measured over scaleWindow once every group settled.
const (
	maxSyncLag    = 2 * time.Second
	scaleWindow   = 30 * time.Second
	scaleInterval = 5 * time.Second
)

// Many groups (10 in make test; DROVER_SCALE_GROUPS for more), each one PVC of the lab's block storage mirrored every 5 s and self-contained
// (its namespace's objects captured), settle on east. Then, over 30 s: each sync of the storage
// (a VolumeReplication's new lastSyncTime) shows in its group's lastGroupSyncTime (the lag is
// reported against the goal of 2 s at p99), and a settled group writes nothing but the status
// patch that records a new sync: no other API write and no S3 write, since neither its metadata
// nor its objects changed; nor does its capture read its objects from the API server.
func TestManyGroupsFollowTheirStorageAndSettledGroupsWriteNothing(t *testing.T) {
	n := 10
	if v := os.Getenv(scaleGroupsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q is not a positive number", scaleGroupsEnv, v)
		}
	}
	g := NewWithT(t)
	// Creating and settling many groups on a loaded machine takes a while.
	g.SetDefaultEventuallyTimeout(3*time.Minute + time.Duration(n)*3*time.Second)
	g.SetDefaultEventuallyPollingInterval(time.Second)
	ctx := context.Background()
	east := vrglab.ClusterClient(t, lab.East)
	createOrKeep(ctx, g, east, replicationClass("lab-block-5s", "5s"))
	profiles, _ := vrglab.S3Profiles(g)
	syncs := watchSyncTimes(ctx, t, lab.East, "scale-")

	capture, settled := os.Getenv(scaleNoCaptureEnv) == "", []string{v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected}
	if capture {
		settled = append(settled, v1alpha1.ConditionKubeObjectsReady)
	}
	groups := make([]*v1alpha1.VolumeReplicationGroup, 0, n)
	for i := range n {
		ns := fmt.Sprintf("scale-%03d", i)
		g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data", Labels: map[string]string{"app": "db"}},
			Spec:       vrglab.PVCSpec(),
		}
		g.Expect(east.Create(ctx, pvc)).To(Succeed())
		group := vrglab.PrimaryVRG(ns, "db", "db", "5s", profiles)
		if capture {
			group.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
		}
		g.Expect(east.Create(ctx, group)).To(Succeed())
		groups = append(groups, group)
	}
	defer deleteGroups(ctx, g, east, groups)
	g.Eventually(func(g Gomega) {
		for _, group := range groups {
			got := &v1alpha1.VolumeReplicationGroup{}
			g.Expect(east.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
			g.Expect(got.Status.LastGroupSyncTime).NotTo(BeNil(), "group %s", group.Namespace)
			for _, c := range settled {
				cond := vrglab.ConditionOf(got.Status.Conditions, c)
				g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "group %s %s: %s %s", group.Namespace, c, cond.Reason, cond.Message)
			}
		}
	}).Should(Succeed(), "every group protected, its metadata and objects stored")
	// The last groups' first captures are written, then their second (the pass after the first
	// claim trusts nothing it knew of the stores, ledger.go) and the one that records their
	// objects' fingerprint once the watches have synced: from then on, their captures read
	// nothing. Wait for two intervals without a capture read.
	g.Eventually(func(g Gomega) {
		before := vrglab.Writes()
		time.Sleep(2 * scaleInterval)
		g.Expect(captureReads(before, vrglab.Writes(), "scale-")).To(BeEmpty(), "groups whose capture still reads its objects")
	}).Should(Succeed())

	before, start, timesBefore := vrglab.Writes(), time.Now(), reconcileTimes(t)
	time.Sleep(scaleWindow)
	after, end, timesAfter := vrglab.Writes(), time.Now(), reconcileTimes(t)
	lags, synced := syncs.lags(start, end)
	reportScale(t, n, lags, before, after, end.Sub(start))
	t.Logf("passes %d, average pass %s, average wait in the queue %s",
		int(timesAfter.passes-timesBefore.passes), timesAfter.pass(timesBefore), timesAfter.wait(timesBefore))

	// The lag is a figure to read (the goal is maxSyncLag at p99), not a timed assertion: the
	// test asserts that every group followed its storage, and what settled groups wrote.
	if p99 := percentile(lags, 99); p99 > maxSyncLag {
		t.Logf("the p99 lag %s is above the goal of %s on this machine now", p99, maxSyncLag)
	}
	// A capture whose objects did not change reads nothing (kubeobjects.Fingerprint).
	g.Expect(captureReads(before, after, "scale-")).To(BeEmpty(), "settled groups whose capture read their objects")
	shown := syncs.shown(start, end)
	for _, group := range groups {
		g.Expect(shown[group.Namespace]).To(BeNumerically(">", 0), "group %s showed none of its storage's %d syncs in %s", group.Namespace, synced[group.Namespace], scaleWindow)
	}
	for _, group := range groups {
		for k, v := range after {
			if k.Cluster != lab.East || k.Namespace != group.Namespace || v == before[k] {
				continue
			}
			if k.Read {
				continue
			}
			wrote := v - before[k]
			if k.What == "volumereplicationgroups/status" {
				g.Expect(wrote).To(BeNumerically("<=", synced[group.Namespace]+1),
					"group %s patched its status %d times for %d syncs", group.Namespace, wrote, synced[group.Namespace])
				continue
			}
			g.Expect(wrote).To(BeZero(), "settled group %s wrote %s %d times", group.Namespace, k.What, wrote)
		}
	}
}

// capturedResources are the API resources of kubeobjects.DefaultKinds, which a capture lists in
// each protected namespace when it reads the objects from the API server.
// The namespace itself is among them: a capture reads it, and a primary's pass checks that its
// fence is lifted (namespaceFenceInCache).
var capturedResources = []string{
	"namespaces",
	"serviceaccounts", "roles", "rolebindings", "configmaps", "secrets", "services", "poddisruptionbudgets",
	"horizontalpodautoscalers", "networkpolicies", "ingresses", "deployments", "statefulsets", "daemonsets",
	"jobs", "cronjobs",
}

// captureReads returns, by namespace on east (those with a prefix), how many reads of
// capturedResources were made between two snapshots.
func captureReads(before, after map[vrglab.WriteKey]int, prefix string) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if k.Cluster == lab.East && k.Read && strings.HasPrefix(k.Namespace, prefix) && v > before[k] && slices.Contains(capturedResources, k.What) {
			out[k.Namespace] += v - before[k]
		}
	}
	return out
}

// reportScale logs the lag of the groups behind their storage and what they wrote, per group
// and minute.
func reportScale(t *testing.T, n int, lags []time.Duration, before, after map[vrglab.WriteKey]int, window time.Duration) {
	t.Helper()
	byWhat := map[string]int{}
	for k, v := range after {
		if k.Cluster == lab.East && strings.HasPrefix(k.Namespace, "scale-") && v > before[k] {
			what := k.What
			if k.Read {
				what = "read " + what
			}
			byWhat[what] += v - before[k]
		}
	}
	perGroupMinute := func(count int) float64 { return float64(count) / float64(n) / window.Minutes() }
	var parts []string
	for _, what := range slices.Sorted(func(yield func(string) bool) {
		for w := range byWhat {
			if !yield(w) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s %.1f", what, perGroupMinute(byWhat[what])))
	}
	t.Logf("%d groups, %d syncs over %s: lag behind the storage p50 %s, p99 %s, max %s; writes per group per minute: %s",
		n, len(lags), window.Round(time.Second), percentile(lags, 50), percentile(lags, 99), percentile(lags, 100), strings.Join(parts, ", "))
}

// passTimes are the totals of the group controller's metrics (both agents run in this process
// and share controller-runtime's registry; only east has groups here).
type passTimes struct {
	passes, passSeconds, waits, waitSeconds float64
}

func (p passTimes) pass(before passTimes) time.Duration {
	return perCount(p.passSeconds-before.passSeconds, p.passes-before.passes)
}

func (p passTimes) wait(before passTimes) time.Duration {
	return perCount(p.waitSeconds-before.waitSeconds, p.waits-before.waits)
}

func perCount(seconds, count float64) time.Duration {
	if count == 0 {
		return 0
	}
	return time.Duration(seconds / count * float64(time.Second)).Round(time.Millisecond)
}

// reconcileTimes reads the group controller's reconcile time and queue wait from
// controller-runtime's metrics registry.
func reconcileTimes(t *testing.T) passTimes {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var p passTimes
	for _, f := range families {
		for _, m := range f.GetMetric() {
			ours := false
			for _, l := range m.GetLabel() {
				ours = ours || l.GetValue() == "volumereplicationgroup"
			}
			if !ours || m.GetHistogram() == nil {
				continue
			}
			h := m.GetHistogram()
			switch f.GetName() {
			case "controller_runtime_reconcile_time_seconds":
				p.passes, p.passSeconds = p.passes+float64(h.GetSampleCount()), p.passSeconds+h.GetSampleSum()
			case "workqueue_queue_duration_seconds":
				p.waits, p.waitSeconds = p.waits+float64(h.GetSampleCount()), p.waitSeconds+h.GetSampleSum()
			}
		}
	}
	return p
}

// percentile returns the p-th percentile of ds (nearest rank), to 10 ms; 0 for none.
func percentile(ds []time.Duration, p int) time.Duration {
	return quantile.NearestRank(ds, float64(p)/100).Round(10 * time.Millisecond)
}

// deleteGroups deletes groups and waits until they are unprotected and gone.
func deleteGroups(ctx context.Context, g Gomega, cl client.Client, groups []*v1alpha1.VolumeReplicationGroup) {
	for _, group := range groups {
		g.Expect(client.IgnoreNotFound(cl.Delete(ctx, group))).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, group := range groups {
			err := cl.Get(ctx, client.ObjectKeyFromObject(group), &v1alpha1.VolumeReplicationGroup{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "group %s is gone", group.Namespace)
		}
	}).Should(Succeed())
}

// syncTimes records, from watches, when each VolumeReplication's lastSyncTime and each group's
// lastGroupSyncTime first showed a value, in the namespaces with a prefix.
type syncTimes struct {
	mu sync.Mutex
	// storage and groups map a namespace to the sync times seen (Unix seconds, the API's
	// resolution) and when each was first seen.
	storage, groups map[string]map[int64]time.Time
}

// watchSyncTimes starts the watches of syncTimes on a cluster; they stop with the test.
func watchSyncTimes(ctx context.Context, t *testing.T, cluster, prefix string) *syncTimes {
	t.Helper()
	c, err := vrglab.Lab().Cluster(cluster)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, replicationv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	s := &syncTimes{storage: map[string]map[int64]time.Time{}, groups: map[string]map[int64]time.Time{}}
	vrs, err := cl.Watch(ctx, &replicationv1alpha1.VolumeReplicationList{})
	if err != nil {
		t.Fatal(err)
	}
	vrgs, err := cl.Watch(ctx, &v1alpha1.VolumeReplicationGroupList{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range vrs.ResultChan() {
			if vr, ok := ev.Object.(*replicationv1alpha1.VolumeReplication); ok && strings.HasPrefix(vr.Namespace, prefix) && vr.Status.LastSyncTime != nil {
				s.seen(s.storage, vr.Namespace, vr.Status.LastSyncTime.Unix())
			}
		}
	}()
	go func() {
		for ev := range vrgs.ResultChan() {
			if vrg, ok := ev.Object.(*v1alpha1.VolumeReplicationGroup); ok && strings.HasPrefix(vrg.Namespace, prefix) && vrg.Status.LastGroupSyncTime != nil {
				s.seen(s.groups, vrg.Namespace, vrg.Status.LastGroupSyncTime.Unix())
			}
		}
	}()
	return s
}

// shown counts, per namespace, the new sync times its group showed between start and end.
func (s *syncTimes) shown(start, end time.Time) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for ns, syncs := range s.groups {
		for _, seen := range syncs {
			if !seen.Before(start) && !seen.After(end) {
				out[ns]++
			}
		}
	}
	return out
}

func (s *syncTimes) seen(m map[string]map[int64]time.Time, ns string, at int64) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if m[ns] == nil {
		m[ns] = map[int64]time.Time{}
	}
	if _, ok := m[ns][at]; !ok {
		m[ns][at] = now
	}
}

// lags returns, for every sync the storage showed between start and end (less the last
// maxSyncLag+1s, which a group may not have shown yet), how long until its group showed it or a
// later one (end, if never); and how many syncs each namespace's storage showed in the window.
func (s *syncTimes) lags(start, end time.Time) (lags []time.Duration, synced map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	synced = map[string]int{}
	for ns, syncs := range s.storage {
		for at, seen := range syncs {
			if seen.Before(start) || seen.After(end) {
				continue
			}
			synced[ns]++
			if seen.After(end.Add(-maxSyncLag - time.Second)) {
				continue
			}
			shown := end
			for gat, gseen := range s.groups[ns] {
				if gat >= at && gseen.Before(shown) {
					shown = gseen
				}
			}
			lags = append(lags, max(shown.Sub(seen), 0))
		}
	}
	return lags, synced
}
