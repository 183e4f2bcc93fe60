package clitest

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Hub talks to the API server that stands for the hub cluster: the package's TestMain sets it
// (Use) when it has started the server.
var Hub client.Client

// Use makes c the hub the builders write to.
func Use(c client.Client) { Hub = c }

// TestNow is the clock of the tests; statuses are written relative to it.
var TestNow = time.Date(2026, 11, 30, 12, 4, 30, 0, time.UTC)

// ClockAt is the tests' clock: TestNow.
func ClockAt() time.Time { return TestNow }

// Ago is d before TestNow.
func Ago(d time.Duration) *metav1.Time {
	t := metav1.NewTime(TestNow.Add(-d))
	return &t
}

// Cond is a condition that changed a minute before TestNow.
func Cond(condType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: condType, Status: status, Reason: reason, Message: message, LastTransitionTime: *Ago(time.Minute)}
}

// Env is the hub objects of one test: a namespace, two DRClusters <name>-east and <name>-west,
// both Reachable, and a DRPolicy <name> pairing them every 10s. Each test has its own, so the
// tests share the API server without seeing each other's objects.
type Env struct {
	NS, East, West, Policy string
}

// NewEnv creates the hub objects of the test name.
func NewEnv(t *testing.T, name string) Env {
	t.Helper()
	e := Env{NS: name, East: name + "-east", West: name + "-west", Policy: name}
	Create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.NS}})
	for _, c := range []string{e.East, e.West} {
		Create(t, &v1alpha1.DRCluster{
			ObjectMeta: metav1.ObjectMeta{Name: c},
			Spec: v1alpha1.DRClusterSpec{
				KubeconfigSecretRef: v1alpha1.SecretRef{Name: c + "-kubeconfig", Namespace: "drover-system"},
				S3ProfileName:       "s3-" + c, Region: c,
			},
		})
		e.SetReachable(t, c, true)
	}
	profiles := []v1alpha1.S3Profile{}
	for _, c := range []string{e.East, e.West} {
		profiles = append(profiles, v1alpha1.S3Profile{Name: "s3-" + c, Endpoint: "http://127.0.0.1:9000", Bucket: "drover",
			SecretRef: v1alpha1.SecretRef{Name: "s3-" + c, Namespace: "drover-system"}})
	}
	Create(t, &v1alpha1.DRPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: e.Policy},
		Spec: v1alpha1.DRPolicySpec{
			DRClusters: []string{e.East, e.West}, SchedulingInterval: "10s",
			StorageClassBackends: []v1alpha1.StorageClassBackend{{StorageClassName: "lab-block", Backend: v1alpha1.BackendVolRep}},
			S3Profiles:           profiles,
		},
	})
	return e
}

// Create creates obj on the hub or fails the test.
func Create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := Hub.Create(t.Context(), obj); err != nil {
		t.Fatalf("failed to create %T %s: %v", obj, obj.GetName(), err)
	}
}

// SetReachable writes the DRCluster's Reachable condition as the hub does; unreachable since
// 12:04:10.
func (e Env) SetReachable(t *testing.T, cluster string, reachable bool) {
	t.Helper()
	c := Cond(v1alpha1.ConditionReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the probe succeeds")
	if !reachable {
		c = Cond(v1alpha1.ConditionReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable, "unreachable since 12:03:55: connection refused")
		c.LastTransitionTime = *Ago(20 * time.Second)
	}
	cl := &v1alpha1.DRCluster{}
	UpdateStatus(t, client.ObjectKey{Name: cluster}, cl, func() { apimeta.SetStatusCondition(&cl.Status.Conditions, c) })
}

// NewApp creates a DRPlacementControl protecting the namespace <name> from east (no status).
func (e Env) NewApp(t *testing.T, name string) *v1alpha1.DRPlacementControl {
	t.Helper()
	d := &v1alpha1.DRPlacementControl{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.NS},
		Spec: v1alpha1.DRPlacementControlSpec{
			DRPolicyRef:         v1alpha1.PolicyReference{Name: e.Policy},
			PreferredCluster:    e.East,
			PVCSelector:         metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			ProtectedNamespaces: []string{name},
		},
	}
	Create(t, d)
	return d
}

