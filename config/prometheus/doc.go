// Package prometheus holds drover's alert rules: rules.yaml (a plain Prometheus rules file)
// and prometheusrule.yaml (the same groups as a PrometheusRule of the Prometheus Operator). Its
// tests check that the two match and unit-test every alert with promtool, built into bin/ by
// `make tools`. docs/metrics.md describes the metrics and the alerts.
package prometheus
