package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAuditClientNamesTheUserAndTheProgramWithTheControllerClientGoAppends(t *testing.T) {
	for _, tc := range []struct{ user, agent, want string }{
		{"admin", "kube-controller-manager/v1.33.1 (linux/amd64) kubernetes/8adc0f0/persistent-volume-binder", "admin kube-controller-manager/persistent-volume-binder"},
		{"system:serviceaccount:drover-system:drover-agent", "drover/v0.0.0 (linux/amd64) kubernetes/$Format", "system:serviceaccount:drover-system:drover-agent drover"},
		{"admin", "kubectl/v1.33.1 (linux/amd64) kubernetes/8adc0f0", "admin kubectl"},
		{"admin", "curl/8.5.0", "admin curl"},
		{"admin", "", "admin (no user agent)"},
	} {
		if got := auditClient(tc.user, tc.agent); got != tc.want {
			t.Errorf("auditClient(%q, %q) = %q, want %q", tc.user, tc.agent, got, tc.want)
		}
	}
}

func TestAuditCountsCountsCompletedRequestsInTheWindowByClientVerbAndResource(t *testing.T) {
	event := func(stage, verb, resource, sub, at string) string {
		ref := `"objectRef":{"resource":"` + resource + `","subresource":"` + sub + `"},`
		if resource == "" {
			ref = ""
		}
		return `{"kind":"Event","stage":"` + stage + `","verb":"` + verb + `",` + ref +
			`"user":{"username":"admin"},"userAgent":"probe/1.0","requestReceivedTimestamp":"` + at + `"}`
	}
	lines := []string{
		event("ResponseComplete", "list", "persistentvolumeclaims", "", "2026-12-02T04:00:01.000000Z"),
		event("ResponseComplete", "list", "persistentvolumeclaims", "", "2026-12-02T04:00:02.000000Z"),
		event("ResponseComplete", "patch", "volumereplicationgroups", "status", "2026-12-02T04:00:03.000000Z"),
		event("ResponseComplete", "get", "", "", "2026-12-02T04:00:04.000000Z"),
		// Not counted: another stage, before the window, at its end, and a line that is not JSON.
		event("ResponseStarted", "watch", "pods", "", "2026-12-02T04:00:02.000000Z"),
		event("ResponseComplete", "list", "persistentvolumeclaims", "", "2026-12-02T03:59:59.999999Z"),
		event("ResponseComplete", "list", "persistentvolumeclaims", "", "2026-12-02T04:00:10.000000Z"),
		`{"kind":"Event","stage":"ResponseComp`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	got, err := AuditCounts(path, from, from.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := []AuditCount{
		{Client: "admin probe", Verb: "list", Resource: "persistentvolumeclaims", N: 2},
		{Client: "admin probe", Verb: "get", Resource: "(non-resource)", N: 1},
		{Client: "admin probe", Verb: "patch", Resource: "volumereplicationgroups/status", N: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	var table strings.Builder
	if err := WriteAuditTop(&table, got, 10*time.Second, 1); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"0.2", "list", "(2 more rows)", "4 "} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("the table lacks %q:\n%s", line, table.String())
		}
	}
}

func TestAuditCountsWithoutALogSaysHowToTurnAuditingOn(t *testing.T) {
	_, err := AuditCounts(filepath.Join(t.TempDir(), "none.log"), time.Now(), time.Now())
	if err == nil || !strings.Contains(err.Error(), "--audit") {
		t.Fatalf("want an error naming --audit, got %v", err)
	}
}

func TestAuditTraceKeepsOneNamespacesRequestsAndMergesClustersInOrder(t *testing.T) {
	event := func(verb, resource, ns, name, user, at, done string, code int) string {
		return fmt.Sprintf(`{"kind":"Event","stage":"ResponseComplete","verb":%q,"objectRef":{"resource":%q,"namespace":%q,"name":%q},`+
			`"user":{"username":%q},"userAgent":"drover/v0.0.0 (linux/amd64) kubernetes/$Format","responseStatus":{"code":%d},`+
			`"requestReceivedTimestamp":%q,"stageTimestamp":%q}`, verb, resource, ns, name, user, code, at, done)
	}
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	hub := write("hub.log",
		event("patch", "volumereplicationgroups", "app", "db", "hub", "2026-12-02T04:00:01.000Z", "2026-12-02T04:00:01.020Z", 200),
		event("patch", "volumereplicationgroups", "other", "db", "hub", "2026-12-02T04:00:01.500Z", "2026-12-02T04:00:01.510Z", 200))
	west := write("west.log",
		event("create", "namespaces", "", "app", "agent", "2026-12-02T04:00:00.500Z", "2026-12-02T04:00:00.505Z", 409),
		event("get", "namespaces", "", "other", "agent", "2026-12-02T04:00:00.600Z", "2026-12-02T04:00:00.601Z", 200),
		event("create", "statefulsets", "app", "db", "agent", "2026-12-02T04:00:02.000Z", "2026-12-02T04:00:02.100Z", 201))
	from := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	var reqs []AuditRequest
	for _, c := range []struct{ name, path string }{{"hub", hub}, {"west", west}} {
		got, err := AuditTrace(c.name, c.path, "app", from, from.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, got...)
	}
	if len(reqs) != 3 {
		t.Fatalf("want the namespace's create, the group's patch and the StatefulSet's create; got %+v", reqs)
	}
	var table strings.Builder
	if err := WriteAuditTrace(&table, reqs, from); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	want := []string{"0.500s  west", "1.000s  hub", "2.000s  west"}
	if len(lines) != 1+len(want) {
		t.Fatalf("want a header and %d rows:\n%s", len(want), table.String())
	}
	for i, prefix := range want {
		if !strings.HasPrefix(lines[i+1], prefix) {
			t.Errorf("row %d = %q, want it to start with %q", i, lines[i+1], prefix)
		}
	}
	for _, s := range []string{"409", "20ms", "100ms", "statefulsets", "agent drover"} {
		if !strings.Contains(table.String(), s) {
			t.Errorf("the trace lacks %q:\n%s", s, table.String())
		}
	}
}
