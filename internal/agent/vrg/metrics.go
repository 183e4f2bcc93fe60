package vrg

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/objectstore"
)

// Metrics are the agent's metrics of its VolumeReplicationGroups (docs/metrics.md). The gauges
// are computed at each scrape from the groups' status in the manager's cache; the S3 counters
// count this process's writes. Every metric carries the constant label cluster (the agent's
// --cluster-name), so two agents' metrics never mix. Labels are bounded: a group's namespace
// and name, a PVC's namespace and name, an S3 profile, an error reason.
type Metrics struct {
	reader client.Reader

	writes, writeErrors, hookRuns *prometheus.CounterVec
	phases                        *prometheus.HistogramVec

	groupSync, protectedPVCs, primary, stalePrimary, pvcSync, pvcDuration, pvcBytes *prometheus.Desc
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the metrics of the groups that reader (the manager's cached client) holds,
// on the cluster named cluster.
func NewMetrics(reader client.Reader, cluster string) *Metrics {
	constLabels := prometheus.Labels{"cluster": cluster}
	group := []string{"namespace", "name"}
	pvc := []string{"namespace", "name", "pvc_namespace", "pvc"}
	return &Metrics{
		reader: reader,
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_s3_writes_total", ConstLabels: constLabels,
			Help: "Writes (puts and deletes) of PV/PVC metadata, captured objects and primary markers to an S3 profile.",
		}, []string{"profile"}),
		writeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_s3_write_errors_total", ConstLabels: constLabels,
			Help: "Writes to an S3 profile that failed, by the reason drover gives in its conditions (StoreUnreachable, StoreUnauthorized, ...).",
		}, []string{"profile", "reason"}),
		hookRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_hook_runs_total", ConstLabels: constLabels,
			Help: "Ended runs of a recipe's hooks by the group, hook, point and result (Succeeded, Failed, Continued, PassedOver).",
		}, []string{"namespace", "name", "hook", "point", "result"}),
		phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "drover_vrg_phase_duration_seconds", ConstLabels: constLabels,
			Help:    "Time one phase of a pass over a group took (parseSpec, restorePVCs, protectMetadata, ..., and status: the status patch), to find where the workers spend their time.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"phase"}),
		groupSync: prometheus.NewDesc("drover_vrg_last_group_sync_timestamp_seconds",
			"Time of the group's last group sync: the oldest of its PVCs' last syncs or, with no PVC selected, the last capture of its objects that every store holds (status.lastGroupSyncTime).", group, constLabels),
		protectedPVCs: prometheus.NewDesc("drover_vrg_protected_pvcs",
			"PVCs the group protects here (status.protectedPVCs).", group, constLabels),
		primary: prometheus.NewDesc("drover_vrg_primary",
			"1 while the group is Primary on this cluster, 0 otherwise.", group, constLabels),
		stalePrimary: prometheus.NewDesc("drover_vrg_stale_primary",
			"1 while the group is a stale primary: a store holds a newer primary's marker (the store fence), so it writes nothing until the hub demotes it.", group, constLabels),
		pvcSync: prometheus.NewDesc("drover_vrg_pvc_last_sync_timestamp_seconds",
			"Time of a PVC's last completed sync, as its backend reports it.", pvc, constLabels),
		pvcDuration: prometheus.NewDesc("drover_vrg_pvc_last_sync_duration_seconds",
			"Duration of a PVC's last sync, where the backend reports it.", pvc, constLabels),
		pvcBytes: prometheus.NewDesc("drover_vrg_pvc_last_sync_bytes",
			"Bytes a PVC's last sync transferred, where the backend reports them.", pvc, constLabels),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.writes.Describe(ch)
	m.writeErrors.Describe(ch)
	m.hookRuns.Describe(ch)
	m.phases.Describe(ch)
	for _, d := range []*prometheus.Desc{m.groupSync, m.protectedPVCs, m.primary, m.stalePrimary, m.pvcSync, m.pvcDuration, m.pvcBytes} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.writes.Collect(ch)
	m.writeErrors.Collect(ch)
	m.hookRuns.Collect(ch)
	m.phases.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1alpha1.VolumeReplicationGroupList{}
	if err := m.reader.List(ctx, list); err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Failed to list VolumeReplicationGroups for the metrics")
		return
	}
	for i := range list.Items {
		m.collectOne(ch, &list.Items[i])
	}
}

