package vrg_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/agent/vrg/vrglab"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
	"github.com/drover-io/drover/internal/objectstore"
)

// appObjects are the objects of a self-contained application besides its StatefulSet: a
// Service, a ConfigMap and a Secret.
func appObjects(ns string) []client.Object {
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "db"},
			Ports:    []corev1.ServicePort{{Name: "sql", Port: 5432, TargetPort: intstr.FromInt32(5432)}},
		}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-conf"}, Data: map[string]string{"max_connections": "100"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-creds"}, StringData: map[string]string{"password": "s3cr3t"}},
	}
}

// selfContainedVRG is vrglab.PrimaryVRG for an application in namespace app, the group living in
// namespace groupNS and protecting app with kubeObjectProtection (every default kind).
func selfContainedVRG(groupNS, app string, profiles []v1alpha1.S3Profile) *v1alpha1.VolumeReplicationGroup {
	group := vrglab.PrimaryVRG(groupNS, "db", "db", "3s", profiles)
	group.Spec.ProtectedNamespaces = []string{app}
	group.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	return group
}

// storedCapture reads a group's capture from a store.
func storedCapture(ctx context.Context, g Gomega, store objectstore.Store, group *v1alpha1.VolumeReplicationGroup) *kubeobjects.Capture {
	body, err := store.Get(ctx, dataPrefix(ctx, g, store, group)+kubeobjects.StoreKey)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := kubeobjects.Decode(body)
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// captureKeys are the keys of a capture's objects.
func captureKeys(c *kubeobjects.Capture) []string {
	keys := make([]string, 0, len(c.Objects))
	for _, o := range c.Objects {
		keys = append(keys, kubeobjects.Key(o))
	}
	return keys
}

// watchRestoreOrder watches the PVCs and StatefulSets of a namespace on a cluster and returns a
// function that says at which etcd revision each PVC was first seen Bound and the first
// StatefulSet created. One etcd orders every write of a cluster, so the revisions (resource
// versions) compare across kinds, unlike timestamps of a second's resolution.
func watchRestoreOrder(ctx context.Context, t *testing.T, cluster, ns string) func() (map[string]int64, int64) {
	t.Helper()
	c, err := vrglab.Lab().Cluster(cluster)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	pvcs, err := cl.Watch(ctx, &corev1.PersistentVolumeClaimList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	stss, err := cl.Watch(ctx, &appsv1.StatefulSetList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	bound, created := map[string]int64{}, int64(0)
	revision := func(o client.Object) int64 {
		rv, err := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
		if err != nil {
			t.Errorf("resource version %q of %s: %v", o.GetResourceVersion(), o.GetName(), err)
		}
		return rv
	}
	go func() {
		for ev := range pvcs.ResultChan() {
			if pvc, ok := ev.Object.(*corev1.PersistentVolumeClaim); ok && pvc.Status.Phase == corev1.ClaimBound {
				mu.Lock()
				if _, seen := bound[pvc.Name]; !seen {
					bound[pvc.Name] = revision(pvc)
				}
				mu.Unlock()
			}
		}
	}()
	go func() {
		for ev := range stss.ResultChan() {
			if sts, ok := ev.Object.(*appsv1.StatefulSet); ok && ev.Type == watch.Added {
				mu.Lock()
				if created == 0 {
					created = revision(sts)
				}
				mu.Unlock()
			}
		}
	}()
	return func() (map[string]int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(bound), created
	}
}

// expectRunningWriters waits for the StatefulSet's pods on a cluster to run and write to their
// PVCs' images, and returns each PVC's writer.
func expectRunningWriters(g Gomega, ctx context.Context, cl client.Client, cluster, ns string, replicas int, handles map[string]string) map[string]string {
	writers := map[string]string{}
	g.Eventually(func(g Gomega) {
		for i := range replicas {
			pvc := fmt.Sprintf("data-db-%d", i)
			pod := &corev1.Pod{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, pod)).To(Succeed())
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			w, ok := vrglab.ImageReport(g, cluster, handles[pvc]).Writer(storage.WriterID(pod))
			g.Expect(ok).To(BeTrue(), "%s's image of %s holds records of %s", cluster, pvc, storage.WriterID(pod))
			g.Expect(w.LastSeq).To(BeNumerically(">", 5))
			writers[pvc] = storage.WriterID(pod)
		}
	}).Should(Succeed(), "the StatefulSet's pods run on %s and write", cluster)
	return writers
}

// pvcHandles returns the volume handle of each PVC of a namespace.
func pvcHandles(g Gomega, ctx context.Context, cl client.Client, ns string, want int) map[string]string {
	handles := map[string]string{}
	g.Eventually(func(g Gomega) {
		pvcs := &corev1.PersistentVolumeClaimList{}
		g.Expect(cl.List(ctx, pvcs, client.InNamespace(ns))).To(Succeed())
		g.Expect(pvcs.Items).To(HaveLen(want))
		for _, pvc := range pvcs.Items {
			g.Expect(pvc.Spec.VolumeName).NotTo(BeEmpty())
			pv := &corev1.PersistentVolume{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
			handles[pvc.Name] = pv.Spec.CSI.VolumeHandle
		}
	}).Should(Succeed())
	return handles
}

// expectCapturedAndProtected waits until a primary group protects its PVCs and holds a capture
// in every store, and checks what the capture holds.
func expectCapturedAndProtected(g Gomega, ctx context.Context, cl client.Client, group *v1alpha1.VolumeReplicationGroup, stores []objectstore.Store, ns string, pvcs int) {
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
		g.Expect(got.Status.ProtectedPVCs).To(HaveLen(pvcs))
		for _, ct := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected, v1alpha1.ConditionKubeObjectsReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
		ko := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(ko.Message).To(ContainSubstring("is in S3 profiles s3-east, s3-west"))
		g.Expect(got.Annotations).To(HaveKey(vrg.AnnotationKubeObjectsCapturedAt))
		for _, store := range stores {
			c := storedCapture(ctx, g, store, group)
			g.Expect(c.Namespaces).To(Equal([]string{ns}))
			g.Expect(captureKeys(c)).To(Equal([]string{
				"Namespace " + ns, "ConfigMap " + ns + "/db-conf", "Secret " + ns + "/db-creds", "Service " + ns + "/db",
				"StatefulSet.apps " + ns + "/db",
			}), "no PVC, pod, controller revision, default ServiceAccount or root CA; workloads last")
			for _, o := range c.Objects {
				g.Expect(o.GetResourceVersion()).To(BeEmpty())
				g.Expect(o.Object).NotTo(HaveKey("status"))
				if o.GetKind() == "Service" {
					g.Expect(o.Object["spec"]).NotTo(HaveKey("clusterIP"), "the allocated cluster IP is not stored")
				}
			}
		}
	}).Should(Succeed(), "the primary protects its %d PVCs and captures its objects into every store", pvcs)
}

// The story of a self-contained failover: an application (a StatefulSet of writers, a Service,
// a ConfigMap and a Secret) runs in a namespace that exists only on east, protected by a group
// that lives in another namespace and captures the objects; east is lost; west's group,
// promoted with action Failover, creates the namespace, restores the PVCs, then the objects,
// the StatefulSet last, and the application runs on west with its records; east returns and its
// group, demoted with action Failover, deletes the StatefulSet itself, keeps its PVCs and
// reaches Secondary with no one deleting anything by hand.
func TestASelfContainedApplicationFailsOverWithItsObjectsAndTheOldPrimaryRemovesItsWorkload(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)

	ns, groupNS := "ko-failover-app", "ko-failover-dr"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, adminNamespace(groupNS))).To(Succeed())
	}
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "db"}}})).To(Succeed())
	for _, o := range appObjects(ns) {
		g.Expect(east.Create(ctx, o)).To(Succeed())
	}
	g.Expect(east.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 2, 100*time.Millisecond))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	eastGroup := selfContainedVRG(groupNS, ns, profiles)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := selfContainedVRG(groupNS, ns, profiles)
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())

	expectCapturedAndProtected(g, ctx, east, eastGroup, stores, ns, 2)
	handles := pvcHandles(g, ctx, east, ns, 2)
	eastWriters := expectRunningWriters(g, ctx, east, lab.East, ns, 2, handles)
	g.Eventually(func(g Gomega) {
		for pvc, writer := range eastWriters {
			w, ok := vrglab.ImageReport(g, lab.West, handles[pvc]).Writer(writer)
			g.Expect(ok).To(BeTrue())
			g.Expect(w.LastSeq).To(BeNumerically(">", 0))
		}
	}).Should(Succeed(), "the east writers' records are mirrored to west")
	ws := &corev1.Namespace{}
	g.Expect(apierrors.IsNotFound(west.Get(ctx, client.ObjectKey{Name: ns}, ws))).To(BeTrue(), "the application's namespace exists only on east")

	// Lose east, its agent first.
	vrglab.StopAgent(lab.East)
	g.Expect(vrglab.Lab().Stop(lab.East)).To(Succeed())
	order := watchRestoreOrder(ctx, t, lab.West, ns)
	failover := time.Now()
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionFailover)
	var restored *v1alpha1.VolumeReplicationGroup
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionClusterDataReady, v1alpha1.ConditionDataReady, v1alpha1.ConditionKubeObjectsReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		}
		g.Expect(got.Annotations).To(HaveKeyWithValue(vrg.AnnotationKubeObjectsRestored, fmt.Sprint(got.Generation)))
		restored = got
	}).Should(Succeed(), "west's group restores the PVCs and then the objects")
	ko := vrglab.ConditionOf(restored.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
	t.Logf("failover: action Failover → ClusterDataReady, DataReady and KubeObjectsReady in %s; %s",
		time.Since(failover).Round(time.Millisecond), ko.Message)

	g.Expect(west.Get(ctx, client.ObjectKey{Name: ns}, ws)).To(Succeed())
	g.Expect(ws.Labels).To(HaveKeyWithValue("team", "db"), "the restored namespace has its stored labels")
	for _, o := range appObjects(ns) {
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed(), "%T %s is restored", o, o.GetName())
	}
	secret := &corev1.Secret{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-creds"}, secret)).To(Succeed())
	g.Expect(string(secret.Data["password"])).To(Equal("s3cr3t"))
	svc := &corev1.Service{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, svc)).To(Succeed())
	g.Expect(svc.Spec.ClusterIP).NotTo(BeEmpty(), "west allocated its own cluster IP")
	sts := &appsv1.StatefulSet{}
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, sts)).To(Succeed())
	bound, created := order()
	g.Expect(bound).To(HaveLen(2), "both PVCs were seen Bound")
	for pvc, rv := range bound {
		g.Expect(created).To(BeNumerically(">", rv), "the StatefulSet is created (revision %d) after PVC %s is Bound (revision %d)", created, pvc, rv)
	}
	for pvc, handle := range handles {
		expectRestoredPrimary(g, ctx, west, ns, pvc, handle)
	}
	westWriters := expectRunningWriters(g, ctx, west, lab.West, ns, 2, handles)
	for pvc, handle := range handles {
		kept, ok := vrglab.ImageReport(g, lab.West, handle).Writer(eastWriters[pvc])
		g.Expect(ok).To(BeTrue(), "%s: west keeps the east writer's records", pvc)
		g.Expect(kept.Gaps).To(BeEmpty())
		g.Expect(westWriters[pvc]).NotTo(Equal(eastWriters[pvc]))
	}

	// East returns; the hub demotes its group before anything else runs there (its agent starts
	// after), and the agent removes the StatefulSet itself.
	g.Expect(vrglab.Lab().Start(ctx, lab.East)).To(Succeed())
	east = vrglab.ClusterClient(t, lab.East)
	vrglab.SetRole(ctx, g, east, eastGroup, v1alpha1.ReplicationStateSecondary, v1alpha1.ActionFailover)
	demoted := time.Now()
	g.Expect(vrglab.StartAgent(lab.East)).To(Succeed())
	var waits []string
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionKubeObjectsReady, v1alpha1.ConditionDataReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			if said := fmt.Sprintf("%s %s: %s", ct, c.Reason, c.Message); c.Status == metav1.ConditionFalse && !slices.Contains(waits, said) {
				waits = append(waits, said)
			}
		}
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		dr := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionDataReady)
		g.Expect(dr.Status).To(Equal(metav1.ConditionTrue), "%s: %s", dr.Reason, dr.Message)
		ko := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(ko.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ko.Reason, ko.Message)
		g.Expect(ko.Reason).To(Equal(v1alpha1.ReasonSecondary))
		g.Expect(ko.ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(2*time.Minute).Should(Succeed(), "east's group removes the StatefulSet and reaches Secondary")
	t.Logf("old primary: action Failover (secondary) → workload removed and Secondary in %s; on the way: %s",
		time.Since(demoted).Round(time.Millisecond), strings.Join(waits, " | "))
	g.Expect(apierrors.IsNotFound(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &appsv1.StatefulSet{}))).To(BeTrue(),
		"the agent deleted east's StatefulSet")
	expectPVCsKeptAndResyncing(g, ctx, east, ns, 2)
	g.Expect(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-conf"}, &corev1.ConfigMap{})).To(Succeed(),
		"only workloads are removed")
	// West's capture, not east's stale one, is in west's store: east never captured on return.
	c := storedCapture(ctx, g, stores[1], westGroup)
	g.Expect(c.CapturedAt.Time).To(BeTemporally(">=", failover.Truncate(time.Second)), "the capture in s3-west is west's, taken after the failover")

	// Settled, east's secondary is woken at each sync of its storage: the watch of the
	// workloads' metadata spares its passes the lists of workloads (NoWorkloadsCached), and a
	// workload created on the demoted cluster is removed all the same.
	expectNoCaptureReads(g, ns, "east's secondary")
	late := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late", Labels: map[string]string{"app": "late"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "late"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "late"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/lab/podprobe"}}},
			},
		},
	}
	g.Expect(east.Create(ctx, late)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(east.Get(ctx, client.ObjectKeyFromObject(late), &appsv1.Deployment{}))
	}).Should(BeTrue(), "a Deployment created on the demoted cluster is removed")
}

