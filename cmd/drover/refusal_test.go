//go:build linux

package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/gateway"
	"github.com/drover-io/drover/internal/hub/drpc"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// TestVerbsSayWhyTheHubDoesNotActOnADRPC runs the hub's DRPlacementControl reconciler against a
// real API server and two DRPlacementControls it cannot act on, as a new user writes them: one
// naming a DRPolicy that does not exist, one whose preferredCluster is not in its policy. The
// hub sets Validated False and no phase; drover status, drover failover and kubectl get must
// say why, not that the hub has not reported.
func TestVerbsSayWhyTheHubDoesNotActOnADRPC(t *testing.T) {
	root, err := labtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cfg, scheme, c := startHubAPIServer(t)
	kubeconfig := writeKubeconfig(t, cfg)
	startDRPCReconciler(t, cfg, scheme)
	createInvalidApps(t, c)

	run := func(args ...string) (string, error) { return droverOn(t, kubeconfig, args...) }
	out, err := run("status", "-A")
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	mustContainAll(t, "status", out, "PROBLEM", "Validated: NotFound", "Validated: ClusterNotInPolicy")
	out, err = run("status", "nopolicy", "-n", "nopolicy")
	if err != nil {
		t.Fatalf("status nopolicy: %v", err)
	}
	mustContainAll(t, "status nopolicy", out,
		"Problem: The hub does not act on this DRPlacementControl (Validated False, NotFound): DRPolicy missing does not exist: create it, or delete this DRPlacementControl",
		"Policy:  missing (not found)")
	if strings.Contains(out, "has not reported") {
		t.Errorf("status nopolicy says the hub has not reported:\n%s", out)
	}
	_, err = run("failover", "outside", "--to", "west", "-n", "outside")
	if err == nil || !strings.Contains(err.Error(),
		"failover refused: the hub does not accept the DRPlacementControl (ClusterNotInPolicy): spec.preferredCluster north is not one of the clusters of DRPolicy east-west") {
		t.Errorf("failover outside: %v, want the hub's reason", err)
	}

	for _, wide := range []bool{false, true} {
		args := []string{"--kubeconfig", kubeconfig, "get", "drpc", "-A"}
		if wide {
			args = append(args, "-o", "wide")
		}
		got, err := exec.CommandContext(t.Context(), filepath.Join(root, "bin", "kubectl"), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args[2:], " "), err, got)
		}
		want := []string{"PROBLEM", "NotFound", "ClusterNotInPolicy"}
		if wide {
			want = append(want, "MESSAGE", "DRPolicy missing does not exist")
		}
		mustContainAll(t, "kubectl "+strings.Join(args[2:], " "), string(got), want...)
	}
}

// startDRPCReconciler runs the hub's DRPlacementControl reconciler alone (no managed cluster:
// nothing here gets as far as the gateway) until the test ends.
func startDRPCReconciler(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme) {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&drpc.Reconciler{Client: mgr.GetClient(), Gateway: gateway.NewFake(nil)}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the DRPlacementControl reconciler: %v", err)
		}
	})
}

// createInvalidApps creates nopolicy/nopolicy (DRPolicy missing) and outside/outside (preferredCluster
// north, not in the Validated policy east-west) and waits for the hub's Validated False.
func createInvalidApps(t *testing.T, c client.Client) {
	t.Helper()
	ctx := t.Context()
	for _, ns := range []string{"nopolicy", "outside"} {
		must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	policy := &v1alpha1.DRPolicy{ObjectMeta: metav1.ObjectMeta{Name: "east-west"}, Spec: v1alpha1.DRPolicySpec{
		DRClusters: []string{"east", "west"}, SchedulingInterval: "10s",
		S3Profiles: []v1alpha1.S3Profile{{Name: "s3-east", Endpoint: "http://127.0.0.1:9000", Bucket: "drover",
			SecretRef: v1alpha1.SecretRef{Name: "s3-east", Namespace: "drover-system"}}},
		StorageClassBackends: []v1alpha1.StorageClassBackend{{StorageClassName: "lab-block", Backend: v1alpha1.BackendVolRep}}}}
	must(t, c.Create(ctx, policy))
	// No DRPolicy reconciler runs: the test says the policy is Validated, as the hub would.
	apimeta.SetStatusCondition(&policy.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionValidated, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonSucceeded, Message: "ok"})
	must(t, c.Status().Update(ctx, policy))
	for name, spec := range map[string]v1alpha1.DRPlacementControlSpec{
		"nopolicy": {DRPolicyRef: v1alpha1.PolicyReference{Name: "missing"}, PreferredCluster: "east"},
		"outside":  {DRPolicyRef: v1alpha1.PolicyReference{Name: "east-west"}, PreferredCluster: "north"},
	} {
		spec.PVCSelector = metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
		spec.ProtectedNamespaces = []string{name}
		must(t, c.Create(ctx, &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name}, Spec: spec}))
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, name := range []string{"nopolicy", "outside"} {
		for {
			d := &v1alpha1.DRPlacementControl{}
			must(t, c.Get(ctx, client.ObjectKey{Namespace: name, Name: name}, d))
			if apimeta.IsStatusConditionFalse(d.Status.Conditions, v1alpha1.ConditionValidated) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the hub did not set Validated False on %s/%s within 30s: %+v", name, name, d.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func mustContainAll(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}
