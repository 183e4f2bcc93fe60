package cluster

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/clitest"
)

func getCluster(t *testing.T, name string) *v1alpha1.DRCluster {
	t.Helper()
	drc := &v1alpha1.DRCluster{}
	if err := clitest.Hub.Get(t.Context(), client.ObjectKey{Name: name}, drc); err != nil {
		t.Fatal(err)
	}
	return drc
}

func TestClusterLostSaysWhatItDoesAndChangesNothingWithoutYes(t *testing.T) {
	e := clitest.NewEnv(t, "lost-plan")
	d := e.NewApp(t, "db")
	clitest.SetStatus(t, d, e.Deployed(e.East, e.West))
	var out bytes.Buffer
	err := DeclareLost(t.Context(), clitest.Hub, &out, LostOptions{Cluster: e.East, Reason: "flooded"})
	if err != nil {
		t.Fatalf("without --yes (a preview): got %v, want no error", err)
	}
	clitest.MustContain(t, out.String(),
		"Declaring cluster lost-plan-east lost (flooded):",
		"Nothing changed: run again with --yes to confirm.",
		"WARNING: the hub still reaches lost-plan-east (the probe succeeds): declare a cluster lost only when it is gone for good",
		"lost-plan/db runs on lost-plan-east: fail it over (drover failover db -n lost-plan --to lost-plan-west)",
		"deleting an application no longer waits for lost-plan-east",
		"no failover or relocation may target lost-plan-east")
	if got := getCluster(t, e.East); got.Spec.Lost != nil {
		t.Errorf("without --yes the DRCluster was changed: %+v", got.Spec.Lost)
	}
	if err := DeclareLost(t.Context(), clitest.Hub, &out, LostOptions{Cluster: e.East}); err == nil || !strings.Contains(err.Error(), "--reason is required") {
		t.Errorf("no reason: got %v", err)
	}
	if err := DeclareLost(t.Context(), clitest.Hub, &out, LostOptions{Cluster: "nowhere", Reason: "x", Yes: true}); err == nil ||
		err.Error() != "DRCluster nowhere does not exist on the hub: check the name (kubectl get drclusters)" {
		t.Errorf("unknown cluster: got %v", err)
	}
}

func TestClusterLostWithYesSetsTheSpecAndUndoRemovesIt(t *testing.T) {
	e := clitest.NewEnv(t, "lost-yes")
	e.SetReachable(t, e.East, false)
	var out bytes.Buffer
	if err := DeclareLost(t.Context(), clitest.Hub, &out, LostOptions{Cluster: e.East, Reason: "flooded", Yes: true}); err != nil {
		t.Fatalf("declare lost: %v\n%s", err, out.String())
	}
	clitest.MustContain(t, out.String(), "DRCluster lost-yes-east is declared lost")
	if strings.Contains(out.String(), "WARNING") {
		t.Errorf("an unreachable cluster is declared lost without a warning:\n%s", out.String())
	}
	if got := getCluster(t, e.East); got.Spec.Lost == nil || got.Spec.Lost.Reason != "flooded" {
		t.Fatalf("spec.lost is %+v, want reason flooded", got.Spec.Lost)
	}
	out.Reset()
	if err := DeclareLost(t.Context(), clitest.Hub, &out, LostOptions{Cluster: e.East, Reason: "flooded", Yes: true}); err != nil {
		t.Fatalf("declare again: %v", err)
	}
	clitest.MustContain(t, out.String(), "is already declared lost (flooded)")
	err := DeclareLost(t.Context(), clitest.Hub, &out, LostOptions{Cluster: e.East, Reason: "burnt", Yes: true})
	if err == nil || !strings.Contains(err.Error(), "run drover cluster lost lost-yes-east --undo --yes first to change the reason") {
		t.Errorf("another reason: got %v", err)
	}

	// The API server itself refuses to change the reason in place, or an empty one (CEL).
	drc := getCluster(t, e.East)
	drc.Spec.Lost.Reason = "burnt"
	if err := clitest.Hub.Update(t.Context(), drc); err == nil || !strings.Contains(err.Error(), "spec.lost cannot be changed once set") {
		t.Errorf("changing the reason in place: got %v", err)
	}
	west := getCluster(t, e.West)
	west.Spec.Lost = &v1alpha1.DRClusterLost{Reason: "   "}
	if err := clitest.Hub.Update(t.Context(), west); err == nil || !strings.Contains(err.Error(), "spec.lost.reason must say why the cluster is lost") {
		t.Errorf("a blank reason: got %v", err)
	}

	// A restore's mark on the declaration (drover hub restore declared it) goes with the undo.
	marked := getCluster(t, e.East)
	before := marked.DeepCopy()
	marked.Annotations = map[string]string{v1alpha1.AnnotationLostDeclaredByRestore: "2026-12-07T22:00:00Z"}
	if err := clitest.Hub.Patch(t.Context(), marked, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	if err := DeclareLost(t.Context(), clitest.Hub, &out, LostOptions{Cluster: e.East, Undo: true}); err != nil || !strings.Contains(out.String(), "Nothing changed") {
		t.Fatalf("undo without --yes: got %v", err)
	}
	if got := getCluster(t, e.East); got.Spec.Lost == nil {
		t.Fatal("undo without --yes removed spec.lost")
	}
	if err := DeclareLost(t.Context(), clitest.Hub, &out, LostOptions{Cluster: e.East, Undo: true, Yes: true}); err != nil {
		t.Fatalf("undo: %v", err)
	}
	clitest.MustContain(t, out.String(), "DRCluster lost-yes-east is no longer declared lost.")
	if got := getCluster(t, e.East); got.Spec.Lost != nil || got.Annotations[v1alpha1.AnnotationLostDeclaredByRestore] != "" {
		t.Errorf("undo left spec.lost %+v or the restore's mark %v", got.Spec.Lost, got.Annotations)
	}
}