// The story of a self-contained relocation: east's group, demoted with action Relocate while
// the StatefulSet runs, writes a final capture (with a ConfigMap created a moment before),
// deletes the StatefulSet itself, and only then is fenced and demoted with the final sync; west,
// promoted with action Relocate, restores everything and holds every record east wrote.
func TestASelfContainedRelocationRemovesTheWorkloadBeforeTheFinalSyncAndLosesNoRecord(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ctx := context.Background()
	east, west := vrglab.ClusterClient(t, lab.East), vrglab.ClusterClient(t, lab.West)

	ns, groupNS := "ko-relocate-app", "ko-relocate-dr"
	for _, cl := range []client.Client{east, west} {
		createOrKeep(ctx, g, cl, replicationClass("lab-block-3s", "3s"))
		g.Expect(cl.Create(ctx, adminNamespace(groupNS))).To(Succeed())
	}
	g.Expect(east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	for _, o := range appObjects(ns) {
		g.Expect(east.Create(ctx, o)).To(Succeed())
	}
	g.Expect(east.Create(ctx, vrglab.WriterStatefulSet(ns, "db", 2, 100*time.Millisecond))).To(Succeed())
	profiles, stores := vrglab.S3Profiles(g)
	eastGroup := selfContainedVRG(groupNS, ns, profiles)
	g.Expect(east.Create(ctx, eastGroup)).To(Succeed())
	westGroup := selfContainedVRG(groupNS, ns, profiles)
	westGroup.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
	g.Expect(west.Create(ctx, westGroup)).To(Succeed())

	expectCapturedAndProtected(g, ctx, east, eastGroup, stores, ns, 2)
	handles := pvcHandles(g, ctx, east, ns, 2)
	eastWriters := expectRunningWriters(g, ctx, east, lab.East, ns, 2, handles)

	// A change a moment before the relocation: only the final capture can carry it.
	g.Expect(east.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"}})).To(Succeed())
	const request = "relocate-ko"
	relocate := time.Now()
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		got.Spec.ReplicationState, got.Spec.Action = v1alpha1.ReplicationStateSecondary, v1alpha1.ActionRelocate
		got.Spec.FinalSyncRequest = request
		g.Expect(east.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
	var demoted *v1alpha1.VolumeReplicationGroup
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(east.Get(ctx, client.ObjectKeyFromObject(eastGroup), got)).To(Succeed())
		g.Expect(got.Status.State).To(Equal(v1alpha1.StateSecondary))
		g.Expect(got.Status.FinalSync).NotTo(BeNil())
		g.Expect(got.Status.FinalSync.Request).To(Equal(request))
		ko := vrglab.ConditionOf(got.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
		g.Expect(ko.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ko.Reason, ko.Message)
		g.Expect(ko.Reason).To(Equal(v1alpha1.ReasonSecondary))
		demoted = got
	}).Should(Succeed(), "east's group removes the StatefulSet and is Secondary with the final sync, no one scaling anything")
	t.Logf("relocate: action Relocate → workload removed, Secondary with the final sync in %s", time.Since(relocate).Round(time.Millisecond))
	g.Expect(demoted.Annotations).To(HaveKeyWithValue(vrg.AnnotationKubeObjectsFinalCapture, fmt.Sprint(demoted.Generation)))
	g.Expect(apierrors.IsNotFound(east.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &appsv1.StatefulSet{}))).To(BeTrue())
	pods := &corev1.PodList{}
	g.Expect(east.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
	g.Expect(pods.Items).To(BeEmpty())
	for _, store := range stores {
		c := storedCapture(ctx, g, store, eastGroup)
		g.Expect(captureKeys(c)).To(ContainElements("ConfigMap "+ns+"/late", "StatefulSet.apps "+ns+"/db"),
			"the final capture holds the late ConfigMap and the StatefulSet the agent then deleted")
	}
	for pvc, handle := range handles {
		onEast, onWest := vrglab.ImageReport(g, lab.East, handle), vrglab.ImageReport(g, lab.West, handle)
		wrote, ok := onEast.Writer(eastWriters[pvc])
		g.Expect(ok).To(BeTrue())
		kept, ok := onWest.Writer(eastWriters[pvc])
		g.Expect(ok).To(BeTrue())
		g.Expect(kept.Gaps).To(BeEmpty())
		g.Expect(kept.LastSeq).To(Equal(wrote.LastSeq), "%s: west holds every record east wrote", pvc)
		for _, w := range records.Compare(onEast, onWest).Writers {
			g.Expect(w.OnlyInA).To(BeEmpty(), "%s: west lacks records of %s", pvc, w.Writer)
		}
		t.Logf("%s: east wrote %d records, west holds %d, lost 0", pvc, wrote.LastSeq, kept.LastSeq)
	}

	promote := time.Now()
	vrglab.SetRole(ctx, g, west, westGroup, v1alpha1.ReplicationStatePrimary, v1alpha1.ActionRelocate)
	g.Eventually(func(g Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(west.Get(ctx, client.ObjectKeyFromObject(westGroup), got)).To(Succeed())
		for _, ct := range []string{v1alpha1.ConditionClusterDataReady, v1alpha1.ConditionDataReady, v1alpha1.ConditionKubeObjectsReady} {
			c := vrglab.ConditionOf(got.Status.Conditions, ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
		}
		g.Expect(got.Annotations).To(HaveKeyWithValue(vrg.AnnotationKubeObjectsRestored, fmt.Sprint(got.Generation)))
	}).Should(Succeed(), "west's group restores the PVCs and the objects")
	t.Logf("relocate: action Relocate on west → PVCs and objects restored in %s", time.Since(promote).Round(time.Millisecond))
	g.Expect(west.Get(ctx, client.ObjectKey{Namespace: ns, Name: "late"}, &corev1.ConfigMap{})).To(Succeed())
	westWriters := expectRunningWriters(g, ctx, west, lab.West, ns, 2, handles)
	var lost []string
	for pvc, handle := range handles {
		diff := records.Compare(vrglab.ImageReport(g, lab.East, handle), vrglab.ImageReport(g, lab.West, handle))
		for _, w := range diff.Writers {
			if w.Writer == eastWriters[pvc] && len(w.OnlyInA) > 0 {
				lost = append(lost, fmt.Sprint(pvc, w.OnlyInA))
			}
		}
		g.Expect(westWriters[pvc]).NotTo(Equal(eastWriters[pvc]))
	}
	g.Expect(lost).To(BeEmpty(), "records of the east writers only on east: %s", strings.Join(lost, ", "))
}
