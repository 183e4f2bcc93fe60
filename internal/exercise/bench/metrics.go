package bench

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/drover-io/drover/internal/lab"
)

// snapshot is one scrape of a /metrics endpoint, by metric name.
type snapshot map[string]*dto.MetricFamily

func parse(text string) (snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("failed to parse metrics: %w", err)
	}
	return fams, nil
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// counter sums the counter name over the series match selects.
func (s snapshot) counter(name string, match func(map[string]string) bool) float64 {
	return s.sum(name, match, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// gauge sums the gauge name over the series match selects.
func (s snapshot) gauge(name string, match func(map[string]string) bool) float64 {
	return s.sum(name, match, func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
}

func (s snapshot) sum(name string, match func(map[string]string) bool, value func(*dto.Metric) float64) float64 {
	total := 0.0
	if f := s[name]; f != nil {
		for _, m := range f.GetMetric() {
			if match(labelsOf(m)) {
				total += value(m)
			}
		}
	}
	return total
}

// reconcileTime is controller-runtime's histogram of reconcile durations.
const reconcileTime = "controller_runtime_reconcile_time_seconds"

// reconcileBuckets sums the reconcile-time histogram's cumulative buckets over the series match
// selects, by upper bound; +Inf holds the count.
func (s snapshot) reconcileBuckets(match func(map[string]string) bool) map[float64]float64 {
	return s.buckets(reconcileTime, match)
}

// buckets sums histogram name's cumulative buckets over the series match selects, by upper
// bound; +Inf holds the count.
func (s snapshot) buckets(name string, match func(map[string]string) bool) map[float64]float64 {
	out := map[float64]float64{}
	if f := s[name]; f != nil {
		for _, m := range f.GetMetric() {
			if !match(labelsOf(m)) {
				continue
			}
			for _, b := range m.GetHistogram().GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) {
					out[b.GetUpperBound()] += float64(b.GetCumulativeCount())
				}
			}
			out[math.Inf(1)] += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return out
}

// histogramTotals sums histogram name's observations and their count over the series match
// selects.
func (s snapshot) histogramTotals(name string, match func(map[string]string) bool) (sum, count float64) {
	if f := s[name]; f != nil {
		for _, m := range f.GetMetric() {
			if match(labelsOf(m)) {
				sum += m.GetHistogram().GetSampleSum()
				count += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum, count
}

// histogramQuantile is the q quantile of the observations between two scrapes of a histogram, by linear
// interpolation inside the bucket it falls in (as Prometheus's histogram_quantile); 0 when
// nothing was observed. An observation beyond the last finite bound reports that bound.
func histogramQuantile(q float64, before, after map[float64]float64) float64 {
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0
	}
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return 0
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, b := range bounds {
		c := after[b] - before[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return prevBound
			}
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	return prevBound
}

// probe reads the lab's metrics: the API servers' as the administrator, drover's with a metrics
// reader's token per cluster.
type probe struct {
	l      *lab.Lab
	tokens map[string]string
}

func (p *probe) cluster(name string) (*lab.Cluster, error) { return p.l.Cluster(name) }

func (p *probe) apiServer(ctx context.Context, name string) (snapshot, error) {
	c, err := p.cluster(name)
	if err != nil {
		return nil, err
	}
	text, err := c.APIServerMetrics(ctx)
	if err != nil {
		return nil, err
	}
	return parse(text)
}

func (p *probe) drover(ctx context.Context, name string) (snapshot, error) {
	c, err := p.cluster(name)
	if err != nil {
		return nil, err
	}
	if p.tokens == nil {
		p.tokens = map[string]string{}
	}
	if p.tokens[name] == "" {
		if p.tokens[name], err = c.MetricsReaderToken(ctx); err != nil {
			return nil, err
		}
	}
	text, err := c.DroverMetrics(ctx, p.tokens[name])
	if err != nil {
		return nil, err
	}
	return parse(text)
}

// scrapeWait bounds how long droverReady waits for a drover pod to be Ready.
const scrapeWait = 2 * time.Minute

// droverReady is drover, waiting up to scrapeWait for the pod to be Ready: east's agent
// restarted with its cluster, and a run whose last steps took seconds (N = 1) can end before
// its readiness probe passed ("has no Ready pod to scrape", seen in a bench run).
func (p *probe) droverReady(ctx context.Context, name string) (snapshot, error) {
	deadline := time.Now().Add(scrapeWait)
	for {
		s, err := p.drover(ctx, name)
		if err == nil || time.Now().After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (p *probe) rss(name string) (int64, error) {
	c, err := p.cluster(name)
	if err != nil {
		return 0, err
	}
	return c.DroverRSS()
}

// writeVerbs are the API server's request verbs that change something.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true, "DELETECOLLECTION": true}

// isWrite selects the API server's write requests, of group when it is not empty.
func isWrite(group string) func(map[string]string) bool {
	return func(l map[string]string) bool {
		return writeVerbs[l["verb"]] && (group == "" || l["group"] == group)
	}
}

// reconcileOf selects the reconcile-time series of one controller.
func reconcileOf(controller string) func(map[string]string) bool {
	return func(l map[string]string) bool { return l["controller"] == controller }
}
