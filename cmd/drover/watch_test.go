//go:build linux

package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/lab/labtest"
)

// waitFor waits until out matches re; the bound only ends a test that would hang.
func waitFor(t *testing.T, out *labtest.SyncBuffer, re *regexp.Regexp) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if re.MatchString(out.String()) {
			return
		}
	}
	t.Fatalf("the output never matched %s:\n%s", re, out.String())
}

// TestStatusWatchPrintsEachChange runs status -w against a real API server: the table first,
// then a row for each change of a DRPlacementControl and for a new one, until interrupted.
func TestStatusWatchPrintsEachChange(t *testing.T) {
	h := startSafetyHub(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &labtest.SyncBuffer{}
	done := make(chan int)
	go func() {
		root := newRootCommand()
		root.SetOut(out)
		root.SetErr(out)
		done <- run(ctx, root, []string{"status", "-w", "--kubeconfig", h.kubeconfig}, out)
	}()
	waitFor(t, out, regexp.MustCompile(`(?m)^APP +PHASE .*\n^db +Deployed +east `))

	d := &v1alpha1.DRPlacementControl{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: "app", Name: "db"}, d); err != nil {
		t.Fatal(err)
	}
	d.Status.Progression = "WatchedStep"
	if err := h.c.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, regexp.MustCompile(`(?m)^db +Deployed +east .* WatchedStep `))
	web := &v1alpha1.DRPlacementControl{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"}, Spec: v1alpha1.DRPlacementControlSpec{
		DRPolicyRef: v1alpha1.PolicyReference{Name: "east-west"}, PreferredCluster: "east", ProtectedNamespaces: []string{"web"}}}
	if err := h.c.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	waitFor(t, out, regexp.MustCompile(`(?m)^web +- +- `))
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Errorf("status -w interrupted: exit %d:\n%s", code, out.String())
	}
	if n := strings.Count(out.String(), "APP "); n != 1 {
		t.Errorf("the header is printed %d times, want once:\n%s", n, out.String())
	}
}

// TestCompletionNamesTheHubsObjects completes applications, clusters and policies from the
// hub, as the shells ask through cobra's __complete.
func TestCompletionNamesTheHubsObjects(t *testing.T) {
	h := startSafetyHub(t)
	kc := []string{"--kubeconfig", h.kubeconfig}
	for _, name := range []string{"db-aaaaa", "db-bbbbb"} {
		if err := h.c.Create(t.Context(), &v1alpha1.DRDrill{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app"},
			Spec: v1alpha1.DRDrillSpec{DRPCName: "db"}}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"drill completes the applications", append([]string{"drill"}, append(kc, "")...), "db"},
		{"drill history completes the applications", append([]string{"drill", "history"}, append(kc, "")...), "db"},
		{"drill report's second argument is a drill of the application", append([]string{"drill", "report", "db"}, append(kc, "db-b")...), "db-bbbbb"},
		{"drill --to completes the clusters", append(append([]string{"drill", "db"}, kc...), "--to", "w"), "west"},
		{"drill report --format", append(append([]string{"drill", "report", "db"}, kc...), "--format", ""), "markdown\ntext"},
		{"status completes the applications of the namespace", append([]string{"status"}, append(kc, "")...), "db"},
		{"an application's prefix", append([]string{"failover"}, append(kc, "d")...), "db"},
		{"--to completes the clusters", append(append([]string{"failover", "db"}, kc...), "--to", ""), "east\nnorth\nwest"},
		{"--policy completes the policies", append(append([]string{"protect", "web"}, kc...), "--policy", ""), "east-west"},
		{"--cluster completes the clusters", append(append([]string{"protect", "web"}, kc...), "--cluster", "w"), "west"},
		{"plan's first argument is the action", []string{"plan", ""}, "failover\nrelocate"},
		{"plan's second is the application", append([]string{"plan", "relocate"}, append(kc, "")...), "db"},
		{"cluster lost completes the clusters", append([]string{"cluster", "lost"}, append(kc, "")...), "east\nnorth\nwest"},
		{"nothing after the application", append([]string{"status", "db"}, append(kc, "")...), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := droverIO(t, append([]string{"__complete"}, tc.args...)...)
			// The lines before the directive (":4"), but the required flags cobra suggests.
			var names []string
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, ":") {
					break
				}
				if !strings.HasPrefix(l, "--") {
					names = append(names, l)
				}
			}
			if code != cli.ExitOK || strings.Join(names, "\n") != tc.want {
				t.Errorf("drover __complete %s: exit %d, completed %q, want %q\n%s", strings.Join(tc.args, " "), code, names, tc.want, stderr)
			}
		})
	}
}
