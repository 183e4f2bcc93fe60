package status

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/clitest"
)

// The tests below run the verbs against a real API server holding the hub's objects, whose
// status the tests write as the hub would.

func TestStatusListsTheApplicationsOfANamespace(t *testing.T) {
	e := clitest.NewEnv(t, "status-list")
	db := e.NewApp(t, "db")
	clitest.SetStatus(t, db, e.Deployed(e.East, e.West))
	web := e.NewApp(t, "web")
	clitest.SetStatus(t, web, e.Deployed(e.East, e.West), func(d *v1alpha1.DRPlacementControl) {
		d.Status.Phase, d.Status.Progression, d.Status.ActionTarget = v1alpha1.PhaseFailingOver, "PromotingTarget", e.West
		d.Status.ActionStartTime, d.Status.LastGroupSyncTime = clitest.Ago(5*time.Second), nil
		d.Status.VRGs[0].LastGroupSyncTime = clitest.Ago(35 * time.Second)
		clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonActionInProgress, "in progress"))
		clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionProtected, metav1.ConditionFalse, v1alpha1.ReasonActionInProgress, "in progress"))
	})
	e.NewApp(t, "new") // the hub never reported

	var out bytes.Buffer
	if err := Status(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("status failed: %v", err)
	}
	want := `APP  PHASE        PRIMARY           PEER READY  PROTECTED  LAST SYNC  RPO LAG        PROGRESSION      PROBLEM
db   Deployed     status-list-east  True        True       8s ago     8s/10s         Completed        -
new  -            -                 -           -          -          -              -                -
web  FailingOver  status-list-east  False       False      35s ago    35s/10s STALE  PromotingTarget  -
`
	if out.String() != want {
		t.Errorf("status printed:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if err := Status(t.Context(), clitest.Hub, &out, Options{AllNamespaces: true, Now: clitest.ClockAt}); err != nil {
		t.Fatalf("status -A failed: %v", err)
	}
	clitest.MustContain(t, out.String(), "NAMESPACE    APP", "status-list  db   Deployed")

	out.Reset()
	if err := Status(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, Output: "json"}); err != nil {
		t.Fatalf("status -o json failed: %v", err)
	}
	var list struct {
		APIVersion, Kind string
		Items            []v1alpha1.DRPlacementControl
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("-o json printed no list: %v\n%s", err, out.String())
	}
	if list.APIVersion != "v1" || list.Kind != "List" {
		t.Errorf("-o json printed apiVersion %q kind %q, want a v1 List", list.APIVersion, list.Kind)
	}
	if len(list.Items) != 3 || list.Items[0].Name != "db" || list.Items[0].Kind != "DRPlacementControl" || list.Items[2].Status.Phase != v1alpha1.PhaseFailingOver {
		t.Errorf("-o json printed %+v, want db, new and web", list.Items)
	}
}

func TestStatusOfOneApplicationPrintsConditionsAndGroups(t *testing.T) {
	e := clitest.NewEnv(t, "status-one")
	db := e.NewApp(t, "db")
	e.SetReachable(t, e.West, false)
	clitest.SetStatus(t, db, e.Deployed(e.East, e.West), func(d *v1alpha1.DRPlacementControl) {
		clitest.SetCond(d, clitest.Cond(v1alpha1.ConditionPeerReady, metav1.ConditionFalse, v1alpha1.ReasonPeerUnreachable, "peer status-one-west is unreachable: timeout"))
	})
	var out bytes.Buffer
	if err := Status(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, App: "db", Now: clitest.ClockAt}); err != nil {
		t.Fatalf("status db failed: %v", err)
	}
	clitest.MustContain(t, out.String(),
		"db   Deployed  status-one-east  False       True       8s ago     8s/10s",
		"Policy:  status-one (clusters status-one-east and status-one-west, every 10s)",
		"  PeerReady       False   PeerUnreachable  60s  peer status-one-west is unreachable: timeout",
		"  CLUSTER          REACHABLE  ASKED      STATE      DATA READY  DATA PROTECTED  LAST SYNC",
		"  status-one-east  True       primary    Primary    True        True            8s ago",
		"  status-one-west  False      secondary  Secondary  True        Unknown         -",
		"  status-one-west: unreachable since 12:04:10 UTC",
	)

	for _, format := range []string{"json", "yaml"} {
		out.Reset()
		if err := Status(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, App: "db", Output: format}); err != nil {
			t.Fatalf("status -o %s failed: %v", format, err)
		}
		var got v1alpha1.DRPlacementControl
		data := out.Bytes()
		if format == "yaml" {
			var err error
			if data, err = yaml.YAMLToJSON(data); err != nil {
				t.Fatalf("-o yaml printed no YAML: %v\n%s", err, out.String())
			}
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("-o %s printed no status entry: %v\n%s", format, err, out.String())
		}
		if got.Kind != "DRPlacementControl" || got.APIVersion != "drover.io/v1alpha1" || got.Name != "db" || got.Namespace != e.NS || got.Status.Phase != v1alpha1.PhaseDeployed || got.Status.CurrentPrimary != e.East || len(got.Status.VRGs) != 2 {
			t.Errorf("-o %s printed %+v, want db's status", format, got)
		}
	}
}

func TestStatusErrorsSayWhatToDo(t *testing.T) {
	e := clitest.NewEnv(t, "status-errors")
	e.NewApp(t, "db")
	e.NewApp(t, "web")
	var out bytes.Buffer
	err := Status(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, App: "dbb"})
	if err == nil || err.Error() != `no DRPlacementControl "dbb" in namespace "status-errors"; it has: db, web` {
		t.Errorf("status of a missing DRPC: %v", err)
	}
	err = Status(t.Context(), clitest.Hub, &out, Options{Namespace: "default", App: "db"})
	if err == nil || !strings.Contains(err.Error(), "which has none: name its namespace with -n, or list all with `drover status -A`") {
		t.Errorf("status of a DRPC in an empty namespace: %v", err)
	}
	out.Reset()
	if err := Status(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, App: "db"}); err != nil {
		t.Fatalf("status db failed: %v", err)
	}
	clitest.MustContain(t, out.String(), "The hub has not reported on status-errors/db yet (its status is empty): is `drover hub` running against this cluster?")

	// A DRPlacementControl the hub does not act on has no phase, only its reason.
	web := &v1alpha1.DRPlacementControl{}
	web.Namespace, web.Name = e.NS, "web"
	clitest.SetStatus(t, web, v1alpha1.DRPlacementControlStatus{Conditions: []metav1.Condition{clitest.Cond(v1alpha1.ConditionValidated, metav1.ConditionFalse,
		v1alpha1.ReasonClusterNotInPolicy, "spec.preferredCluster north is not one of the clusters of DRPolicy p (east, west): name one of them")}})
	out.Reset()
	if err := Status(t.Context(), clitest.Hub, &out, Options{Namespace: e.NS, App: "web"}); err != nil {
		t.Fatalf("status web failed: %v", err)
	}
	clitest.MustContain(t, out.String(), "web  -      -        -           -          -          -        -            Validated: ClusterNotInPolicy",
		"Problem: The hub does not act on this DRPlacementControl (Validated False, ClusterNotInPolicy): spec.preferredCluster north is not one of the clusters",
		"  Validated  False   ClusterNotInPolicy")
	if strings.Contains(out.String(), "has not reported") {
		t.Errorf("status of a DRPlacementControl the hub refuses says the hub has not reported:\n%s", out.String())
	}
}
