package vrg

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/kubeobjects"
	"github.com/drover-io/drover/internal/objectstore"
)

// This file drives the kube-object phases with the fake client and fake stores; the lab tests
// in kubeobjects_lab_test.go prove the same against real control planes.

// mappedClient gives the fake client a RESTMapper that knows client-go's kinds, as discovery
// would: the fixture's knows none.
type mappedClient struct {
	client.Client
	mapper meta.RESTMapper
}

func (m mappedClient) RESTMapper() meta.RESTMapper { return m.mapper }

// withKubeObjects turns the fixture's group into a self-contained one (kubeObjectProtection of
// every default kind) and gives its reconciler a RESTMapper.
func (f *fixture) withKubeObjects(t *testing.T) {
	t.Helper()
	scheme, err := testScheme()
	if err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(scheme.PrioritizedVersionsAllGroups())
	for gvk := range scheme.AllKnownTypes() {
		scope := meta.RESTScopeNamespace
		if gvk.Kind == "Namespace" || gvk.Kind == "PersistentVolume" || gvk.Kind == "StorageClass" {
			scope = meta.RESTScopeRoot
		}
		mapper.Add(gvk, scope)
	}
	f.r.Client = mappedClient{Client: f.client, mapper: mapper}
	f.vrg.Spec.KubeObjectProtection = &v1alpha1.KubeObjectProtectionSpec{}
	g := NewWithT(t)
	g.Expect(f.client.Update(context.Background(), f.vrg)).To(Succeed())
}

// appWorkload is a StatefulSet and a ConfigMap of namespace app.
func appWorkload() []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"team": "db"}}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf"}, Data: map[string]string{"k": "v"}},
	}
}

// putCounter counts the captures written to a fake store.
type putCounter struct {
	*objectstore.Fake
	puts int
}

func (p *putCounter) Put(ctx context.Context, key string, body []byte) error {
	err := p.Fake.Put(ctx, key, body)
	if err == nil && strings.HasPrefix(key, "app/db/") && strings.HasSuffix(key, "/"+kubeobjects.StoreKey) {
		p.puts++
	}
	return err
}

func TestCaptureIsDueAnIntervalAfterTheLastOrAtOnceForANewSpec(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ready := []metav1.Condition{{Type: v1alpha1.ConditionKubeObjectsReady, Status: metav1.ConditionTrue, ObservedGeneration: 3}}
	for _, tc := range []struct {
		name       string
		generation int64
		conditions []metav1.Condition
		capturedAt string
		want       time.Duration
	}{
		{"the first capture is due at once", 3, nil, "", 0},
		{"a capture an interval ago is due", 3, ready, now.Add(-time.Minute).Format(time.RFC3339Nano), 0},
		{"a recent capture waits for the rest of the interval", 3, ready, now.Add(-20 * time.Second).Format(time.RFC3339Nano), 40 * time.Second},
		{"a new generation captures at once", 4, ready, now.Add(-time.Second).Format(time.RFC3339Nano), 0},
		{"an unreadable record captures at once", 3, ready, "yesterday", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vrg := &v1alpha1.VolumeReplicationGroup{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation,
				Annotations: map[string]string{AnnotationKubeObjectsCapturedAt: tc.capturedAt}}}
			vrg.Status.Conditions = tc.conditions
			got := captureDueIn(vrg, time.Minute, time.Time{}, now)
			if tc.want == 0 {
				NewWithT(t).Expect(got).To(BeNumerically("<=", 0))
			} else {
				NewWithT(t).Expect(got).To(Equal(tc.want))
			}
		})
	}
}

