package actions

import (
	"bytes"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/clitest"
)

func TestProtectCreatesTheDRPCAndADryRunCreatesNothing(t *testing.T) {
	e := clitest.NewEnv(t, "protect")
	o := ProtectOptions{Namespace: e.NS, App: "db", Policy: e.Policy, Cluster: e.East, PVCSelector: "app=db", DryRun: true, Output: "yaml"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Protect(t.Context(), clitest.Hub, &out, o); err != nil {
		t.Fatalf("protect --dry-run failed: %v", err)
	}
	printed := &v1alpha1.DRPlacementControl{}
	if err := yaml.Unmarshal(out.Bytes(), printed); err != nil {
		t.Fatalf("--dry-run -o yaml printed no DRPlacementControl: %v\n%s", err, out.String())
	}
	if printed.Kind != "DRPlacementControl" || printed.APIVersion != "drover.io/v1alpha1" || printed.Spec.PreferredCluster != e.East ||
		printed.Spec.PVCSelector.MatchLabels["app"] != "db" || len(printed.Spec.ProtectedNamespaces) != 1 || printed.Spec.ProtectedNamespaces[0] != e.NS {
		t.Errorf("--dry-run printed %s", out.String())
	}
	err := clitest.Hub.Get(t.Context(), client.ObjectKey{Namespace: e.NS, Name: "db"}, &v1alpha1.DRPlacementControl{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("--dry-run created the DRPlacementControl: %v", err)
	}

	o.DryRun, o.Output = false, ""
	out.Reset()
	if err := Protect(t.Context(), clitest.Hub, &out, o); err != nil {
		t.Fatalf("protect failed: %v", err)
	}
	if got := out.String(); got != "drplacementcontrol.drover.io/db created\n" {
		t.Errorf("protect printed %q", got)
	}
	created := &v1alpha1.DRPlacementControl{}
	if err := clitest.Hub.Get(t.Context(), client.ObjectKey{Namespace: e.NS, Name: "db"}, created); err != nil {
		t.Fatalf("protect created nothing: %v", err)
	}
	if created.Spec.DRPolicyRef.Name != e.Policy {
		t.Errorf("the DRPlacementControl names policy %q", created.Spec.DRPolicyRef.Name)
	}

	err = Protect(t.Context(), clitest.Hub, &out, o)
	if cli.ExitCodeOf(err) != cli.ExitRefused || !strings.Contains(err.Error(), "protect/db is already protected") {
		t.Errorf("protecting again: exit %d, %v", cli.ExitCodeOf(err), err)
	}
}

func TestProtectRefusesBadInputBeforeSendingAnything(t *testing.T) {
	for name, o := range map[string]ProtectOptions{
		"no policy":            {App: "db", Cluster: "east"},
		"no cluster":           {App: "db", Policy: "p"},
		"a bad selector":       {App: "db", Policy: "p", Cluster: "east", PVCSelector: "app in (db"},
		"placement and spaces": {App: "db", Policy: "p", Cluster: "east", Placement: "db", ProtectedNamespaces: []string{"x"}},
		"an unknown output":    {App: "db", Policy: "p", Cluster: "east", Output: "wide"},
	} {
		if err := o.Validate(); cli.ExitCodeOf(err) != cli.ExitUsage {
			t.Errorf("%s: exit %d, %v; want a usage error", name, cli.ExitCodeOf(err), err)
		}
	}
}

func TestUnprotectAsksDeletesAndADryRunChangesNothing(t *testing.T) {
	e := clitest.NewEnv(t, "unprotect")
	e.NewApp(t, "db")
	key := client.ObjectKey{Namespace: e.NS, Name: "db"}
	var out bytes.Buffer
	if err := Unprotect(t.Context(), clitest.Hub, &out, UnprotectOptions{Namespace: e.NS, App: "db", DryRun: true}); err != nil {
		t.Fatalf("unprotect --dry-run failed: %v", err)
	}
	clitest.MustContain(t, out.String(), "Would stop protecting unprotect/db", "Nothing was changed (--dry-run).")
	if err := clitest.Hub.Get(t.Context(), key, &v1alpha1.DRPlacementControl{}); err != nil {
		t.Fatalf("--dry-run deleted the DRPlacementControl: %v", err)
	}

	noTerminal := &cli.Confirmation{In: strings.NewReader(""), Out: &out, Terminal: func() bool { return false }}
	err := Unprotect(t.Context(), clitest.Hub, &out, UnprotectOptions{Namespace: e.NS, App: "db", Confirm: noTerminal})
	if cli.ExitCodeOf(err) != cli.ExitUsage || !strings.Contains(err.Error(), "add --yes") {
		t.Errorf("without a terminal and --yes: exit %d, %v", cli.ExitCodeOf(err), err)
	}
	wrong := &cli.Confirmation{In: strings.NewReader("web\n"), Out: &out, Terminal: func() bool { return true }}
	if err := Unprotect(t.Context(), clitest.Hub, &out, UnprotectOptions{Namespace: e.NS, App: "db", Confirm: wrong}); cli.ExitCodeOf(err) != cli.ExitRefused {
		t.Errorf("a wrong answer: exit %d, %v", cli.ExitCodeOf(err), err)
	}
	if err := clitest.Hub.Get(t.Context(), key, &v1alpha1.DRPlacementControl{}); err != nil {
		t.Fatalf("an unconfirmed unprotect deleted the DRPlacementControl: %v", err)
	}

	out.Reset()
	typed := &cli.Confirmation{In: strings.NewReader("db\n"), Out: &out, Terminal: func() bool { return true }}
	if err := Unprotect(t.Context(), clitest.Hub, &out, UnprotectOptions{Namespace: e.NS, App: "db", Confirm: typed}); err != nil {
		t.Fatalf("a confirmed unprotect failed: %v", err)
	}
	clitest.MustContain(t, out.String(), "Type db to confirm", "drplacementcontrol.drover.io/db deleted")
	d := &v1alpha1.DRPlacementControl{}
	if err := clitest.Hub.Get(t.Context(), key, d); err == nil && d.DeletionTimestamp == nil {
		t.Fatal("the DRPlacementControl is still there and not deleting")
	}
	err = Unprotect(t.Context(), clitest.Hub, &out, UnprotectOptions{Namespace: e.NS, App: "web", Confirm: typed})
	if cli.ExitCodeOf(err) != cli.ExitRefused || !strings.Contains(err.Error(), "unprotect/web is not protected") {
		t.Errorf("an application that is not protected: exit %d, %v", cli.ExitCodeOf(err), err)
	}
}
