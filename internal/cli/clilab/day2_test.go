package clilab

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/day2"
	"github.com/drover-io/drover/internal/lab"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// rows runs a validate verb with -o yaml and returns its rows by check, and its error.
func rows(t *testing.T, run func(io.Writer, day2.ValidateOptions) error, o day2.ValidateOptions) (map[string]day2.Row, string, error) {
	t.Helper()
	var out bytes.Buffer
	o.Output = "yaml"
	err := run(&out, o)
	var parsed struct{ Checks []day2.Row }
	if uerr := yaml.Unmarshal(out.Bytes(), &parsed); uerr != nil {
		t.Fatalf("validate printed no YAML (%v):\n%s", uerr, out.String())
	}
	byCheck := map[string]day2.Row{}
	for _, r := range parsed.Checks {
		byCheck[r.Check] = r
	}
	return byCheck, out.String(), err
}

func validateClusters(t *testing.T) func(io.Writer, day2.ValidateOptions) error {
	return func(w io.Writer, o day2.ValidateOptions) error {
		return day2.ValidateClusters(t.Context(), restConfig(lab.Hub), w, o)
	}
}

func validateApp(t *testing.T) func(io.Writer, day2.ValidateOptions) error {
	return func(w io.Writer, o day2.ValidateOptions) error {
		o.Namespace, o.App = appNamespace, appName
		return day2.ValidateApplication(t.Context(), restConfig(lab.Hub), w, o)
	}
}

// expect asserts the result of each named check.
func expect(t *testing.T, got map[string]day2.Row, out string, want map[string]day2.Result) {
	t.Helper()
	for check, r := range want {
		row, ok := got[check]
		if !ok {
			t.Errorf("no check %q in:\n%s", check, out)
			continue
		}
		if row.Result != r {
			t.Errorf("check %q is %s (%s), want %s", check, row.Result, row.Detail, r)
		}
	}
}

// noFailures asserts that no row failed.
func noFailures(t *testing.T, got map[string]day2.Row, out string, err error) {
	t.Helper()
	for _, r := range got {
		if r.Result == day2.Fail {
			t.Errorf("check %q failed: %s", r.Check, r.Detail)
		}
	}
	if err != nil {
		t.Errorf("validate returned %v on a healthy lab:\n%s", err, out)
	}
}

func TestValidateClustersPassesOnAHealthyLab(t *testing.T) {
	got, out, err := rows(t, validateClusters(t), day2.ValidateOptions{})
	noFailures(t, got, out, err)
	expect(t, got, out, map[string]day2.Result{
		"hub: API server": day2.Pass, "hub: clock": day2.Pass, "hub: CRDs drover.io/v1alpha1": day2.Pass,
		"hub: DRPolicy day2": day2.Pass,
		"east: credential":   day2.Pass, "east: hub's view": day2.Pass, "east: API server": day2.Pass, "east: clock": day2.Pass,
		"west: API server": day2.Pass, "west: clock": day2.Pass,
		"east: CRDs drover.io/v1alpha1":                        day2.Pass,
		"east: CRDs replication.storage.openshift.io/v1alpha1": day2.Pass,
		"west: CRDs volsync.backube/v1alpha1":                  day2.Pass,
		"west: CRDs snapshot.storage.k8s.io/v1":                day2.Pass,
		"east: StorageClass lab-block (VolRep, day2)":          day2.Pass,
		"west: StorageClass lab-file (VolSync, day2)":          day2.Pass,
		"S3 profile s3-east":                                   day2.Pass,
		"S3 profile s3-west":                                   day2.Pass,
		// The lab runs drover as processes, if at all: no Deployment tells its version.
		"east: drover-agent": day2.Warn,
	})
	t.Logf("validate clusters on the healthy lab:\n%s", out)
}

func TestValidateApplicationPassesOnAHealthyLab(t *testing.T) {
	got, out, err := rows(t, validateApp(t), day2.ValidateOptions{Now: statusTimeNow})
	noFailures(t, got, out, err)
	expect(t, got, out, map[string]day2.Result{
		"DRPlacementControl: PeerReady":                         day2.Pass,
		"group on east (primary)":                               day2.Pass,
		"group on west (secondary)":                             day2.Pass,
		"group on east: ClusterDataProtected":                   day2.Pass,
		"PVC shop/data":                                         day2.Pass,
		"capture of the objects":                                day2.Pass,
		"failover to west: reachability of target west":         day2.Pass,
		"failover to west: age of the last group sync":          day2.Pass,
		"failover to west: the hub's report on the application": day2.Pass,
	})
}

