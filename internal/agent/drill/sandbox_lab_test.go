package drill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/drill"
	"github.com/drover-io/drover/internal/agent/vrg"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/story"
)

func init() {
	SetDefaultEventuallyTimeout(4 * time.Minute)
	SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
}

// protected is an application the drills of this package copy: a StatefulSet of writers
// protected by one of the lab's policies, primary on east, its secondary group on west.
type protected struct {
	env        story.Env
	ns         string
	east, west client.Client
	group      *v1alpha1.VolumeReplicationGroup // the secondary, on west
	replicas   int
	volSync    bool
}

var (
	appsMu sync.Mutex
	apps   = map[string]*protected{}
)

// protectedApp protects the package's VolSync application once, with the story's own steps, and
// waits until west holds a latest image of each PVC.
func protectedApp(t *testing.T) *protected {
	return protectedCase(t, story.Case{Workload: story.StatefulSetKeepsPVCs, Policy: lab.PolicyVolSync, StorageClass: lab.FileStorageClass,
		Mode: story.SelfContained, Namespace: "drilled", Replicas: 2})
}

// protectedCase protects a case once per package and returns it.
func protectedCase(t *testing.T, c story.Case) *protected {
	t.Helper()
	appsMu.Lock()
	defer appsMu.Unlock()
	if p := apps[c.Namespace]; p != nil {
		return p
	}
	p, err := protect(c)
	if err != nil {
		t.Fatal(err)
	}
	apps[c.Namespace] = p
	return p
}

func protect(c story.Case) (*protected, error) {
	ctx := context.Background()
	env, err := story.LabEnv(testLab.Lab, os.Stderr)
	if err != nil {
		return nil, err
	}
	p := &protected{env: env, ns: c.Namespace, replicas: int(c.Replicas), volSync: c.Policy == lab.PolicyVolSync}
	for _, cl := range []struct {
		name string
		into *client.Client
	}{{lab.East, &p.east}, {lab.West, &p.west}} {
		if *cl.into, err = testLab.Client(cl.name, v1alpha1.AddToScheme, volsyncv1alpha1.AddToScheme, snapshotv1.AddToScheme); err != nil {
			return nil, err
		}
	}
	run := story.New(env, c, lab.East)
	if err := run.Start(ctx); err != nil {
		return nil, err
	}
	if err := run.Protect(ctx).Failure(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(4 * time.Minute)
	for time.Now().Before(deadline) {
		if p.group, err = p.secondary(ctx); err == nil {
			return p, nil
		}
		time.Sleep(time.Second)
	}
	return nil, fmt.Errorf("west's secondary group of %s is not ready: %w", c.Namespace, err)
}

// secondary returns west's group once its destinations each have a latest image.
func (p *protected) secondary(ctx context.Context) (*v1alpha1.VolumeReplicationGroup, error) {
	groups := &v1alpha1.VolumeReplicationGroupList{}
	if err := p.west.List(ctx, groups); err != nil {
		return nil, err
	}
	for i := range groups.Items {
		g := &groups.Items[i]
		if g.Spec.ReplicationState != v1alpha1.ReplicationStateSecondary || vrg.ProtectedNamespaces(g)[0] != p.ns {
			continue
		}
		if !p.volSync {
			return g, nil
		}
		if g.Spec.VolSync == nil || len(g.Spec.VolSync.ReceivePVCs) != p.replicas {
			return nil, fmt.Errorf("group %s receives %d PVCs", g.Name, len(g.Spec.VolSync.ReceivePVCs))
		}
		for _, rp := range g.Spec.VolSync.ReceivePVCs {
			rd := &volsyncv1alpha1.ReplicationDestination{}
			if err := p.west.Get(ctx, client.ObjectKey{Namespace: rp.PVCNamespace, Name: rp.PVCName}, rd); err != nil {
				return nil, err
			}
			if rd.Status == nil || rd.Status.LatestImage == nil {
				return nil, fmt.Errorf("destination %s has no latest image", rp.PVCName)
			}
		}
		return g, nil
	}
	return nil, fmt.Errorf("west has no secondary group of %s", p.ns)
}

// sandbox creates a DrillSandbox of the application on west, as the hub does.
func (p *protected) sandbox(g Gomega, id string, mutate func(*v1alpha1.DrillSandbox)) *v1alpha1.DrillSandbox {
	sb := &v1alpha1.DrillSandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.group.Namespace, Name: "drill-" + id},
		Spec:       v1alpha1.DrillSandboxSpec{VRGName: p.group.Name, DrillID: id},
	}
	if mutate != nil {
		mutate(sb)
	}
	g.Expect(p.west.Create(context.Background(), sb)).To(Succeed())
	return sb
}

