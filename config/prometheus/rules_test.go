package prometheus_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/drover-io/drover/internal/modroot"
)

// TestThePrometheusRuleHoldsTheRulesFile keeps the two forms of the rules one source: the
// PrometheusRule's spec.groups must be the plain rules file's groups.
func TestThePrometheusRuleHoldsTheRulesFile(t *testing.T) {
	var plain struct {
		Groups []any `json:"groups"`
	}
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	read(t, "rules.yaml", &plain)
	read(t, "prometheusrule.yaml", &rule)
	if rule.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml is a %q, want a PrometheusRule", rule.Kind)
	}
	if len(plain.Groups) == 0 {
		t.Fatal("rules.yaml has no groups")
	}
	if !reflect.DeepEqual(plain.Groups, rule.Spec.Groups) {
		t.Error("prometheusrule.yaml's spec.groups differ from rules.yaml's groups: copy rules.yaml's groups into it")
	}
}

// TestTheAlertsFireWhenTheyShouldStaySilentOtherwiseAndClear runs promtool (bin/promtool,
// built by make tools) on the rules and on the unit tests of tests/: each alert fires on a
// series that should page, stays silent on a healthy series and clears when the series recovers.
func TestTheAlertsFireWhenTheyShouldStaySilentOtherwiseAndClear(t *testing.T) {
	root, err := modroot.Find()
	if err != nil {
		t.Fatal(err)
	}
	promtool := filepath.Join(root, "bin", "promtool")
	if _, err := os.Stat(promtool); err != nil {
		t.Fatalf("promtool is missing: run `make tools` (it builds bin/promtool from hack/tools/promtool): %v", err)
	}
	tests, err := filepath.Glob("tests/*.yaml")
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool unit tests in tests/: %v", err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, append([]string{"test", "rules"}, tests...)} {
		out, err := exec.CommandContext(t.Context(), promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

func read(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("failed to parse %s: %v", file, err)
	}
}