// TestValidateFailsOnABrokenLab stops east and deletes west's StorageClass of the VolSync
// backend: validate must fail those checks, and exit non-zero, while the hub's (stale) view
// still says both clusters are reachable.
func TestValidateFailsOnABrokenLab(t *testing.T) {
	west := clusterClient(lab.West)
	sc := &storagev1.StorageClass{}
	if err := west.Get(t.Context(), client.ObjectKey{Name: lab.FileStorageClass}, sc); err != nil {
		t.Fatal(err)
	}
	if err := west.Delete(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context is done once cleanups run.
		if err := createAll(context.Background(), west, fileStorageClass()); err != nil {
			t.Errorf("failed to restore StorageClass %s on west: %v", lab.FileStorageClass, err)
		}
	})
	if err := testLab.Stop(lab.East); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testLab.Start(context.Background(), lab.East); err != nil {
			t.Errorf("failed to start east again: %v", err)
		}
	})

	got, out, err := rows(t, validateClusters(t), day2.ValidateOptions{})
	if !errors.Is(err, day2.ErrValidationFailed) || cli.ExitCodeOf(err) == cli.ExitOK {
		t.Errorf("validate clusters returned %v (exit %d), want a failure", err, cli.ExitCodeOf(err))
	}
	expect(t, got, out, map[string]day2.Result{
		"east: credential": day2.Pass,
		"east: API server": day2.Fail,
		"west: API server": day2.Pass,
		"west: StorageClass lab-file (VolSync, day2)": day2.Fail,
		"west: StorageClass lab-block (VolRep, day2)": day2.Pass,
	})
	if d := got["west: StorageClass lab-file (VolSync, day2)"].Detail; !strings.Contains(d, "no such StorageClass on west") {
		t.Errorf("the storage check says %q, want it to name the missing StorageClass", d)
	}
	t.Logf("validate clusters on the broken lab:\n%s", out)

	got, out, err = rows(t, validateApp(t), day2.ValidateOptions{Now: statusTimeNow})
	if !errors.Is(err, day2.ErrValidationFailed) {
		t.Errorf("validate application returned %v, want a failure", err)
	}
	expect(t, got, out, map[string]day2.Result{
		"group on east (primary)":   day2.Fail,
		"group on west (secondary)": day2.Pass,
	})
}

// TestGatherLeavesNoSecretValueInTheTarball plants Secret values on every cluster (a password
// and a token in the application's namespace, kubectl's last-applied annotation repeating the
// password, a token beside each DRCluster's kubeconfig) and an Event whose message repeats the
// password, then asserts that no byte sequence of any of them, nor of the S3 keys and the
// kubeconfigs' credentials, is anywhere in the tarball, in clear or in base64, while the Secrets'
// names and key names are.
func TestGatherLeavesNoSecretValueInTheTarball(t *testing.T) {
	east := clusterClient(lab.East)
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "leaky"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: appNamespace, Name: "db-0"},
		Reason:         "Leaked", Message: "connecting with password " + plantedPassword, Type: corev1.EventTypeWarning,
		LastTimestamp: metav1.Now()}
	if err := createAll(t.Context(), east, ev); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "gather.tar.gz")
	var out bytes.Buffer
	if err := day2.Gather(t.Context(), restConfig(lab.Hub), &out, day2.GatherOptions{File: file}); err != nil {
		t.Fatalf("gather failed: %v\n%s", err, out.String())
	}
	files := untar(t, file)
	var all bytes.Buffer
	for _, body := range files {
		all.Write(body)
	}
	for _, s := range plantedValues(t) {
		for _, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s))} {
			if bytes.Contains(all.Bytes(), []byte(form)) {
				t.Errorf("the tarball holds a secret value %.20q...", form)
			}
		}
	}
	for name, want := range map[string][]string{
		"README.md":                                                   {"east: with the hub's credential"},
		"hub/drplacementcontrols.yaml":                                {"name: db"},
		"hub/namespaces/drover-system/secrets.yaml":                   {"kubeconfig-east", "kubeconfig: <redacted>"},
		"east/storageclasses.storage.k8s.io.yaml":                     {"name: lab-block", "apiVersion: v1"},
		"east/namespaces/shop/secrets.yaml":                           {"db-credentials", "password: <redacted>", "apiVersion: v1", "kind: Secret"},
		"east/namespaces/shop/events.yaml":                            {"connecting with password <redacted>"},
		"east/namespaces/shop/volumereplicationgroups.drover.io.yaml": {"name: db"},
		"east/namespaces/shop/persistentvolumeclaims.yaml":            {"name: data"},
		"east/logs/README.txt":                                        {"No pod runs in drover-system"},
	} {
		body, ok := files["drover-gather/"+name]
		if !ok {
			t.Errorf("the tarball has no %s; it has %v", name, keys(files))
			continue
		}
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s does not contain %q:\n%s", name, w, body)
			}
		}
	}
}