// volumeReport verifies the records of a PVC's volume on a cluster.
func (p *protected) volumeReport(g Gomega, cl client.Client, cluster, ns, name string) records.Report {
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)).To(Succeed())
	g.Expect(pvc.Spec.VolumeName).NotTo(BeEmpty(), "PVC %s/%s on %s is bound", ns, name, cluster)
	pv := &corev1.PersistentVolume{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
	rep, err := records.Verify(storage.VolumePath(p.env.DataDir(cluster), pv.Spec.CSI.VolumeHandle))
	g.Expect(err).NotTo(HaveOccurred())
	return rep
}

// sourceSyncs are the last sync times of the primary's ReplicationSources, by PVC.
func (p *protected) sourceSyncs(g Gomega) map[string]time.Time {
	list := &volsyncv1alpha1.ReplicationSourceList{}
	g.Expect(p.east.List(context.Background(), list, client.InNamespace(p.ns))).To(Succeed())
	out := map[string]time.Time{}
	for _, rs := range list.Items {
		if rs.Status != nil && rs.Status.LastSyncTime != nil {
			out[rs.Name] = rs.Status.LastSyncTime.Time
		}
	}
	return out
}

// awaitResult waits for the sandbox's result and returns it as it then stands, logging it.
func (p *protected) awaitResult(t *testing.T, g Gomega, sb *v1alpha1.DrillSandbox) *v1alpha1.DrillSandbox {
	got := &v1alpha1.DrillSandbox{}
	g.Eventually(func(g Gomega) {
		g.Expect(p.west.Get(context.Background(), client.ObjectKeyFromObject(sb), got)).To(Succeed())
		g.Expect(got.Status.Result).NotTo(BeEmpty(), "the sandbox has a result; it says: %s", got.Status.Message)
	}).Should(Succeed())
	status, _ := json.MarshalIndent(got.Status, "", "  ")
	t.Logf("DrillSandbox %s: %s", sb.Name, status)
	return got
}

// TestADrillStartsTheApplicationFromTheReplicatedDataInAnIsolatedSandbox drills the protected
// StatefulSet on west: its copy starts Ready in the sandbox from the latest VolSync images, with
// records that are a prefix of the primary's; the primary kept writing and syncing; the sandbox
// is isolated; deleting the DrillSandbox leaves no namespace, snapshot content or hold behind.
func TestADrillStartsTheApplicationFromTheReplicatedDataInAnIsolatedSandbox(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := protectedApp(t)
	began := time.Now()
	before := p.sourceSyncs(g)
	g.Expect(before).To(HaveLen(2), "the primary's sources have synced")

	sb := p.sandbox(g, "full", nil)
	got := p.awaitResult(t, g, sb)
	g.Expect(got.Status.Result).To(Equal(v1alpha1.DrillResultPassed), "the sandbox passed: %s", got.Status.Message)
	sandboxNS := drill.SandboxNamespace(p.ns, "full")
	checkStatus(g, got, p.ns, sandboxNS)

	sts := &appsv1.StatefulSet{}
	g.Expect(p.west.Get(ctx, client.ObjectKey{Namespace: sandboxNS, Name: "db"}, sts)).To(Succeed())
	g.Expect(sts.Status.ReadyReplicas).To(Equal(int32(2)), "the sandbox's StatefulSet is Ready")
	for _, pvc := range []string{"data-db-0", "data-db-1"} {
		checkPrefix(g, p.volumeReport(g, p.east, lab.East, p.ns, pvc), p.volumeReport(g, p.west, lab.West, sandboxNS, pvc), p.ns, pvc)
	}
	checkIsolated(g, p.west, sandboxNS, "full")

	// The primary went on: its writers wrote and its sources synced after the drill began.
	g.Eventually(func(g Gomega) {
		after := p.sourceSyncs(g)
		for name, at := range after {
			g.Expect(at).To(BeTemporally(">", began), "source %s synced during the drill", name)
		}
	}).Should(Succeed())
	g.Expect(p.east.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: "db"}, sts)).To(Succeed())
	g.Expect(sts.Status.ReadyReplicas).To(Equal(int32(2)), "the primary's StatefulSet still runs")

	g.Expect(p.west.Delete(ctx, got)).To(Succeed())
	checkGone(g, p, sb, "full")
}

