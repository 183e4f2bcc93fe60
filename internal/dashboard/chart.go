package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/drover-io/drover/internal/cli/status"
)

// The RPO-lag chart: drover's hub exports drover_drpc_rpo_lag_intervals per application; with
// --prometheus the application's page draws its last chartSpan from Prometheus's query_range
// API as an SVG the server renders, with the alert rules' thresholds (2 and 3 intervals).
const (
	chartSpan    = time.Hour
	chartStep    = 30 * time.Second
	chartWidth   = 600
	chartHeight  = 160
	chartTimeout = 10 * time.Second
	lagMetric    = "drover_drpc_rpo_lag_intervals"
)

// chart is the SVG's geometry: a polyline of the lag and the threshold lines.
type chart struct {
	Width, Height    int
	Points           string
	Warn, Crit       float64
	Max              string
	From, To, Latest string
	Samples          int
}

// lagChart queries the lag's history; with no --prometheus it returns a note saying so.
func (s *Server) lagChart(ctx context.Context, v status.AppView) (*chart, string) {
	if s.opts.Prometheus == "" {
		return nil, "History needs a Prometheus that scrapes drover's hub: start the dashboard with --prometheus URL to see the RPO lag of the last hour."
	}
	end := s.now()
	q := url.Values{}
	q.Set("query", fmt.Sprintf(`max(%s{namespace=%q,name=%q})`, lagMetric, v.DRPC.Namespace, v.DRPC.Name))
	q.Set("start", strconv.FormatInt(end.Add(-chartSpan).Unix(), 10))
	q.Set("end", strconv.FormatInt(end.Unix(), 10))
	q.Set("step", strconv.Itoa(int(chartStep.Seconds())))
	ctx, cancel := context.WithTimeout(ctx, chartTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(s.opts.Prometheus, "/")+"/api/v1/query_range?"+q.Encode(), nil)
	if err != nil {
		return nil, "The Prometheus URL is not usable: " + err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "Failed to query Prometheus: " + err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		return nil, fmt.Sprintf("Prometheus answered %s without a usable result (%v%s)", resp.Status, err, body.Error)
	}
	if len(body.Data.Result) == 0 || len(body.Data.Result[0].Values) == 0 {
		return nil, "Prometheus has no " + lagMetric + " for this application in the last hour: does it scrape drover's hub?"
	}
	return drawChart(body.Data.Result[0].Values, end), ""
}

// drawChart scales the samples ([unix seconds, "value"]) to the SVG: time across, intervals
// up, at least 4 intervals high so the thresholds always show.
func drawChart(values [][2]any, end time.Time) *chart {
	type sample struct{ t, v float64 }
	var ss []sample
	top := 4.0
	for _, p := range values {
		t, _ := p[0].(float64)
		str, _ := p[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			continue
		}
		ss = append(ss, sample{t, v})
		top = max(top, v*1.1)
	}
	c := &chart{Width: chartWidth, Height: chartHeight, Samples: len(ss), Max: strconv.FormatFloat(top, 'f', 1, 64),
		From: end.Add(-chartSpan).UTC().Format(time.TimeOnly), To: end.UTC().Format(time.TimeOnly) + " UTC"}
	y := func(v float64) float64 { return float64(chartHeight) * (1 - v/top) }
	c.Warn, c.Crit = y(2), y(3)
	start := float64(end.Add(-chartSpan).Unix())
	var pts []string
	for _, s := range ss {
		x := (s.t - start) / chartSpan.Seconds() * chartWidth
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y(s.v)))
	}
	c.Points = strings.Join(pts, " ")
	if len(ss) > 0 {
		c.Latest = strconv.FormatFloat(ss[len(ss)-1].v, 'f', 2, 64)
	}
	return c
}
