package drpc

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
)

// Action results, the values of the result label.
const (
	ResultSucceeded = "Succeeded"
	ResultRunning   = "Running"
	ResultRefused   = "Refused"
	ResultOvertaken = "Overtaken"
)

// Metrics are the DRPlacementControls' metrics (docs/metrics.md). The gauges are computed at
// each scrape from the DRPlacementControls' status in the manager's cache, so they hold across a
// restarted hub, need no clean-up when a DRPlacementControl goes, and the RPO lag is as of the
// scrape, not of the last reconcile. The counters and the histogram count what this process saw
// happen. Labels are bounded: a DRPlacementControl's namespace and name, an action, a result, a
// phase or a step, never anything per sync or per record.
type Metrics struct {
	reader client.Reader
	now    func() time.Time

	actions        *prometheus.CounterVec
	hookRuns       *prometheus.CounterVec
	actionDuration *prometheus.HistogramVec

	lastSync, lag, lagIntervals, interval, protected, peerReady, validated *prometheus.Desc
	phase, progression, running, lastDuration, lastResult                  *prometheus.Desc
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the metrics of the DRPlacementControls that reader (the manager's cached
// client) holds.
func NewMetrics(reader client.Reader) *Metrics {
	drpc := []string{"namespace", "name"}
	d := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string{}, drpc...), extra...), nil)
	}
	m := &Metrics{
		reader: reader, now: time.Now,
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_actions_total",
			Help: "Failovers and relocations that ended, by action and result (Succeeded, Refused, Overtaken), as this hub saw them.",
		}, []string{"action", "result"}),
		actionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "drover_action_duration_seconds",
			Help:    "Time from a failover or relocation's start to the application available on its target (or to the failover that overtook a relocation).",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600},
		}, []string{"action", "result"}),
		hookRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_hook_runs_total",
			Help: "Runs of the applications' recipe hooks that ended, by result (Succeeded, Failed, Continued, PassedOver), as this hub saw them in the groups' status.",
		}, []string{"result"}),
		lastSync:     d("drover_drpc_last_group_sync_timestamp_seconds", "Time of the application's last group sync: every PVC of the primary synced at or after it (the recovery point of a failover now)."),
		lag:          d("drover_drpc_rpo_lag_seconds", "Seconds since the last group sync: the writes a failover now would lose."),
		lagIntervals: d("drover_drpc_rpo_lag_intervals", "The RPO lag as a multiple of the policy's scheduling interval; above 2 plus the storage's status refresh (status.syncRefreshInterval) as a multiple of the interval, the hub's Protected turns False (SyncStale)."),
		interval:     d("drover_drpc_schedule_interval_seconds", "The DRPolicy's schedulingInterval, the RPO target."),
		protected:    d("drover_drpc_protected", "1 while the Protected condition is True: data and metadata replicate within twice the interval plus the storage's status refresh."),
		peerReady:    d("drover_drpc_peer_ready", "1 while the PeerReady condition is True: the peer can take over."),
		validated:    d("drover_drpc_validated", "1 while the Validated condition is True; 0 while the hub does not act on the DRPlacementControl."),
		phase:        d("drover_drpc_phase", "1 for the DRPlacementControl's current phase (None before the hub acted).", "phase"),
		progression:  d("drover_drpc_progression", "1 for the current step of the phase.", "progression"),
		running:      d("drover_drpc_action_running_seconds", "Seconds since the failover or relocation in progress started.", "action"),
		lastDuration: d("drover_drpc_last_action_duration_seconds", "Duration of the last completed failover or relocation.", "action"),
		lastResult:   d("drover_drpc_last_action_result", "1 for the result of the action asked last: Running, Succeeded, or Refused while the hub refuses it (ActionAccepted False).", "action", "result"),
	}
	m.startAtZero()
	return m
}

// startAtZero creates the series of every action and result that can end, at 0: a counter or a
// histogram born at its first observation holds 1 at its first scrape, and rate() and
// increase() (the dashboard's panels) then never see that first failover. Only a relocation is
// overtaken (by a failover); a refused action has no duration.
func (m *Metrics) startAtZero() {
	ended := map[v1alpha1.DRAction][]string{
		v1alpha1.ActionFailover: {ResultSucceeded, ResultRefused},
		v1alpha1.ActionRelocate: {ResultSucceeded, ResultRefused, ResultOvertaken},
	}
	for _, result := range []v1alpha1.HookResult{v1alpha1.HookSucceeded, v1alpha1.HookFailed, v1alpha1.HookContinued, v1alpha1.HookPassedOver} {
		m.hookRuns.WithLabelValues(string(result))
	}
	for action, results := range ended {
		for _, result := range results {
			m.actions.WithLabelValues(string(action), result)
			if result != ResultRefused {
				m.actionDuration.WithLabelValues(string(action), result)
			}
		}
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.actions.Describe(ch)
	m.actionDuration.Describe(ch)
	m.hookRuns.Describe(ch)
	for _, d := range []*prometheus.Desc{m.lastSync, m.lag, m.lagIntervals, m.interval, m.protected, m.peerReady, m.validated,
		m.phase, m.progression, m.running, m.lastDuration, m.lastResult} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.actions.Collect(ch)
	m.actionDuration.Collect(ch)
	m.hookRuns.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1alpha1.DRPlacementControlList{}
	policies := &v1alpha1.DRPolicyList{}
	if err := m.reader.List(ctx, list); err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Failed to list DRPlacementControls for the metrics")
		return
	}
	if err := m.reader.List(ctx, policies); err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Failed to list DRPolicies for the metrics")
		return
	}
	intervals := map[string]time.Duration{}
	for _, p := range policies.Items {
		if d, err := p.Spec.SchedulingInterval.Duration(); err == nil {
			intervals[p.Name] = d
		}
	}
	now := m.now()
	for i := range list.Items {
		m.collectOne(ch, &list.Items[i], intervals[list.Items[i].Spec.DRPolicyRef.Name], now)
	}
}