func (m *Metrics) collectOne(ch chan<- prometheus.Metric, vrg *v1alpha1.VolumeReplicationGroup) {
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	st := &vrg.Status
	if st.LastGroupSyncTime != nil {
		gauge(m.groupSync, float64(st.LastGroupSyncTime.Unix()), vrg.Namespace, vrg.Name)
	}
	gauge(m.protectedPVCs, float64(len(st.ProtectedPVCs)), vrg.Namespace, vrg.Name)
	gauge(m.primary, boolValue(st.State == v1alpha1.StatePrimary), vrg.Namespace, vrg.Name)
	c := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionClusterDataProtected)
	gauge(m.stalePrimary, boolValue(c != nil && c.Reason == v1alpha1.ReasonStalePrimary), vrg.Namespace, vrg.Name)
	for _, p := range st.ProtectedPVCs {
		labels := []string{vrg.Namespace, vrg.Name, p.Namespace, p.Name}
		if p.LastSyncTime != nil {
			gauge(m.pvcSync, float64(p.LastSyncTime.Unix()), labels...)
		}
		if p.LastSyncDuration != nil {
			gauge(m.pvcDuration, p.LastSyncDuration.Seconds(), labels...)
		}
		if p.LastSyncBytes != nil {
			gauge(m.pvcBytes, float64(*p.LastSyncBytes), labels...)
		}
	}
}

// observePhase records how long one phase of a pass took; nil Metrics records nothing.
// countHook counts an ended run of a hook.
func (m *Metrics) countHook(vrg *v1alpha1.VolumeReplicationGroup, run v1alpha1.HookRun) {
	if m == nil {
		return
	}
	m.hookRuns.WithLabelValues(vrg.Namespace, vrg.Name, run.Name, string(run.Point), string(run.Result)).Inc()
}

func (m *Metrics) observePhase(name string, d time.Duration) {
	if m == nil {
		return
	}
	m.phases.WithLabelValues(name).Observe(d.Seconds())
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// countWrites wraps a store so that its writes are counted; nil Metrics counts nothing.
func (m *Metrics) countWrites(s objectstore.Store) objectstore.Store {
	if m == nil {
		return s
	}
	return &meteredStore{Store: s, m: m}
}

// meteredStore counts the writes of a Store (Put, PutIf, Delete, DeletePrefix) and their errors.
type meteredStore struct {
	objectstore.Store
	m *Metrics
}

func (s *meteredStore) count(err error) error {
	s.m.writes.WithLabelValues(s.Name()).Inc()
	if err != nil {
		reason := objectstore.ReasonStoreError
		var se *objectstore.Error
		if errors.As(err, &se) {
			reason = se.Reason()
		}
		s.m.writeErrors.WithLabelValues(s.Name(), reason).Inc()
	}
	return err
}

// Put implements objectstore.Store.
func (s *meteredStore) Put(ctx context.Context, key string, body []byte) error {
	return s.count(s.Store.Put(ctx, key, body))
}

// PutIf implements objectstore.Store: the primary markers' conditional writes count too (a lost
// race as a StoreConflict error).
func (s *meteredStore) PutIf(ctx context.Context, key string, body []byte, version string) error {
	return s.count(s.Store.PutIf(ctx, key, body, version))
}

// Delete implements objectstore.Store.
func (s *meteredStore) Delete(ctx context.Context, key string) error {
	return s.count(s.Store.Delete(ctx, key))
}

// DeletePrefix implements objectstore.Store.
func (s *meteredStore) DeletePrefix(ctx context.Context, prefix string) error {
	return s.count(s.Store.DeletePrefix(ctx, prefix))
}

// GetCurrent implements objectstore.CurrentKeyReader: reads are not counted, and the store
// below says which key sealed the object.
func (s *meteredStore) GetCurrent(ctx context.Context, key string) ([]byte, bool, error) {
	return objectstore.GetCurrent(ctx, s.Store, key)
}

// GetVersionCurrent implements objectstore.CurrentKeyReader.
func (s *meteredStore) GetVersionCurrent(ctx context.Context, key string) ([]byte, string, bool, error) {
	return objectstore.GetVersionCurrent(ctx, s.Store, key)
}
