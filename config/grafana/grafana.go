// Package grafana holds drover's Grafana dashboard, drover.json: the fleet's state, the RPO lag
// of each application against its policy's interval with the sync-delay alert's thresholds,
// the failovers and relocations and their durations, the drills' RTO and RPO, and the S3
// stores' write errors and sealing, over the metrics of docs/metrics.md. Its tests check that
// every query names metrics drover exports; `make test-monitoring` evaluates every query against
// a real Prometheus scraping the lab (internal/lab, -tags monitoring).
package grafana

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// Dashboard is drover.json, the dashboard to import into Grafana (or to provision from a file).
//
//go:embed drover.json
var Dashboard []byte

// Query is one query of a panel of the dashboard.
type Query struct {
	// Panel is the panel's title, RefID the query's within the panel.
	Panel, RefID string
	// Expr is the PromQL, with Grafana's variables ($namespace, $__rate_interval...).
	Expr string
	// Instant is set for a query Grafana evaluates at the dashboard's end time only.
	Instant bool
}

// Panel is what the package reads of a dashboard panel.
type Panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID   string `json:"refId"`
		Expr    string `json:"expr"`
		Instant bool   `json:"instant"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Thresholds struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Panels []Panel `json:"panels"`
}

// Panels returns the dashboard's panels in order, those inside rows included, rows left out.
func Panels() ([]Panel, error) {
	var d struct {
		Panels []Panel `json:"panels"`
	}
	if err := json.Unmarshal(Dashboard, &d); err != nil {
		return nil, fmt.Errorf("failed to parse drover.json: %w", err)
	}
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out, nil
}

// Queries returns every query of every panel, in the dashboard's order.
func Queries() ([]Query, error) {
	panels, err := Panels()
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, p := range panels {
		for _, t := range p.Targets {
			out = append(out, Query{Panel: p.Title, RefID: t.RefID, Expr: t.Expr, Instant: t.Instant})
		}
	}
	return out, nil
}