// collectOne sends the gauges of one DRPlacementControl; interval 0 is unknown.
func (m *Metrics) collectOne(ch chan<- prometheus.Metric, d *v1alpha1.DRPlacementControl, interval time.Duration, now time.Time) {
	gauge := func(desc *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, append([]string{d.Namespace, d.Name}, extra...)...)
	}
	st := &d.Status
	if last := recoveryPoint(d); last != nil {
		lag := now.Sub(last.Time).Seconds()
		gauge(m.lastSync, float64(last.Unix()))
		gauge(m.lag, lag)
		if interval > 0 {
			gauge(m.lagIntervals, lag/interval.Seconds())
		}
	}
	if interval > 0 {
		gauge(m.interval, interval.Seconds())
	}
	gauge(m.protected, isTrue01(st.Conditions, v1alpha1.ConditionProtected))
	gauge(m.peerReady, isTrue01(st.Conditions, v1alpha1.ConditionPeerReady))
	gauge(m.validated, isTrue01(st.Conditions, v1alpha1.ConditionValidated))
	gauge(m.phase, 1, orNone(string(st.Phase)))
	gauge(m.progression, 1, orNone(st.Progression))
	action := string(actionOfPhase(st.Phase))
	if inActionPhase(st.Phase) && st.ActionStartTime != nil {
		gauge(m.running, now.Sub(st.ActionStartTime.Time).Seconds(), action)
	}
	if st.ActionDuration != nil && !inActionPhase(st.Phase) && action != string(v1alpha1.ActionNone) {
		gauge(m.lastDuration, st.ActionDuration.Seconds(), action)
	}
	if action, result := lastActionResult(d); result != "" {
		gauge(m.lastResult, 1, action, result)
	}
}

// recoveryPoint is the recovery point of a failover now: the DRPlacementControl's
// lastGroupSyncTime or, while the primary is unreachable or an action runs (which clear it),
// the last one the hub saw on the current primary's group. So the lag keeps growing while the
// primary is lost, the very time an alert must fire.
func recoveryPoint(d *v1alpha1.DRPlacementControl) *metav1.Time {
	if t := d.Status.LastGroupSyncTime; t != nil {
		return t
	}
	for i := range d.Status.VRGs {
		if s := &d.Status.VRGs[i]; s.Cluster == d.Status.CurrentPrimary {
			return s.LastGroupSyncTime
		}
	}
	return nil
}

// lastActionResult is the action asked last and its result, derived from the status alone (so
// a restarted hub reports the same): Refused while ActionAccepted is False for a reason other
// than an action in progress, Running during an action, Succeeded once it completed; empty
// when no action was ever asked.
func lastActionResult(d *v1alpha1.DRPlacementControl) (action, result string) {
	st := &d.Status
	if c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionActionAccepted); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason != v1alpha1.ReasonActionInProgress {
		return orNone(string(d.Spec.Action)), ResultRefused
	}
	switch {
	case inActionPhase(st.Phase):
		return string(actionOfPhase(st.Phase)), ResultRunning
	case st.ActionDuration != nil && actionOfPhase(st.Phase) != v1alpha1.ActionNone:
		return string(actionOfPhase(st.Phase)), ResultSucceeded
	}
	return "", ""
}

// actionEnded counts an action that ended and, when it ran, its duration.
func (m *Metrics) actionEnded(action v1alpha1.DRAction, result string, took time.Duration) {
	if m == nil {
		return
	}
	m.actions.WithLabelValues(string(action), result).Inc()
	if result != ResultRefused {
		m.actionDuration.WithLabelValues(string(action), result).Observe(took.Seconds())
	}
}

// hookEnded counts a hook's run that ended with result.
func (m *Metrics) hookEnded(result v1alpha1.HookResult) {
	if m == nil {
		return
	}
	m.hookRuns.WithLabelValues(string(result)).Inc()
}

// actionOfPhase is the action of an action's phase or of the settled phase it leads to.
func actionOfPhase(phase v1alpha1.DRPCPhase) v1alpha1.DRAction {
	switch phase {
	case v1alpha1.PhaseFailingOver, v1alpha1.PhaseFailedOver:
		return v1alpha1.ActionFailover
	case v1alpha1.PhaseRelocating, v1alpha1.PhaseRelocated:
		return v1alpha1.ActionRelocate
	}
	return v1alpha1.ActionNone
}

func inActionPhase(phase v1alpha1.DRPCPhase) bool {
	return phase == v1alpha1.PhaseFailingOver || phase == v1alpha1.PhaseRelocating
}

func isTrue01(conds []metav1.Condition, t string) float64 {
	if apimeta.IsStatusConditionTrue(conds, t) {
		return 1
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "None"
	}
	return s
}