// checkStatus checks what the sandbox reports: mode, namespaces, a volume per PVC with its point
// and pointTime, every step finished and Passed, readyTime.
func checkStatus(g Gomega, sb *v1alpha1.DrillSandbox, ns, sandboxNS string) {
	g.Expect(sb.Status.Mode).To(Equal(v1alpha1.DrillModeFull))
	g.Expect(sb.Status.Namespaces).To(Equal([]v1alpha1.DrillSandboxNamespace{{Source: ns, Sandbox: sandboxNS}}))
	g.Expect(sb.Status.Volumes).To(HaveLen(2))
	for _, v := range sb.Status.Volumes {
		g.Expect(v.Point).NotTo(BeEmpty())
		g.Expect(v.PointTime).NotTo(BeNil(), "volume %s has its point's time", v.PVCName)
		g.Expect(v.PointTime.Time).To(BeTemporally("<", sb.Status.ReadyTime.Time))
		g.Expect(v.SandboxPVC).To(Equal(sandboxNS + "/" + v.PVCName))
	}
	g.Expect(sb.Status.ReadyTime).NotTo(BeNil())
	var names []string
	for _, s := range sb.Status.Steps {
		names = append(names, s.Name)
		g.Expect(s.Started).NotTo(BeNil())
		g.Expect(s.Finished).NotTo(BeNil(), "step %s finished", s.Name)
		g.Expect(s.Finished.Before(s.Started)).To(BeFalse())
		g.Expect(s.Result).To(Equal(v1alpha1.DrillResultPassed), "step %s: %s", s.Name, s.Message)
	}
	g.Expect(names).To(Equal([]string{drill.StepCopyingVolumes, drill.StepRestoringObjects, drill.StepStartingWorkloads}))
}

// checkPrefix checks that the sandbox's copy of a volume holds, for every writer of the
// primary, a gap-free, uncorrupted prefix of the primary's records.
func checkPrefix(g Gomega, primary, copied records.Report, ns, pvc string) {
	found := 0
	for _, w := range primary.Writers {
		c, ok := copied.Writer(w.Writer)
		if !ok {
			continue
		}
		found++
		g.Expect(c.Missing).To(BeZero(), "%s/%s: writer %s's copy has no gaps", ns, pvc, w.Writer)
		g.Expect(c.Corrupt).To(BeEmpty(), "%s/%s: writer %s's copy is not corrupt", ns, pvc, w.Writer)
		g.Expect(c.LastSeq).To(BeNumerically(">=", 1))
		g.Expect(c.LastSeq).To(BeNumerically("<=", w.LastSeq), "%s/%s: the copy of writer %s is a prefix of the primary's", ns, pvc, w.Writer)
	}
	g.Expect(found).To(BeNumerically(">=", 1), "%s/%s: the copy holds the primary's records", ns, pvc)
}

