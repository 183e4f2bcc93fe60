package cluster

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
	"github.com/drover-io/drover/internal/cli/clitest"
)

func TestClusterListPrintsEachClusterInEveryFormat(t *testing.T) {
	e := clitest.NewEnv(t, "clusters")
	e.SetReachable(t, e.West, false)
	var out bytes.Buffer
	if err := List(t.Context(), clitest.Hub, &out, ListOptions{Now: clitest.ClockAt}); err != nil {
		t.Fatalf("cluster list failed: %v", err)
	}
	clitest.MustContain(t, out.String(), "NAME", "VALIDATED  REACHABLE  LOST  POLICIES")
	lines := map[string]string{}
	for _, l := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = strings.Join(f, " ")
		}
	}
	if !strings.HasPrefix(lines[e.East], e.East+" Unknown True - clusters") || !strings.HasPrefix(lines[e.West], e.West+" Unknown False - clusters") {
		t.Errorf("cluster list printed:\n%s", out.String())
	}

	out.Reset()
	if err := List(t.Context(), clitest.Hub, &out, ListOptions{Output: "wide", Now: clitest.ClockAt}); err != nil {
		t.Fatal(err)
	}
	clitest.MustContain(t, out.String(), "S3 PROFILE", "s3-"+e.West, "Reachable: unreachable since 12:03:55: connection refused")

	out.Reset()
	if err := List(t.Context(), clitest.Hub, &out, ListOptions{Output: "name"}); err != nil {
		t.Fatal(err)
	}
	clitest.MustContain(t, out.String(), "drcluster.drover.io/"+e.East+"\n", "drcluster.drover.io/"+e.West+"\n")

	for _, format := range []string{"json", "yaml"} {
		out.Reset()
		if err := List(t.Context(), clitest.Hub, &out, ListOptions{Output: format}); err != nil {
			t.Fatal(err)
		}
		raw := out.Bytes()
		if format == "yaml" {
			var err error
			if raw, err = yaml.YAMLToJSON(raw); err != nil {
				t.Fatal(err)
			}
		}
		var list struct {
			APIVersion, Kind string
			Items            []v1alpha1.DRCluster
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			t.Fatalf("-o %s printed no list: %v", format, err)
		}
		if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) < 2 || list.Items[0].Kind != "DRCluster" {
			t.Errorf("-o %s printed apiVersion %q kind %q, %d items", format, list.APIVersion, list.Kind, len(list.Items))
		}
	}
	if err := List(t.Context(), clitest.Hub, &out, ListOptions{Output: "table"}); cli.ExitCodeOf(err) != cli.ExitUsage {
		t.Errorf("an unknown format: exit %d, %v", cli.ExitCodeOf(err), err)
	}
}
