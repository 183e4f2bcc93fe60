package cli

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// testNow is the clock of the tests; statuses are written relative to it.
var testNow = time.Date(2026, 11, 30, 12, 4, 30, 0, time.UTC)

func clockAt() time.Time { return testNow }

func ago(d time.Duration) *metav1.Time {
	t := metav1.NewTime(testNow.Add(-d))
	return &t
}

func cond(condType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message, LastTransitionTime: *ago(time.Minute)}
}

// env is the hub objects of one test: a namespace, two DRClusters <name>-east and <name>-west,
// both Reachable, and a DRPolicy <name> pairing them every 10s. Each test has its own, so the
// tests share the API server without seeing each other's objects.
type env struct {
	ns, east, west, policy string
}

func newEnv(t *testing.T, name string) env {
	t.Helper()
	e := env{ns: name, east: name + "-east", west: name + "-west", policy: name}
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
	for _, c := range []string{e.east, e.west} {
		create(t, &v1alpha1.DRCluster{
			ObjectMeta: metav1.ObjectMeta{Name: c},
			Spec: v1alpha1.DRClusterSpec{
				KubeconfigSecretRef: v1alpha1.SecretRef{Name: c + "-kubeconfig", Namespace: "drover-system"},
				S3ProfileName:       "s3-" + c, Region: c,
			},
		})
		e.setReachable(t, c, true)
	}
	profiles := []v1alpha1.S3Profile{}
	for _, c := range []string{e.east, e.west} {
		profiles = append(profiles, v1alpha1.S3Profile{Name: "s3-" + c, Endpoint: "http://127.0.0.1:9000", Bucket: "drover",
			SecretRef: v1alpha1.SecretRef{Name: "s3-" + c, Namespace: "drover-system"}})
	}
	create(t, &v1alpha1.DRPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: e.policy},
		Spec: v1alpha1.DRPolicySpec{
			DRClusters: []string{e.east, e.west}, SchedulingInterval: "10s",
			StorageClassBackends: []v1alpha1.StorageClassBackend{{StorageClassName: "lab-block", Backend: v1alpha1.BackendVolRep}},
			S3Profiles:           profiles,
		},
	})
	return e
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8sClient.Create(t.Context(), obj); err != nil {
		t.Fatalf("failed to create %T %s: %v", obj, obj.GetName(), err)
	}
}

// setReachable writes the DRCluster's Reachable condition as the hub does; unreachable since
// 12:04:10.
func (e env) setReachable(t *testing.T, cluster string, reachable bool) {
	t.Helper()
	c := cond(v1alpha1.ConditionReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the probe succeeds")
	if !reachable {
		c = cond(v1alpha1.ConditionReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable, "unreachable since 12:03:55: connection refused")
		c.LastTransitionTime = *ago(20 * time.Second)
	}
	cl := &v1alpha1.DRCluster{}
	updateStatus(t, client.ObjectKey{Name: cluster}, cl, func() { apimeta.SetStatusCondition(&cl.Status.Conditions, c) })
}

// newApp creates a DRPlacementControl protecting the namespace <name> from east (no status).
func (e env) newApp(t *testing.T, name string) *v1alpha1.DRPlacementControl {
	t.Helper()
	d := &v1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1alpha1.DRPlacementControlSpec{
			DRPolicyRef:         v1alpha1.PolicyReference{Name: e.policy},
			PreferredCluster:    e.east,
			PVCSelector:         metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			ProtectedNamespaces: []string{name},
		},
	}
	create(t, d)
	return d
}

// deployed is the status of an application deployed and protected on primary, its peer
// Secondary, last synced 8s ago.
func (e env) deployed(primary, peer string) v1alpha1.DRPlacementControlStatus {
	return v1alpha1.DRPlacementControlStatus{
		Phase: v1alpha1.PhaseDeployed, Progression: "Completed", CurrentPrimary: primary, ActionTarget: primary,
		LastGroupSyncTime: ago(8 * time.Second),
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionValidated, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the spec is valid"),
			cond(v1alpha1.ConditionActionAccepted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the action the spec asks for is accepted"),
			cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the application runs on "+primary),
			cond(v1alpha1.ConditionPeerReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, peer+"'s VolumeReplicationGroup is Secondary"),
			cond(v1alpha1.ConditionProtected, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "data and metadata replicate"),
		},
		VRGs: []v1alpha1.VRGSummary{
			{Cluster: primary, ReplicationState: v1alpha1.ReplicationStatePrimary, State: v1alpha1.StatePrimary, LastGroupSyncTime: ago(8 * time.Second),
				DataReady: metav1.ConditionTrue, DataProtected: metav1.ConditionTrue},
			{Cluster: peer, ReplicationState: v1alpha1.ReplicationStateSecondary, State: v1alpha1.StateSecondary,
				DataReady: metav1.ConditionTrue, DataProtected: metav1.ConditionUnknown},
		},
	}
}

// unprotected makes the primary's group (the first summary) report DataProtected False with
// reason and message, as the hub summarises such a group.
func unprotected(d *v1alpha1.DRPlacementControl, reason, message string) {
	s := &d.Status.VRGs[0]
	s.DataProtected = metav1.ConditionFalse
	s.Problems = append(s.Problems, cond(v1alpha1.ConditionDataProtected, metav1.ConditionFalse, reason, message))
}

// setStatus writes the DRPlacementControl's status, changed by mutate, as the hub would.
func setStatus(t *testing.T, d *v1alpha1.DRPlacementControl, st v1alpha1.DRPlacementControlStatus, mutate ...func(*v1alpha1.DRPlacementControl)) {
	t.Helper()
	cur := &v1alpha1.DRPlacementControl{}
	updateStatus(t, client.ObjectKeyFromObject(d), cur, func() {
		cur.Status = *st.DeepCopy()
		for _, m := range mutate {
			m(cur)
		}
	})
}

// updateStatus reads obj, changes it with mutate and writes its status, retrying on conflicts
// (a command under test may patch the spec meanwhile).
func updateStatus(t *testing.T, key client.ObjectKey, obj client.Object, mutate func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(t.Context(), key, obj); err != nil {
			return err
		}
		mutate()
		return k8sClient.Status().Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatalf("failed to write the status of %s: %v", key, err)
	}
}

func setCond(d *v1alpha1.DRPlacementControl, c metav1.Condition) {
	apimeta.SetStatusCondition(&d.Status.Conditions, c)
}

func get(t *testing.T, d *v1alpha1.DRPlacementControl) *v1alpha1.DRPlacementControl {
	t.Helper()
	cur := &v1alpha1.DRPlacementControl{}
	if err := k8sClient.Get(t.Context(), client.ObjectKeyFromObject(d), cur); err != nil {
		t.Fatalf("failed to read %s: %v", d.Name, err)
	}
	return cur
}

// waitFor polls cond every 10ms until it holds or 10s pass, which fails the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("timed out waiting for %s", what)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mustContain fails unless out contains every want.
func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q; it is:\n%s", w, out)
		}
	}
}