// Deployed is the status of an application deployed and protected on primary, its peer
// Secondary, last synced 8s ago.
func (e Env) Deployed(primary, peer string) v1alpha1.DRPlacementControlStatus {
	return v1alpha1.DRPlacementControlStatus{
		Phase: v1alpha1.PhaseDeployed, Progression: "Completed", CurrentPrimary: primary, ActionTarget: primary,
		LastGroupSyncTime: Ago(8 * time.Second),
		Conditions: []metav1.Condition{
			Cond(v1alpha1.ConditionValidated, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the spec is valid"),
			Cond(v1alpha1.ConditionActionAccepted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the action the spec asks for is accepted"),
			Cond(v1alpha1.ConditionAvailable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the application runs on "+primary),
			Cond(v1alpha1.ConditionPeerReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, peer+"'s VolumeReplicationGroup is Secondary"),
			Cond(v1alpha1.ConditionProtected, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "data and metadata replicate"),
		},
		VRGs: []v1alpha1.VRGSummary{
			{Cluster: primary, ReplicationState: v1alpha1.ReplicationStatePrimary, State: v1alpha1.StatePrimary, LastGroupSyncTime: Ago(8 * time.Second),
				DataReady: metav1.ConditionTrue, DataProtected: metav1.ConditionTrue},
			{Cluster: peer, ReplicationState: v1alpha1.ReplicationStateSecondary, State: v1alpha1.StateSecondary,
				DataReady: metav1.ConditionTrue, DataProtected: metav1.ConditionUnknown},
		},
	}
}

// Unprotected makes the primary's group (the first summary) report DataProtected False with
// reason and message, as the hub summarises such a group.
func Unprotected(d *v1alpha1.DRPlacementControl, reason, message string) {
	s := &d.Status.VRGs[0]
	s.DataProtected = metav1.ConditionFalse
	s.Problems = append(s.Problems, Cond(v1alpha1.ConditionDataProtected, metav1.ConditionFalse, reason, message))
}

// SetStatus writes the DRPlacementControl's status, changed by mutate, as the hub would.
func SetStatus(t *testing.T, d *v1alpha1.DRPlacementControl, st v1alpha1.DRPlacementControlStatus, mutate ...func(*v1alpha1.DRPlacementControl)) {
	t.Helper()
	cur := &v1alpha1.DRPlacementControl{}
	UpdateStatus(t, client.ObjectKeyFromObject(d), cur, func() {
		cur.Status = *st.DeepCopy()
		for _, m := range mutate {
			m(cur)
		}
	})
}

// UpdateStatus reads obj, changes it with mutate and writes its status, retrying on conflicts
// (a command under test may patch the spec meanwhile).
func UpdateStatus(t *testing.T, key client.ObjectKey, obj client.Object, mutate func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := Hub.Get(t.Context(), key, obj); err != nil {
			return err
		}
		mutate()
		return Hub.Status().Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatalf("failed to write the status of %s: %v", key, err)
	}
}

// SetCond sets a condition of the DRPlacementControl's status.
func SetCond(d *v1alpha1.DRPlacementControl, c metav1.Condition) {
	apimeta.SetStatusCondition(&d.Status.Conditions, c)
}

// Get reads the DRPlacementControl again or fails the test.
func Get(t *testing.T, d *v1alpha1.DRPlacementControl) *v1alpha1.DRPlacementControl {
	t.Helper()
	cur := &v1alpha1.DRPlacementControl{}
	if err := Hub.Get(t.Context(), client.ObjectKeyFromObject(d), cur); err != nil {
		t.Fatalf("failed to read %s: %v", d.Name, err)
	}
	return cur
}

// WaitFor polls cond every 10ms until it holds or 10s pass, which fails the test.
func WaitFor(t *testing.T, what string, cond func() bool) {
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

// MustContain fails unless out contains every want.
func MustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q; it is:\n%s", w, out)
		}
	}
}

// InProgress makes a status show the action phase to target under way at step progression,
// accepted for the current generation, Available False with what the hub waits for.
func InProgress(phase v1alpha1.DRPCPhase, target, progression, waiting string) func(d *v1alpha1.DRPlacementControl) {
	return func(d *v1alpha1.DRPlacementControl) {
		d.Status.Phase, d.Status.ActionTarget, d.Status.Progression = phase, target, progression
		d.Status.ActionStartTime = Ago(0)
		SetCond(d, metav1.Condition{Type: v1alpha1.ConditionActionAccepted, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded,
			Message: "accepted", ObservedGeneration: d.Generation, LastTransitionTime: *Ago(0)})
		SetCond(d, Cond(v1alpha1.ConditionAvailable, metav1.ConditionFalse, v1alpha1.ReasonActionInProgress,
			string(phase)+" to "+target+", step "+progression+": "+waiting))
	}
}

// ProgressLines are the printed lines without their elapsed time, which the test cannot know.
func ProgressLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasSuffix(f[0], "s") && strings.Contains(f[0], ".") {
			lines = append(lines, strings.Join(f[1:], " "))
		}
	}
	return lines
}

// CRDs are the CRDs a package's API server installs: drover's, as TestMain hands them to
// labtest.MainWithAPIServer.
var CRDs = []string{"config/crd/bases"}

// Schemes are the schemes of the tests' clients: Kubernetes' and drover's.
var Schemes = []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme}