func TestAPrimaryCapturesIntoEveryStoreOncePerIntervalAndNamesAFailingStore(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, appWorkload()...)
	f.withKubeObjects(t)
	east, west := &putCounter{Fake: f.stores["s3-east"]}, &putCounter{Fake: f.stores["s3-west"]}
	f.r.NewStore = func(p objectstore.Profile) (objectstore.Store, error) {
		if p.Name == "s3-east" {
			return east, nil
		}
		return west, nil
	}
	west.SetError(&objectstore.Error{Kind: objectstore.KindUnreachable, Profile: "s3-west", Err: errors.New("connection refused")})

	res, err := f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred(), "a store that does not answer is a condition, retried on a fixed delay")
	g.Expect(res.RequeueAfter).To(Equal(requeueStoreDown))
	got := f.group(g)
	c := groupCondition(g, got, v1alpha1.ConditionKubeObjectsReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(objectstore.KindUnreachable.Reason()))
	g.Expect(c.Message).To(ContainSubstring("s3-west"))
	g.Expect(c.Message).To(ContainSubstring("is in S3 profiles s3-east"))
	g.Expect(got.Annotations).To(HaveKey(AnnotationKubeObjectsCapturedAt))
	g.Expect(capturedKeys(g, east)).To(Equal([]string{"Namespace app", "ConfigMap app/conf", "StatefulSet.apps app/db"}))

	// A reconcile storm within the interval writes nothing again, even to the failing store.
	west.SetError(nil)
	for range 3 {
		_, err = f.pass()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(east.puts).To(Equal(1))
	g.Expect(west.puts).To(Equal(0))

	// The next interval writes both: the passes since the first claimed the group in east's
	// store and caught up west's marker, so what the ledger knew of the stores was made under
	// other marker versions and is not trusted (ledger.go). From then on, an unchanged capture
	// is written to neither.
	f.dueCapture(g)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(east.puts).To(Equal(2))
	g.Expect(west.puts).To(Equal(1))
	f.dueCapture(g)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(east.puts).To(Equal(2))
	g.Expect(west.puts).To(Equal(1))
	c = groupCondition(g, f.group(g), v1alpha1.ConditionKubeObjectsReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	g.Expect(c.Message).To(ContainSubstring("(3 objects: 1 ConfigMap, 1 Namespace, 1 StatefulSet.apps) is in S3 profiles s3-east, s3-west"))
}

// promotedFromPeer is a group promoted by a failover after one pass: its stores hold the
// peer's capture, written by a primary with the objects of appWorkload, and its PV and PVC
// metadata; its PVCs are restored and not Bound yet.
func promotedFromPeer(t *testing.T, g Gomega) *fixture {
	f := newFixture(t)
	f.withKubeObjects(t)
	source := newFixture(t, appWorkload()...)
	source.withKubeObjects(t)
	source.r.NewStore = f.r.NewStore
	_, err := source.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	pvs, pvcs := peerGroup(1)
	storeGroup(g, f.stores["s3-east"], pvs, pvcs)

	f.vrg.Spec.ReplicationState = v1alpha1.ReplicationStatePrimary
	f.promote(g, v1alpha1.ActionFailover)
	_, err = f.reconcile(g)
	g.Expect(err).NotTo(HaveOccurred())
	return f
}

func TestAPromotedGroupRestoresItsObjectsOnceItsPVCsAreBoundAndOnlyOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := promotedFromPeer(t, g)
	c := groupCondition(g, f.group(g), v1alpha1.ConditionKubeObjectsReady)
	g.Expect(c.Reason).To(Equal(v1alpha1.ReasonProgressing), "the objects wait for the PVCs: %s", c.Message)
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "app"}, &corev1.Namespace{})).To(Succeed(), "the namespace exists before the PVCs are restored")
	g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "data-db-0"}, &corev1.PersistentVolumeClaim{})).To(Succeed())
	g.Expect(apierrors.IsNotFound(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db"}, &appsv1.StatefulSet{}))).To(BeTrue(),
		"no workload before its PVCs are Bound")

	f.bindAll(g)
	_, err := f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	got := f.group(g)
	c = groupCondition(g, got, v1alpha1.ConditionKubeObjectsReady)
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	g.Expect(c.Message).To(ContainSubstring("is restored from S3 profile s3-east (2 objects created, 1 adopted"))
	g.Expect(got.Annotations).To(HaveKeyWithValue(AnnotationKubeObjectsRestored, generation(got)))
	g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db"}, &appsv1.StatefulSet{})).To(Succeed())
	ns := &corev1.Namespace{}
	g.Expect(f.client.Get(ctx, client.ObjectKey{Name: "app"}, ns)).To(Succeed())
	g.Expect(ns.Labels).To(HaveKeyWithValue("team", "db"))

	// The application deletes its ConfigMap. The objects are the capture just restored: the
	// passes within the interval capture nothing, and never restore it again.
	g.Expect(f.client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf"}})).To(Succeed())
	for range 2 {
		_, err = f.pass()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(apierrors.IsNotFound(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "conf"}, &corev1.ConfigMap{}))).To(BeTrue())
	g.Expect(f.group(g).Annotations).NotTo(HaveKey(AnnotationKubeObjectsCapturedAt), "the first capture is an interval after the restore")
	g.Expect(capturedKeys(g, f.stores["s3-east"])).To(ContainElement("ConfigMap app/conf"), "the store holds the capture restored")

	// An interval later the promoted primary captures what it runs.
	f.dueCapture(g)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.group(g).Annotations).To(HaveKey(AnnotationKubeObjectsCapturedAt), "the promoted primary captures")
	g.Expect(capturedKeys(g, f.stores["s3-east"])).To(Equal([]string{"Namespace app", "StatefulSet.apps app/db"}))
}

