package status

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/clitest"
)

// Pure tests of what the verbs compute and print, without an API server.

func TestRPOLag(t *testing.T) {
	cases := []struct {
		name     string
		lag      time.Duration
		interval time.Duration
		refresh  *metav1.Duration
		want     string
	}{
		{"within the interval", 8 * time.Second, 10 * time.Second, nil, "8s/10s"},
		{"late but within twice the interval", 19 * time.Second, 10 * time.Second, nil, "19s/10s"},
		{"past twice the interval is stale, as the hub's Protected says", 21 * time.Second, 10 * time.Second, nil, "21s/10s STALE"},
		{"within twice the interval plus the storage's status refresh", 29 * time.Second, 10 * time.Second, &metav1.Duration{Duration: 10 * time.Second}, "29s/10s"},
		{"past twice the interval plus the storage's status refresh", 31 * time.Second, 10 * time.Second, &metav1.Duration{Duration: 10 * time.Second}, "31s/10s STALE"},
		{"minutes", 150 * time.Second, 5 * time.Minute, nil, "2m30s/5m"},
		{"an unknown interval", 8 * time.Second, 0, nil, "8s/?"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rpoLag(tc.lag, tc.interval, tc.refresh); got != tc.want {
				t.Errorf("rpoLag(%s, %s) = %q, want %q", tc.lag, tc.interval, got, tc.want)
			}
		})
	}
}

func TestRowOf(t *testing.T) {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	deployed := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Status: e.Deployed("east", "west")}
	failing := deployed.DeepCopy()
	failing.Status.Phase, failing.Status.Progression, failing.Status.LastGroupSyncTime = v1alpha1.PhaseFailingOver, "PromotingTarget", nil
	failing.Status.VRGs[0].LastGroupSyncTime = clitest.Ago(25 * time.Second)
	never := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "app"}}
	invalid := never.DeepCopy()
	clitest.SetCond(invalid, clitest.Cond(v1alpha1.ConditionValidated, metav1.ConditionFalse, v1alpha1.ReasonNotFound, "DRPolicy missing does not exist"))
	refused := deployed.DeepCopy()
	clitest.SetCond(refused, clitest.Cond(v1alpha1.ConditionActionAccepted, metav1.ConditionFalse, v1alpha1.ReasonPeerNotReady, "relocate refused"))
	cases := []struct {
		name string
		d    *v1alpha1.DRPlacementControl
		want Row
	}{
		{"a deployed, protected application", deployed,
			Row{"app", "db", "Deployed", "east", "True", "True", "8s ago", "8s/10s", "Completed", "-", "-", "no action"}},
		{"during a failover the primary's group tells the last sync", failing,
			Row{"app", "db", "FailingOver", "east", "True", "True", "25s ago", "25s/10s STALE", "PromotingTarget", "-", "-", "no action"}},
		{"an application the hub never reported", never,
			Row{"app", "new", "-", "-", "-", "-", "-", "-", "-", "-", "-", "no action"}},
		{"an application the hub does not act on says why", invalid,
			Row{"app", "new", "-", "-", "-", "-", "-", "-", "-", "Validated: NotFound", "-", "no action"}},
		{"an action the hub refuses says why", refused,
			Row{"app", "db", "Deployed", "east", "True", "True", "8s ago", "8s/10s", "Completed", "ActionAccepted: PeerNotReady", "-", "no action"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rowOf(tc.d, 10*time.Second, clitest.TestNow); got != tc.want {
				t.Errorf("rowOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestOptionsAreValidatedBeforeAnyRead(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"an unknown output", (&Options{Output: "table"}).Validate(), `unknown output format "table": use wide, name, json, yaml or jsonpath=TEMPLATE, or leave -o out for a table`},
		{"APP with -A", (&Options{App: "db", AllNamespaces: true}).Validate(), "APP names one DRPlacementControl: drop -A and name its namespace with -n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || tc.err.Error() != tc.want {
				t.Errorf("got %v, want %q", tc.err, tc.want)
			}
		})
	}
}

func TestTheClustersTableTellsEachGroupsDataStatusesAndWhatIsWrongWithIt(t *testing.T) {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Status: e.Deployed("east", "west")}
	clitest.Unprotected(d, v1alpha1.ReasonProgressing, "1 of 3 PVCs has not synced yet")
	var out bytes.Buffer
	printGroups(&out, &cli.App{DRPC: d}, clitest.ClockAt())
	clitest.MustContain(t, out.String(),
		"east     -          primary    Primary    True        False           8s ago",
		"west     -          secondary  Secondary  True        Unknown         -",
		"east: DataProtected False (Progressing): 1 of 3 PVCs has not synced yet")
	if strings.Contains(out.String(), "west:") {
		t.Errorf("a healthy secondary has no problem to tell:\n%s", out.String())
	}
}

func TestTheStatusOfAnApplicationListsItsPVCsWithTheirLastSyncAgainstTheInterval(t *testing.T) {
	e := clitest.Env{NS: "app", East: "east", West: "west", Policy: "p"}
	d := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Status: e.Deployed("east", "west")}
	var out bytes.Buffer
	printGroups(&out, &cli.App{DRPC: d, Interval: 10 * time.Second}, clitest.ClockAt())
	if strings.Contains(out.String(), "PVCs:") {
		t.Errorf("a status whose groups list no PVC prints a PVC table:\n%s", out.String())
	}

	clitest.Unprotected(d, v1alpha1.ReasonProgressing, "waiting for the first sync of PVC app/data-db-2")
	total := int32(17)
	d.Status.VRGs[0].ProtectedPVCs = &total
	d.Status.VRGs[0].PVCs = []v1alpha1.PVCSyncSummary{
		{Namespace: "app", Name: "data-db-0", DataProtected: metav1.ConditionTrue, LastSyncTime: clitest.Ago(8 * time.Second),
			LastSyncDuration: &metav1.Duration{Duration: 1200 * time.Millisecond}},
		{Namespace: "app", Name: "data-db-1", DataProtected: metav1.ConditionTrue, LastSyncTime: clitest.Ago(25 * time.Second)},
		{Namespace: "app", Name: "data-db-2", DataProtected: metav1.ConditionFalse, Reason: v1alpha1.ReasonProgressing},
	}
	for i := 3; i < v1alpha1.MaxPVCSummaries; i++ {
		d.Status.VRGs[0].PVCs = append(d.Status.VRGs[0].PVCs, v1alpha1.PVCSyncSummary{Namespace: "app", Name: fmt.Sprintf("data-db-%d", i),
			DataProtected: metav1.ConditionTrue, LastSyncTime: clitest.Ago(8 * time.Second)})
	}
	out.Reset()
	printGroups(&out, &cli.App{DRPC: d, Interval: 10 * time.Second}, clitest.ClockAt())
	clitest.MustContain(t, out.String(),
		"PVC             CLUSTER  LAST SYNC / INTERVAL          TOOK  DATA PROTECTED  REASON",
		"app/data-db-0   east     8s/10s (12:04:22 UTC)         1.2s  True            -",
		"app/data-db-1   east     25s/10s STALE (12:04:05 UTC)  -     True            -",
		"app/data-db-2   east     not synced yet                -     False           Progressing",
		"east: 16 of its 17 PVCs listed (not protected first, then the least recently synced)")
}