// plantedValues are every secret value the lab holds that the tarball must not: the planted
// ones, the S3 keys, and the credentials of the DRClusters' kubeconfigs and of the hub's.
func plantedValues(t *testing.T) []string {
	t.Helper()
	vals := []string{plantedPassword, plantedToken}
	profiles, err := testLab.S3Profiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range profiles {
		vals = append(vals, p.AccessKeyID, p.SecretAccessKey)
	}
	hub := clusterClient(lab.Hub)
	for _, name := range []string{lab.East, lab.West} {
		s := &corev1.Secret{}
		if err := hub.Get(t.Context(), client.ObjectKey{Namespace: lab.DroverNamespace, Name: lab.KubeconfigSecretName(name)}, s); err != nil {
			t.Fatal(err)
		}
		kc, err := clientcmd.Load(s.Data[v1alpha1.KubeconfigSecretKey])
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range kc.AuthInfos {
			vals = append(vals, keyLines(u.ClientKeyData)...)
		}
	}
	vals = append(vals, keyLines(restConfig(lab.Hub).KeyData)...)
	return vals
}

// keyLines are the base64 lines of a PEM private key, each long enough to identify it.
func keyLines(pem []byte) []string {
	var out []string
	for _, l := range strings.Split(string(pem), "\n") {
		if len(l) >= 32 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

// untar reads a gathered archive into its files by name.
func untar(t *testing.T, file string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range labtest.Untar(t, file) {
		files[f.Name] = f.Body
	}
	return files
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestEventsMergesTheHubAndBothClusters writes an event on each cluster, out of order, and
// expects them merged oldest first with their cluster.
func TestEventsMergesTheHubAndBothClusters(t *testing.T) {
	base := time.Now().Add(-time.Minute).Truncate(time.Second)
	write := func(cluster, kind, reason string, at time.Time) {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "order-" + strings.ToLower(reason)},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: appNamespace, Name: appName},
			Reason:         reason, Message: reason + " on " + cluster, Type: corev1.EventTypeNormal, LastTimestamp: metav1.NewTime(at)}
		if err := createAll(t.Context(), clusterClient(cluster), ev); err != nil {
			t.Fatal(err)
		}
	}
	write(lab.West, "VolumeReplicationGroup", "SecondaryReady", base.Add(2*time.Second))
	write(lab.Hub, "DRPlacementControl", "ProtectionStarted", base)
	write(lab.East, "VolumeReplicationGroup", "PrimaryReady", base.Add(time.Second))
	var out bytes.Buffer
	if err := day2.Events(t.Context(), restConfig(lab.Hub), &out, day2.EventsOptions{Namespace: appNamespace, App: appName}); err != nil {
		t.Fatalf("events failed: %v", err)
	}
	text := out.String()
	hubAt := strings.Index(text, "ProtectionStarted on hub")
	eastAt := strings.Index(text, "PrimaryReady on east")
	westAt := strings.Index(text, "SecondaryReady on west")
	if hubAt < 0 || eastAt <= hubAt || westAt <= eastAt {
		t.Errorf("events are not merged oldest first:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "PrimaryReady") && !strings.Contains(line, " east ") {
			t.Errorf("the east event's line does not name its cluster: %q", line)
		}
	}
	checkEventList(t)
}

// checkEventList expects -o json to print the same events as a List, oldest first, each
// annotated with its cluster.
func checkEventList(t *testing.T) {
	var out bytes.Buffer
	o := day2.EventsOptions{Namespace: appNamespace, App: appName, Output: "json"}
	if err := day2.Events(t.Context(), restConfig(lab.Hub), &out, o); err != nil {
		t.Fatalf("events -o json failed: %v", err)
	}
	list := &corev1.EventList{}
	if err := json.Unmarshal(out.Bytes(), list); err != nil || list.Kind != "List" {
		t.Fatalf("events -o json is not a List (kind %q, %v):\n%s", list.Kind, err, out.String())
	}
	var order []string
	for _, ev := range list.Items {
		if strings.HasPrefix(ev.Name, "order-") {
			order = append(order, ev.Reason+"@"+ev.Annotations[day2.AnnotationEventCluster])
		}
	}
	want := []string{"ProtectionStarted@hub", "PrimaryReady@east", "SecondaryReady@west"}
	if !slices.Equal(order, want) {
		t.Errorf("events -o json = %v, want %v in that order", order, want)
	}
}

// TestAnUnreadableClusterKubeconfigIsAUsageError expects --cluster-kubeconfig naming a file
// that does not load to be refused as bad usage (exit 2), before anything is read.
func TestAnUnreadableClusterKubeconfigIsAUsageError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing.kubeconfig")
	o := day2.EventsOptions{Namespace: appNamespace, App: appName,
		Kubeconfigs: day2.ClusterKubeconfigs{lab.East: missing}}
	err := day2.Events(t.Context(), restConfig(lab.Hub), io.Discard, o)
	if code := cli.ExitCodeOf(err); code != cli.ExitUsage || !strings.Contains(fmt.Sprint(err), missing) {
		t.Fatalf("events with an unreadable --cluster-kubeconfig = exit %d (%v), want %d naming %s", code, err, cli.ExitUsage, missing)
	}
}