// A group relocated within an interval of its promotion has restored its objects but not
// captured them yet: its final capture is still written, with what changed since the restore.
func TestARelocationWithinAnIntervalOfThePromotionStillWritesTheFinalCapture(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := promotedFromPeer(t, g)
	f.r.Fence = true
	f.bindAll(g)
	_, err := f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.group(g).Annotations).To(HaveKey(AnnotationKubeObjectsRestored))
	g.Expect(f.group(g).Annotations).NotTo(HaveKey(AnnotationKubeObjectsCapturedAt), "restored, not captured yet")

	g.Expect(f.client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "late"}})).To(Succeed())
	f.vrg = f.group(g)
	f.demote(g, v1alpha1.ActionRelocate)
	_, err = f.pass()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.group(g).Annotations).To(HaveKeyWithValue(AnnotationKubeObjectsFinalCapture, generation(f.group(g))))
	g.Expect(capturedKeys(g, f.stores["s3-east"])).To(ContainElements("ConfigMap app/late", "StatefulSet.apps app/db"),
		"the final capture holds the objects as they are at the relocation")
}

// capturedKeys are the keys of the objects of the capture a store holds for the group app/db.
func capturedKeys(g Gomega, s objectstore.Store) []string {
	body, err := s.Get(context.Background(), fixtureData(g, s)+kubeobjects.StoreKey)
	g.Expect(err).NotTo(HaveOccurred())
	capture, err := kubeobjects.Decode(body)
	g.Expect(err).NotTo(HaveOccurred())
	keys := make([]string, 0, len(capture.Objects))
	for _, o := range capture.Objects {
		keys = append(keys, kubeobjects.Key(o))
	}
	return keys
}

func TestADemotedGroupRemovesItsWorkloadsOnlyWhenAnActionSaysTheApplicationLeaves(t *testing.T) {
	for _, tc := range []struct {
		name       string
		action     v1alpha1.DRAction
		removed    bool
		wantStatus metav1.ConditionStatus
	}{
		{"a failover demotion deletes the StatefulSet and keeps the rest", v1alpha1.ActionFailover, true, metav1.ConditionFalse},
		{"a secondary without action leaves the workloads alone", v1alpha1.ActionNone, false, metav1.ConditionUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			f := newFixture(t, appWorkload()...)
			f.withKubeObjects(t)
			f.vrg.Spec.ReplicationState = v1alpha1.ReplicationStateSecondary
			f.demote(g, tc.action)
			_, err := f.reconcile(g)
			g.Expect(err).NotTo(HaveOccurred())
			c := groupCondition(g, f.group(g), v1alpha1.ConditionKubeObjectsReady)
			g.Expect(c.Status).To(Equal(tc.wantStatus), c.Message)
			err = f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db"}, &appsv1.StatefulSet{})
			g.Expect(apierrors.IsNotFound(err)).To(Equal(tc.removed), "StatefulSet: %v", err)
			g.Expect(f.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "conf"}, &corev1.ConfigMap{})).To(Succeed())
			if !tc.removed {
				return
			}
			g.Expect(c.Message).To(ContainSubstring("deleting the workloads StatefulSet.apps app/db"))
			_, err = f.pass()
			g.Expect(err).NotTo(HaveOccurred())
			c = groupCondition(g, f.group(g), v1alpha1.ConditionKubeObjectsReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
			g.Expect(c.Reason).To(Equal(v1alpha1.ReasonSecondary))
			for _, s := range f.stores {
				keys, err := s.List(ctx, "app/db/")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(keys).NotTo(ContainElement(HaveSuffix("/"+kubeobjects.StoreKey)), "a failover's secondary never captures: the peer is primary")
			}
		})
	}
}

func TestKubeObjectsReadyAfterACaptureNamesTheStoresAndKeepsARestoreTrue(t *testing.T) {
	down := &objectstore.Error{Kind: objectstore.KindUnreachable, Profile: "s3-east", Err: errors.New("connection refused")}
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		stores   []storeOutcome
		restored bool
		status   metav1.ConditionStatus
		reason   string
		contains string
	}{
		{"every store holds the capture", []storeOutcome{{name: "s3-east"}, {name: "s3-west"}}, false,
			metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the capture of 2026-01-01T12:00:00Z (2 objects: 2 ConfigMap) is in S3 profiles s3-east, s3-west"},
		{"a failing store makes it False on a primary", []storeOutcome{{name: "s3-east", err: down}, {name: "s3-west"}}, false,
			metav1.ConditionFalse, objectstore.KindUnreachable.Reason(), "is in S3 profiles s3-west"},
		{"a failing store leaves a restored group True, naming the store", []storeOutcome{{name: "s3-east", err: down}, {name: "s3-west"}}, true,
			metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the objects are restored here; S3 profile s3-east"},
		{"no store written is False even after a restore", []storeOutcome{{name: "s3-east", err: down}}, true,
			metav1.ConditionFalse, objectstore.KindUnreachable.Reason(), "s3-east"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := captureCondition(&captureResult{at: at, objects: 2, summary: "2 ConfigMap", stores: tc.stores}, nil, tc.restored)
			g.Expect(c.Status).To(Equal(tc.status), c.Message)
			g.Expect(c.Reason).To(Equal(tc.reason))
			g.Expect(c.Message).To(ContainSubstring(tc.contains))
		})
	}
}
