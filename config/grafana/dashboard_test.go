package grafana_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/config/grafana"
	"github.com/drover-io/drover/internal/agent/vrg"
	"github.com/drover-io/drover/internal/hub/drcluster"
	"github.com/drover-io/drover/internal/hub/drill"
	"github.com/drover-io/drover/internal/hub/drpc"
	"github.com/drover-io/drover/internal/modroot"
	"github.com/drover-io/drover/internal/objectstore"
)

// exported returns the names of the metrics drover's collectors describe: the hub's and the
// agent's, as the managers register them (internal/hub, internal/agent).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	collectors := []prometheus.Collector{
		drpc.NewMetrics(nil), drill.NewMetrics(nil), drcluster.NewMetrics(nil),
		vrg.NewMetrics(nil, "east"), objectstore.NewSealMetrics(prometheus.Labels{"cluster": "east"}),
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 64)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read the name of %s", d)
			}
			names[m[1]] = true
		}
	}
	return names
}

// documented returns the metrics of docs/metrics.md's tables and their types.
func documented(t *testing.T) map[string]string {
	t.Helper()
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(drover_[a-z0-9_]+)` \\| (gauge|counter|histogram) \\|")
	types := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		types[m[1]] = m[2]
	}
	return types
}

// TestDocsMetricsListsEveryMetricDroverExports keeps docs/metrics.md the list of drover's
// metrics, which the dashboard's test reads.
func TestDocsMetricsListsEveryMetricDroverExports(t *testing.T) {
	names, docs := exported(t), documented(t)
	for n := range names {
		if docs[n] == "" {
			t.Errorf("docs/metrics.md does not list %s, which drover exports", n)
		}
	}
	for n := range docs {
		if !names[n] {
			t.Errorf("docs/metrics.md lists %s, which drover does not export", n)
		}
	}
	t.Logf("drover exports the %d metrics docs/metrics.md lists", len(names))
}

// metricName matches the names of drover's series in an expression.
var metricName = regexp.MustCompile(`\bdrover_[a-z0-9_]+`)

// TestEveryQueryOfTheDashboardNamesMetricsDroverExports: every query names at least one of
// drover's metrics, and each drover_ name in it is a metric docs/metrics.md lists (a histogram's
// series are its name with _bucket, _sum or _count).
func TestEveryQueryOfTheDashboardNamesMetricsDroverExports(t *testing.T) {
	docs := documented(t)
	series := map[string]bool{}
	for n, typ := range docs {
		series[n] = typ != "histogram"
		if typ == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				series[n+s] = true
			}
		}
	}
	queries, err := grafana.Queries()
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, q := range queries {
		names := metricName.FindAllString(q.Expr, -1)
		if len(names) == 0 {
			t.Errorf("panel %q query %s names no metric of drover's: %s", q.Panel, q.RefID, q.Expr)
		}
		for _, n := range names {
			if !series[n] {
				t.Errorf("panel %q query %s names %s, which is not a series of a metric docs/metrics.md lists", q.Panel, q.RefID, n)
			}
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] = true
		}
	}
	var unused []string
	for n := range docs {
		if !used[n] {
			unused = append(unused, n)
		}
	}
	slices.Sort(unused)
	t.Logf("%d queries name %d of drover's %d metrics; not drawn: %s", len(queries), len(used), len(docs), strings.Join(unused, ", "))
}

// TestTheRPOPanelDrawsTheSyncDelayAlertsThresholds: the lag panel's threshold lines are the
// DroverSyncDelay rules' thresholds of config/prometheus/rules.yaml.
func TestTheRPOPanelDrawsTheSyncDelayAlertsThresholds(t *testing.T) {
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil {
		t.Fatal(err)
	}
	threshold := regexp.MustCompile(`^drover_drpc_rpo_lag_intervals >=? ([0-9.]+)$`)
	var want []float64
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if m := threshold.FindStringSubmatch(r.Expr); r.Alert == "DroverSyncDelay" && m != nil {
				v, _ := strconv.ParseFloat(m[1], 64)
				want = append(want, v)
			}
		}
	}
	if len(want) != 2 {
		t.Fatalf("rules.yaml has %d DroverSyncDelay rules on drover_drpc_rpo_lag_intervals, want the warning and the critical", len(want))
	}
	panels, err := grafana.Panels()
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, p := range panels {
		if p.Title == "RPO lag (intervals)" {
			for _, s := range p.FieldConfig.Defaults.Thresholds.Steps {
				if s.Value != nil {
					got = append(got, *s.Value)
				}
			}
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the panel \"RPO lag (intervals)\" draws thresholds %v, want DroverSyncDelay's %v", got, want)
	}
}

// TestThePanelsAreWellFormed: unique ids, a title and a description, the datasource variable,
// queries with distinct refIds.
func TestThePanelsAreWellFormed(t *testing.T) {
	panels, err := grafana.Panels()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]string{}
	var titles []string
	for _, p := range panels {
		titles = append(titles, p.Title)
		if prev, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Title == "" || p.Description == "" {
			t.Errorf("panel %d has no title or no description", p.ID)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not query the dashboard's datasource variable", p.Title)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if q.RefID == "" || refs[q.RefID] || strings.TrimSpace(q.Expr) == "" {
				t.Errorf("panel %q has a query without an expression or with a missing or repeated refId %q", p.Title, q.RefID)
			}
			refs[q.RefID] = true
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
	}
	t.Logf("%d panels: %s", len(panels), strings.Join(titles, "; "))
}
