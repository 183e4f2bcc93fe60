package drill

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli/clitest"
)

// The drill tests play the hub: they create DRDrills or find those the command created, and
// write their status as the hub's drill reconciler would.

// drillsOf lists the application's DRDrills, newest first.
func drillsOf(t *testing.T, e clitest.Env, app string) []v1alpha1.DRDrill {
	t.Helper()
	drills, err := listDrills(t.Context(), clitest.Hub, e.NS, app)
	if err != nil {
		t.Fatalf("failed to list the drills of %s: %v", app, err)
	}
	return drills
}

// createDrill creates a DRDrill of app, named name, with no status.
func createDrill(t *testing.T, e clitest.Env, app, name string) *v1alpha1.DRDrill {
	t.Helper()
	d := &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.NS},
		Spec: v1alpha1.DRDrillSpec{DRPCName: app, Timeout: &metav1.Duration{Duration: DefaultTimeout}}}
	clitest.Create(t, d)
	return d
}

// setDrillStatus writes the DRDrill's status, changed by mutate, as the hub would.
func setDrillStatus(t *testing.T, d *v1alpha1.DRDrill, mutate func(st *v1alpha1.DRDrillStatus)) {
	t.Helper()
	cur := &v1alpha1.DRDrill{}
	clitest.UpdateStatus(t, client.ObjectKeyFromObject(d), cur, func() { mutate(&cur.Status) })
}

func int64p(v int64) *int64 { return &v }

// step is a drill step that started at start and, when took >= 0, finished took later.
func step(name string, start, took time.Duration, result v1alpha1.DrillResult, message string) v1alpha1.DrillStep {
	s := v1alpha1.DrillStep{Name: name, Started: clitest.Ago(-start), Message: message}
	if took >= 0 {
		s.Finished, s.Result = clitest.Ago(-start-took), result
	}
	return s
}

// passedDrill writes the status the hub writes for a full drill of db from east on west that
// passed: started at testNow, two volumes 8s and 20s old, Ready and checked after 72s.
func passedDrill(e clitest.Env) func(st *v1alpha1.DRDrillStatus) {
	return func(st *v1alpha1.DRDrillStatus) {
		*st = v1alpha1.DRDrillStatus{
			Phase: v1alpha1.DrillPassed, Result: v1alpha1.DrillResultPassed, Mode: v1alpha1.DrillModeFull,
			TargetCluster: e.West, PrimaryCluster: e.East, StartTime: clitest.Ago(0), EndTime: clitest.Ago(-95 * time.Second),
			RTOSeconds: int64p(72), RPOSeconds: int64p(20),
			Volumes: []v1alpha1.DrillVolume{
				{PVCNamespace: "db", PVCName: "data-db-0", Point: "volsync-db-0-dst-20261130120422", PointTime: clitest.Ago(8 * time.Second),
					SandboxPVC: "db-drill-a1b2c3/data-db-0", RPOSeconds: int64p(8)},
				{PVCNamespace: "db", PVCName: "wal-db-0", Point: "volsync-wal-db-0-dst-20261130120410", PointTime: clitest.Ago(20 * time.Second),
					SandboxPVC: "db-drill-a1b2c3/wal-db-0", RPOSeconds: int64p(20)},
			},
			Namespaces: []v1alpha1.DrillSandboxNamespace{{Source: "db", Sandbox: "db-drill-a1b2c3"}},
			Steps: []v1alpha1.DrillStep{
				step("Accepted", 0, 0, v1alpha1.DrillResultPassed, "target "+e.West),
				step("CopyingVolumes", 0, 21*time.Second, v1alpha1.DrillResultPassed, "2 volumes copied from their latest snapshots"),
				step("RestoringObjects", 21*time.Second, 4*time.Second, v1alpha1.DrillResultPassed, "14 objects restored"),
				step("StartingWorkloads", 25*time.Second, 35*time.Second, v1alpha1.DrillResultPassed, "statefulset/db Ready"),
				step("Checking", 60*time.Second, 12*time.Second, v1alpha1.DrillResultPassed, "job/check succeeded"),
				step("TearingDown", 72*time.Second, 23*time.Second, v1alpha1.DrillResultPassed, "sandbox removed"),
			},
			Check: &v1alpha1.DrillCheckJob{Result: v1alpha1.DrillResultPassed, Message: "the Job succeeded",
				LogTail: "From container check of pod drover-drill-check-x7k2p (exit code 0):\nrows in orders: 1042\nlast order at 2026-11-30T12:04:21Z\n"},
			Teardown:           &v1alpha1.DrillCheck{Name: "Teardown", Result: v1alpha1.DrillResultPassed, Message: "1 namespace, 2 snapshot contents and 2 holds removed"},
			PrimaryReplication: &v1alpha1.DrillCheck{Name: "PrimaryReplication", Result: v1alpha1.DrillResultPassed, Message: "every group sync kept within 20s (twice 10s)"},
			Conditions:         []metav1.Condition{clitest.Cond(v1alpha1.ConditionDrillAccepted, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "the drill runs on "+e.West)},
		}
	}
}

// writeFile writes content to a file of the test's and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkJobYAML is a Job as `kubectl get job -o yaml` prints one: with the selector and labels
// the Job controller set, which the sandbox's Job cannot keep.
const checkJobYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: check
  namespace: db
spec:
  backoffLimit: 2
  selector:
    matchLabels:
      batch.kubernetes.io/controller-uid: 0b5e
  template:
    metadata:
      labels:
        batch.kubernetes.io/controller-uid: 0b5e
        batch.kubernetes.io/job-name: check
        controller-uid: 0b5e
        job-name: check
        role: check
    spec:
      restartPolicy: Never
      containers:
      - name: check
        image: postgres:17
        command: ["psql", "-h", "db", "-c", "select count(*) from orders"]
status: {}
`