// checkIsolated checks the sandbox's NetworkPolicy: every pod of the sandbox selected, ingress
// and egress denied but for the drill's own sandboxes and the cluster's DNS pods.
func checkIsolated(g Gomega, cl client.Client, ns, id string) {
	ctx := context.Background()
	np := &networkingv1.NetworkPolicy{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: drill.IsolationPolicy}, np)).To(Succeed())
	g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	g.Expect(err).NotTo(HaveOccurred())
	pods := &corev1.PodList{}
	g.Expect(cl.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
	g.Expect(pods.Items).NotTo(BeEmpty())
	for _, pod := range pods.Items {
		g.Expect(sel.Matches(labels.Set(pod.Labels))).To(BeTrue(), "the policy selects pod %s", pod.Name)
	}
	g.Expect(np.Spec.Ingress).To(HaveLen(1))
	g.Expect(np.Spec.Ingress[0].From).To(HaveLen(1))
	g.Expect(np.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels).To(Equal(map[string]string{drill.LabelDrill: id}))
	g.Expect(np.Spec.Ingress[0].From[0].IPBlock).To(BeNil())
	g.Expect(np.Spec.Egress).To(HaveLen(2))
	for _, rule := range np.Spec.Egress {
		g.Expect(rule.To).To(HaveLen(1), "no egress rule allows any address")
		to := rule.To[0]
		g.Expect(to.IPBlock).To(BeNil())
		if to.PodSelector == nil {
			g.Expect(to.NamespaceSelector.MatchLabels).To(Equal(map[string]string{drill.LabelDrill: id}), "egress to the drill's sandboxes")
			g.Expect(rule.Ports).To(BeEmpty())
			continue
		}
		g.Expect(to.NamespaceSelector.MatchLabels).To(Equal(map[string]string{corev1.LabelMetadataName: drill.DefaultDNS.Namespace}), "and to the cluster's DNS")
		g.Expect(to.PodSelector.MatchLabels).To(Equal(drill.DefaultDNS.PodLabels))
		for _, port := range rule.Ports {
			g.Expect(port.Port.IntValue()).To(Equal(53), "only its port")
		}
	}
}

// checkGone waits until the DrillSandbox is gone and checks that it left nothing: no namespace
// or snapshot content of the drill, and (once deleted snapshots are gone) no snapshot held for it.
func checkGone(g Gomega, p *protected, sb *v1alpha1.DrillSandbox, id string) {
	ctx := context.Background()
	g.Eventually(func() bool {
		return apierrors.IsNotFound(p.west.Get(ctx, client.ObjectKeyFromObject(sb), &v1alpha1.DrillSandbox{}))
	}).Should(BeTrue(), "the DrillSandbox is gone")
	namespaces := &corev1.NamespaceList{}
	g.Expect(p.west.List(ctx, namespaces, client.MatchingLabels{drill.LabelDrill: id})).To(Succeed())
	g.Expect(namespaces.Items).To(BeEmpty(), "no sandbox namespace is left")
	contents := &snapshotv1.VolumeSnapshotContentList{}
	g.Expect(p.west.List(ctx, contents, client.MatchingLabels{drill.LabelDrill: id})).To(Succeed())
	g.Expect(contents.Items).To(BeEmpty(), "no snapshot content is left")
	// An image VolSync gave up that is no longer a destination's latest is released by deleting
	// it; it keeps the drill's hold until the snapshotter removes its finalizer, which may come
	// after the DrillSandbox is gone: wait for it.
	g.Eventually(func(g Gomega) {
		snapshots := &snapshotv1.VolumeSnapshotList{}
		g.Expect(p.west.List(ctx, snapshots, client.InNamespace(p.ns))).To(Succeed())
		for _, vs := range snapshots.Items {
			g.Expect(vs.Annotations[vrg.AnnotationHeldBy]).NotTo(HavePrefix("drill:"), "snapshot %s is not held for a drill", vs.Name)
			if vs.Annotations[vrg.AnnotationHeldBy] == "" {
				g.Expect(vs.Labels).NotTo(HaveKey("volsync.backube/do-not-delete"), "snapshot %s carries no hold", vs.Name)
			}
		}
	}).Should(Succeed())
}
