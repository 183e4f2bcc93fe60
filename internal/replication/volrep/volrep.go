package volrep

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

const (
	// SchedulingIntervalParameter is the VolumeReplicationClass parameter holding the interval,
	// as csi-addons drivers name it.
	SchedulingIntervalParameter = "schedulingInterval"

	// LabelVRGName marks a VolumeReplication with the name of the group that made it.
	LabelVRGName = "drover.io/vrg-name"
	// LabelVRGNamespace marks a VolumeReplication with the namespace of the group that made it.
	LabelVRGNamespace = "drover.io/vrg-namespace"

	// pollInterval is how soon to look again while the storage has not completed a request.
	pollInterval = 2 * time.Second
	// retryAfterError is how soon to retry after an API failure.
	retryAfterError = 5 * time.Second
	// fieldOwner names drover in the objects' managedFields.
	fieldOwner = "drover-agent"
)

// Backend is the VolRep backend. It holds only its client.
type Backend struct {
	client client.Client
}

var (
	_ replication.Backend            = (*Backend)(nil)
	_ replication.Cleaner            = (*Backend)(nil)
	_ replication.Demoter            = (*Backend)(nil)
	_ replication.DemotionObserver   = (*Backend)(nil)
	_ replication.ProtectionObserver = (*Backend)(nil)
)

// New returns the VolRep backend working through c, which must know the replication API's types.
func New(c client.Client) *Backend { return &Backend{client: c} }

// Name returns v1alpha1.BackendVolRep.
func (b *Backend) Name() v1alpha1.ReplicationBackend { return v1alpha1.BackendVolRep }

// Protect ensures a primary VolumeReplication of the PVC with a matching class and is Done once
// the storage reports it primary with its last operation completed.
func (b *Backend) Protect(ctx context.Context, pc *replication.PVCContext) replication.Result {
	if pc.Group != nil {
		return b.protectMember(ctx, pc)
	}
	vr, res := b.ensureVolumeReplication(ctx, pc)
	if vr == nil {
		return res
	}
	return observePrimary(vr)
}

// Status reports the VolumeReplication's last sync; a PVC without one has a zero SyncStatus.
func (b *Backend) Status(ctx context.Context, pc *replication.PVCContext) (replication.SyncStatus, error) {
	if pc.Group != nil {
		return b.groupStatus(ctx, pc)
	}
	vr := &replicationv1alpha1.VolumeReplication{}
	key := client.ObjectKeyFromObject(pc.PVC)
	if err := b.client.Get(ctx, key, vr); err != nil {
		if apierrors.IsNotFound(err) {
			return replication.SyncStatus{}, nil
		}
		return replication.SyncStatus{}, fmt.Errorf("failed to get VolumeReplication %s: %w", key, err)
	}
	st := replication.SyncStatus{
		ReplicationID:    vr.Spec.VolumeReplicationClass,
		LastSyncTime:     vr.Status.LastSyncTime,
		LastSyncDuration: vr.Status.LastSyncDuration,
		LastSyncBytes:    vr.Status.LastSyncBytes,
	}
	st.Primary = vr.Status.State == replicationv1alpha1.PrimaryState
	st.DemotedInSync = demotedInSync(vr)
	class := &replicationv1alpha1.VolumeReplicationClass{}
	switch err := b.client.Get(ctx, client.ObjectKey{Name: vr.Spec.VolumeReplicationClass}, class); {
	case err == nil:
		st.RefreshInterval = StatusRefreshInterval(class.Spec.Parameters[SchedulingIntervalParameter])
	case !apierrors.IsNotFound(err):
		return replication.SyncStatus{}, fmt.Errorf("failed to get VolumeReplicationClass %s: %w", vr.Spec.VolumeReplicationClass, err)
	}
	return st, nil
}

// defaultStatusRefresh is csi-addons' refresh of a primary's status for a class without a
// schedulingInterval it can read (defaultScheduleTime).
const defaultStatusRefresh = time.Hour

// StatusRefreshInterval is how often csi-addons refreshes a primary VolumeReplication's status,
// lastSyncTime included, for its class's schedulingInterval parameter raw
// (csi-addons/kubernetes-csi-addons internal/controller/replication.storage/
// volumereplication_controller.go, getInfoReconcileInterval): the interval itself below 2
// minutes, half of it from 2 minutes on, and an hour when the parameter is missing or not a Go
// duration. ceph-csi's day form ("1d") is not one (time.ParseDuration knows no days), so a daily
// class is refreshed hourly. Between two refreshes the storage may have synced without the
// VolumeReplication saying so: a healthy lastSyncTime is up to the interval, the sync's
// duration and this old.
func StatusRefreshInterval(raw string) time.Duration {
	d, err := time.ParseDuration(raw)
	switch {
	case raw == "" || err != nil:
		return defaultStatusRefresh
	case d < 2*time.Minute:
		return d
	}
	return d / 2
}

// demotedInSync reports whether a VolumeReplication asked to be secondary is, by its storage's
// word for that very generation, demoted (Completed True) and in sync with its peer (Degraded
// False, not Resyncing). csi-addons reports a demoted volume Degraded until its storage says the
// peer holds every write (the demotion's final snapshot mirrored), and no lastSyncTime for a
// secondary at all; so this, not a sync time, proves a relocation's final sync.
func demotedInSync(vr *replicationv1alpha1.VolumeReplication) bool {
	if vr.Spec.ReplicationState != replicationv1alpha1.Secondary || vr.Status.State != replicationv1alpha1.SecondaryState ||
		vr.Status.ObservedGeneration != vr.Generation {
		return false
	}
	is := func(t string, want metav1.ConditionStatus) bool {
		c := apimeta.FindStatusCondition(vr.Status.Conditions, t)
		return c != nil && c.Status == want && c.ObservedGeneration == vr.Generation
	}
	resyncing := apimeta.FindStatusCondition(vr.Status.Conditions, replicationv1alpha1.ConditionResyncing)
	return is(replicationv1alpha1.ConditionCompleted, metav1.ConditionTrue) && is(replicationv1alpha1.ConditionDegraded, metav1.ConditionFalse) &&
		(resyncing == nil || resyncing.Status != metav1.ConditionTrue)
}

// ensureVolumeReplication returns the PVC's VolumeReplication, created or set to primary as
// needed, or nil and the Result that explains why there is none.
func (b *Backend) ensureVolumeReplication(ctx context.Context, pc *replication.PVCContext) (*replicationv1alpha1.VolumeReplication, replication.Result) {
	key := client.ObjectKeyFromObject(pc.PVC)
	vr := &replicationv1alpha1.VolumeReplication{}
	err := b.client.Get(ctx, key, vr)
	switch {
	case apierrors.IsNotFound(err):
		return b.createVolumeReplication(ctx, pc, replicationv1alpha1.Primary, false)
	case err != nil:
		return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get VolumeReplication %s: %v", key, err))
	}
	if msg := foreign(vr, pc); msg != "" {
		return nil, replication.Failed(v1alpha1.ReasonReplicationConflict, msg)
	}
	if !primaryAsAsked(vr) {
		// Primary, and labelled so that an adopted VolumeReplication wakes its group too.
		before := vr.DeepCopy()
		vr.Spec.ReplicationState = replicationv1alpha1.Primary
		if vr.Labels == nil {
			vr.Labels = map[string]string{}
		}
		vr.Labels[LabelVRGName], vr.Labels[LabelVRGNamespace] = pc.VRG.Name, pc.VRG.Namespace
		if err := b.client.Patch(ctx, vr, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to set VolumeReplication %s to primary: %v", key, err))
		}
	}
	return vr, replication.Result{}
}

// ObserveProtection reports from the cache what Protect would: whether the storage made the
// PVC's VolumeReplication primary. False when there is none yet (or the cache has not seen it),
// it is another group's, or Protect would still promote or label it.
func (b *Backend) ObserveProtection(ctx context.Context, pc *replication.PVCContext) (replication.Result, bool) {
	if pc.Group != nil {
		return b.observeMemberProtection(ctx, pc)
	}
	vr := &replicationv1alpha1.VolumeReplication{}
	if err := b.client.Get(ctx, client.ObjectKeyFromObject(pc.PVC), vr); err != nil || foreign(vr, pc) != "" || !primaryAsAsked(vr) {
		return replication.Result{}, false
	}
	return observePrimary(vr), true
}

// primaryAsAsked reports whether a VolumeReplication asks for primary and carries its group's
// labels: Protect has nothing left to change on it.
func primaryAsAsked(vr *replicationv1alpha1.VolumeReplication) bool {
	return vr.Spec.ReplicationState == replicationv1alpha1.Primary && vr.Labels[LabelVRGName] != ""
}

// foreign says why an existing VolumeReplication named like the PVC is not this group's to use,
// or "" when it is.
func foreign(vr *replicationv1alpha1.VolumeReplication, pc *replication.PVCContext) string {
	key := client.ObjectKeyFromObject(vr)
	name, ns := vr.Labels[LabelVRGName], vr.Labels[LabelVRGNamespace]
	switch {
	case vr.Spec.DataSource.Kind != "PersistentVolumeClaim" || vr.Spec.DataSource.Name != pc.PVC.Name:
		return fmt.Sprintf("VolumeReplication %s exists and replicates %s %s, not PVC %s: delete or rename it so drover can replicate the PVC",
			key, vr.Spec.DataSource.Kind, vr.Spec.DataSource.Name, pc.PVC.Name)
	case name == "" && ns == "":
		// Made by hand or by an earlier agent without labels for the same PVC: adopt it.
		return ""
	case name != pc.VRG.Name || ns != pc.VRG.Namespace:
		return fmt.Sprintf("VolumeReplication %s belongs to VolumeReplicationGroup %s/%s: only one group may protect PVC %s",
			key, ns, name, pc.PVC.Name)
	}
	return ""
}

func (b *Backend) createVolumeReplication(ctx context.Context, pc *replication.PVCContext, state replicationv1alpha1.ReplicationState, autoResync bool) (*replicationv1alpha1.VolumeReplication, replication.Result) {
	class, res := b.selectClass(ctx, pc)
	if class == "" {
		return nil, res
	}
	vr := &replicationv1alpha1.VolumeReplication{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pc.PVC.Namespace, Name: pc.PVC.Name,
			Labels: map[string]string{LabelVRGName: pc.VRG.Name, LabelVRGNamespace: pc.VRG.Namespace},
		},
		Spec: replicationv1alpha1.VolumeReplicationSpec{
			VolumeReplicationClass: class,
			ReplicationState:       state,
			AutoResync:             autoResync,
			DataSource: corev1.TypedLocalObjectReference{
				APIGroup: ptr.To(""), Kind: "PersistentVolumeClaim", Name: pc.PVC.Name,
			},
		},
	}
	if err := b.client.Create(ctx, vr, client.FieldOwner(fieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("VolumeReplication %s/%s was just created", vr.Namespace, vr.Name))
		}
		return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to create VolumeReplication %s/%s: %v", vr.Namespace, vr.Name, err))
	}
	return vr, replication.Result{}
}

// selectClass returns the name of the one VolumeReplicationClass for the PVC, or "" and the
// Result saying why there is none.
func (b *Backend) selectClass(ctx context.Context, pc *replication.PVCContext) (string, replication.Result) {
	driver := ""
	if pc.PV.Spec.CSI != nil {
		driver = pc.PV.Spec.CSI.Driver
	}
	if driver == "" {
		return "", replication.Failed(v1alpha1.ReasonNoReplicationClass, fmt.Sprintf(
			"PV %s of PVC %s/%s (StorageClass %s) is not a CSI volume: VolRep replicates only CSI volumes; choose another backend for this class",
			pc.PV.Name, pc.PVC.Namespace, pc.PVC.Name, pc.StorageClassName))
	}
	selector := labels.Everything()
	if vr := pc.VRG.Spec.VolRep; vr != nil && vr.ReplicationClassSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(vr.ReplicationClassSelector)
		if err != nil {
			return "", replication.Failed(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("spec.volRep.replicationClassSelector is invalid: %v", err))
		}
		selector = s
	}
	classes := &replicationv1alpha1.VolumeReplicationClassList{}
	if err := b.client.List(ctx, classes, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return "", replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to list VolumeReplicationClasses: %v", err))
	}
	names := MatchingClasses(classes.Items, driver, pc.Interval)
	switch len(names) {
	case 1:
		return names[0], replication.Result{}
	case 0:
		filter := ""
		if !selector.Empty() {
			filter = fmt.Sprintf(" with labels matching %q (spec.volRep.replicationClassSelector)", selector.String())
		}
		return "", replication.Failed(v1alpha1.ReasonNoReplicationClass, fmt.Sprintf(
			"no VolumeReplicationClass%s has provisioner %s and parameter %s %q for PVC %s/%s of StorageClass %s; %s: create a VolumeReplicationClass with spec.provisioner %s and parameters.%s %q%s",
			filter, driver, SchedulingIntervalParameter, pc.Interval, pc.PVC.Namespace, pc.PVC.Name, pc.StorageClassName,
			classesSeen(classes.Items, driver), driver, SchedulingIntervalParameter, cephInterval(pc.Interval), cephAdvice(pc.Interval)))
	default:
		return "", replication.Failed(v1alpha1.ReasonReplicationClassAmbiguous, fmt.Sprintf(
			"VolumeReplicationClasses %s all have provisioner %s and %s %q for PVC %s/%s of StorageClass %s: label the one to use and set spec.volRep.replicationClassSelector",
			strings.Join(names, ", "), driver, SchedulingIntervalParameter, pc.Interval, pc.PVC.Namespace, pc.PVC.Name, pc.StorageClassName))
	}
}

// ParseSchedulingInterval parses a VolumeReplicationClass's schedulingInterval: ceph-csi's form,
// a number and m, h or d ("5m", "1h", "1d": the only form ceph-csi accepts), or a Go duration
// ("90s"), which other drivers may take (csi-addons passes the parameter through untouched).
func ParseSchedulingInterval(raw string) (time.Duration, error) {
	if n := len(raw); n > 1 && raw[n-1] == 'd' {
		days, err := strconv.ParseUint(raw[:n-1], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number of days", raw)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(raw)
}

// cephInterval writes an interval in ceph-csi's form when it has one (whole days, hours or
// minutes), else as a Go duration.
func cephInterval(d time.Duration) string {
	switch {
	case d > 0 && d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	case d > 0 && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d > 0 && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// cephAdvice warns when an interval has no form ceph-csi accepts.
func cephAdvice(d time.Duration) string {
	if d > 0 && d%time.Minute == 0 {
		return ""
	}
	return fmt.Sprintf(" (ceph-csi accepts only whole minutes, hours or days, ^\\d+[mhd]$, so no ceph-csi class can express %s: give the DRPolicy a schedulingInterval of whole minutes)", d)
}

// classesSeen lists the classes of a driver with their intervals, for a person choosing one.
func classesSeen(classes []replicationv1alpha1.VolumeReplicationClass, driver string) string {
	var seen []string
	for _, c := range classes {
		if c.Spec.Provisioner != driver {
			continue
		}
		raw, ok := c.Spec.Parameters[SchedulingIntervalParameter]
		switch d, err := ParseSchedulingInterval(raw); {
		case !ok:
			seen = append(seen, c.Name+" (no "+SchedulingIntervalParameter+")")
		case err != nil:
			seen = append(seen, fmt.Sprintf("%s (%q, not an interval)", c.Name, raw))
		default:
			seen = append(seen, fmt.Sprintf("%s (%s)", c.Name, d))
		}
	}
	if len(seen) == 0 {
		return fmt.Sprintf("the classes seen have no class of provisioner %s", driver)
	}
	slices.Sort(seen)
	return fmt.Sprintf("the classes of provisioner %s seen are %s", driver, strings.Join(seen, ", "))
}

// MatchingClasses returns, sorted, the names of the classes whose provisioner is driver and whose
// schedulingInterval parameter is interval. Intervals compare as durations, so "60s" matches
// "1m" and "1d" matches "24h"; a class without the parameter or with an unparsable one does not
// match.
func MatchingClasses(classes []replicationv1alpha1.VolumeReplicationClass, driver string, interval time.Duration) []string {
	var names []string
	for _, c := range classes {
		if c.Spec.Provisioner != driver {
			continue
		}
		d, err := ParseSchedulingInterval(c.Spec.Parameters[SchedulingIntervalParameter])
		if err != nil || d != interval {
			continue
		}
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return names
}

// observePrimary judges a VolumeReplication asked to be primary: Done once the storage has acted
// on its current generation, reports it Primary and its last operation completed.
func observePrimary(vr *replicationv1alpha1.VolumeReplication) replication.Result {
	key := vr.Namespace + "/" + vr.Name
	completed := apimeta.FindStatusCondition(vr.Status.Conditions, replicationv1alpha1.ConditionCompleted)
	switch {
	case vr.Status.ObservedGeneration < vr.Generation || completed == nil:
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing,
			fmt.Sprintf("waiting for the storage to act on VolumeReplication %s", key))
	case completed.Status != metav1.ConditionTrue:
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing,
			fmt.Sprintf("VolumeReplication %s is not primary yet: %s: %s", key, completed.Reason, completed.Message))
	case vr.Status.State != replicationv1alpha1.PrimaryState:
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing,
			fmt.Sprintf("VolumeReplication %s reports state %q, waiting for Primary", key, vr.Status.State))
	}
	return replication.Done()
}

// Cleanup deletes the PVC's VolumeReplication if this group made it (or it carries no group's
// labels) and is Done once it is gone; the storage then leaves the volume an ordinary writable
// one. A VolumeReplication of another group is left alone.
//
// The storage does not always let it go. ceph-csi disables mirroring only of a primary image
// (rbd-mirror then deletes the peer's non-primary copies); a secondary's it never disables, and
// it answers success, changing nothing, only while the secondary is up+replaying a live primary,
// InvalidArgument otherwise; csi-addons then keeps the VolumeReplication and the PVC's
// pvc-protection finalizer and retries with its backoff, writing nothing in the status
// (ceph-csi internal/rbd/replication.go, csi-addons volumereplication_controller.go). So a
// secondary whose peer is demoted too, lost, or split-brained stays. The hub removes an
// application's groups in an order that never leaves one so (internal/hub/drpc, releaseOrder),
// and asks a group that is the last copy left to release its volumes as primaries
// (v1alpha1.AnnotationUnprotectAsPrimary): Cleanup then promotes the VolumeReplication first
// (csi-addons forces the promotion when the peer's image cannot be demoted). A deletion the
// storage still keeps past releaseGrace is reported with reason ReplicationNotReleased, saying
// what releases it.
func (b *Backend) Cleanup(ctx context.Context, pc *replication.PVCContext) replication.Result {
	if pc.Group != nil {
		return b.cleanupMember(ctx, pc)
	}
	key := client.ObjectKeyFromObject(pc.PVC)
	vr := &replicationv1alpha1.VolumeReplication{}
	if err := b.client.Get(ctx, key, vr); err != nil {
		if apierrors.IsNotFound(err) {
			return replication.Done()
		}
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get VolumeReplication %s: %v", key, err))
	}
	if foreign(vr, pc) != "" {
		return replication.Done()
	}
	return Release(ctx, b.client, vr, pc.VRG.Annotations[v1alpha1.AnnotationUnprotectAsPrimary] == "true")
}

// Release deletes a VolumeReplication through c, promoting it first when asPrimary (Cleanup says
// why), and is never Done: the caller sees it gone. A VolumeReplication being deleted is only
// observed.
func Release(ctx context.Context, c client.Client, vr *replicationv1alpha1.VolumeReplication, asPrimary bool) replication.Result {
	key := client.ObjectKeyFromObject(vr)
	if !vr.DeletionTimestamp.IsZero() {
		return NotReleased(vr, time.Now())
	}
	if asPrimary {
		if res := promoteToRelease(ctx, c, vr); !res.IsDone() {
			return res
		}
	}
	if err := c.Delete(ctx, vr); client.IgnoreNotFound(err) != nil {
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to delete VolumeReplication %s: %v", key, err))
	}
	return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for the storage to release VolumeReplication %s", key))
}

// releaseGrace is how long a deleted VolumeReplication may take before Cleanup reports that the
// storage keeps it: csi-addons disables mirroring at once, in a second or two.
const releaseGrace = 10 * time.Second

// promoteToRelease makes a VolumeReplication primary before it is deleted, so that its storage
// disables its mirroring (Cleanup); Done once the storage reports it primary.
func promoteToRelease(ctx context.Context, c client.Client, vr *replicationv1alpha1.VolumeReplication) replication.Result {
	key := client.ObjectKeyFromObject(vr)
	if vr.Spec.ReplicationState != replicationv1alpha1.Primary {
		before := vr.DeepCopy()
		vr.Spec.ReplicationState, vr.Spec.AutoResync = replicationv1alpha1.Primary, false
		if err := c.Patch(ctx, vr, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to promote VolumeReplication %s before its deletion: %v", key, err))
		}
	}
	if res := observePrimary(vr); !res.IsDone() {
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf(
			"promoting VolumeReplication %s before deleting it, so that its storage disables its mirroring and keeps the data as an ordinary volume: %s", key, res.Message))
	}
	return replication.Done()
}

// NotReleased says what holds a VolumeReplication being deleted: Progressing while the storage
// may still be acting on it, then ReplicationNotReleased with what releases it.
func NotReleased(vr *replicationv1alpha1.VolumeReplication, now time.Time) replication.Result {
	key := vr.Namespace + "/" + vr.Name
	if now.Sub(vr.DeletionTimestamp.Time) < releaseGrace {
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for the storage to release VolumeReplication %s", key))
	}
	if vr.Status.State != replicationv1alpha1.PrimaryState {
		return replication.Retry(pollInterval, v1alpha1.ReasonReplicationNotReleased, fmt.Sprintf(
			"VolumeReplication %s was deleted %s ago and its storage keeps it and the PVC's finalizer %s: ceph-csi releases a secondary volume only while it replays its peer's primary. "+
				"It is released once the peer's VolumeReplication is deleted while primary (its mirroring disabled, which removes this copy) or this volume replays the peer's primary again; "+
				"if the peer cluster is gone for good, promote the image on the storage (rbd mirror image promote --force) and the deletion completes",
			key, now.Sub(vr.DeletionTimestamp.Time).Round(time.Second), pvcProtectionFinalizer))
	}
	return replication.Retry(pollInterval, v1alpha1.ReasonReplicationNotReleased, fmt.Sprintf(
		"VolumeReplication %s was deleted %s ago and its storage keeps it and the PVC's finalizer %s: csi-addons retries disabling its mirroring; look at the csi-addons controller's log for the driver's answer",
		key, now.Sub(vr.DeletionTimestamp.Time).Round(time.Second), pvcProtectionFinalizer))
}

// pvcProtectionFinalizer is the finalizer csi-addons keeps on a replicated PVC until its
// VolumeReplication is gone (finalizers.go).
const pvcProtectionFinalizer = "replication.storage.openshift.io/pvc-protection"

// Releasable reports whether the storage lets a secondary VolumeReplication go now or in a
// moment: csi-addons reports it replaying a live primary (Replays), or in sync with a demoted
// peer (a relocation's final sync: the peer's promotion, which follows, makes it replay).
// Deleted in any other state, csi-addons retries for as long as the state lasts, with a backoff
// that grows to many minutes.
func Releasable(vr *replicationv1alpha1.VolumeReplication) bool {
	return Replays(vr) || demotedInSync(vr)
}

// Replays reports whether csi-addons reports a secondary VolumeReplication, at its current
// generation, as resyncing and not ready: the state ceph-csi answers only while the secondary
// replays a live primary (up+replaying), the one state in which it releases a secondary. It
// fails the resync in every other state (split brain, no synced snapshot yet, a peer
// unreachable), and reports it ready (Degraded False) only with both sites demoted, in which it
// does not release it either.
func Replays(vr *replicationv1alpha1.VolumeReplication) bool {
	if vr.Spec.ReplicationState == replicationv1alpha1.Primary || vr.Status.State != replicationv1alpha1.SecondaryState ||
		vr.Status.ObservedGeneration != vr.Generation {
		return false
	}
	completed := apimeta.FindStatusCondition(vr.Status.Conditions, replicationv1alpha1.ConditionCompleted)
	resyncing := apimeta.FindStatusCondition(vr.Status.Conditions, replicationv1alpha1.ConditionResyncing)
	return completed != nil && completed.Status == metav1.ConditionTrue && completed.ObservedGeneration == vr.Generation &&
		resyncing != nil && resyncing.Status == metav1.ConditionTrue && resyncing.Reason == replicationv1alpha1.ReasonResyncTriggered &&
		resyncing.ObservedGeneration == vr.Generation
}

// Demote sets the PVC's VolumeReplication to secondary, with autoResync when resync is asked (the
// old primary of a failover: the storage discards its writes since the peer's promotion and
// takes the peer's data), and is Done once the storage reports it Secondary, or answers that
// the volume no longer exists (volumeGone). A PVC without a VolumeReplication gets a secondary
// one. The agent calls it only once nothing uses the PVC.
func (b *Backend) Demote(ctx context.Context, pc *replication.PVCContext, resync bool) replication.Result {
	if pc.Group != nil {
		return b.demoteMember(ctx, pc, resync)
	}
	key := client.ObjectKeyFromObject(pc.PVC)
	vr := &replicationv1alpha1.VolumeReplication{}
	err := b.client.Get(ctx, key, vr)
	switch {
	case apierrors.IsNotFound(err):
		created, res := b.createVolumeReplication(ctx, pc, replicationv1alpha1.Secondary, resync)
		if created == nil {
			return res
		}
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for the storage to demote VolumeReplication %s", key))
	case err != nil:
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get VolumeReplication %s: %v", key, err))
	}
	if msg := foreign(vr, pc); msg != "" {
		return replication.Failed(v1alpha1.ReasonReplicationConflict, msg)
	}
	if vr.Spec.ReplicationState != replicationv1alpha1.Secondary || vr.Spec.AutoResync != resync {
		before := vr.DeepCopy()
		vr.Spec.ReplicationState, vr.Spec.AutoResync = replicationv1alpha1.Secondary, resync
		if err := b.client.Patch(ctx, vr, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to set VolumeReplication %s to secondary: %v", key, err))
		}
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for the storage to demote VolumeReplication %s", key))
	}
	return observeSecondary(vr)
}

// IsDemoted reports whether the PVC's VolumeReplication, as the cache holds it, is this group's,
// asked to be secondary with resync as given, and reported Secondary at its generation.
func (b *Backend) IsDemoted(ctx context.Context, pc *replication.PVCContext, resync bool) bool {
	if pc.Group != nil {
		return b.memberDemoted(ctx, pc, resync)
	}
	vr := &replicationv1alpha1.VolumeReplication{}
	if err := b.client.Get(ctx, client.ObjectKeyFromObject(pc.PVC), vr); err != nil {
		return false
	}
	return foreign(vr, pc) == "" && vr.Spec.ReplicationState == replicationv1alpha1.Secondary &&
		vr.Spec.AutoResync == resync && observeSecondary(vr).IsDone()
}

// observeSecondary judges a VolumeReplication asked to be secondary: Done once the storage has
// acted on its current generation and reports it Secondary, or reports that the volume no
// longer exists (volumeGone).
func observeSecondary(vr *replicationv1alpha1.VolumeReplication) replication.Result {
	key := vr.Namespace + "/" + vr.Name
	switch {
	case vr.Status.ObservedGeneration < vr.Generation:
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing,
			fmt.Sprintf("waiting for the storage to act on VolumeReplication %s", key))
	case vr.Status.State != replicationv1alpha1.SecondaryState && volumeGone(vr):
		return replication.Done()
	case vr.Status.State != replicationv1alpha1.SecondaryState:
		msg := fmt.Sprintf("VolumeReplication %s reports state %q, waiting for Secondary", key, vr.Status.State)
		if c := apimeta.FindStatusCondition(vr.Status.Conditions, replicationv1alpha1.ConditionCompleted); c != nil && c.Status != metav1.ConditionTrue {
			msg += fmt.Sprintf(": %s: %s", c.Reason, c.Message)
		}
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, msg)
	}
	return replication.Done()
}

// grpcNotFound is how a driver's gRPC NotFound reads in the message csi-addons writes: grpc-go's
// status error text, "rpc error: code = NotFound desc = ...".
const grpcNotFound = "code = NotFound desc ="

// volumeGone reports whether the storage answered the demotion of a VolumeReplication's current
// generation that its volume does not exist: Completed False (FailedToDemote) and Degraded True
// (Error) with the driver's gRPC NotFound. A volume that no longer exists (RBD mirroring deletes a
// non-primary image whose primary's mirroring was disabled, as when the application was
// unprotected on the peer after a failover) holds no data, cannot be written, mounted or
// mirrored to the peer: what a demotion is for holds, so the PVC counts as demoted whatever
// state the status still shows. csi-addons keeps status.state as it was when a request fails
// (Primary when the image went before the demotion was reported) and calls Demote at every
// reconcile of a secondary, so this may follow a Secondary report too.
//
// The NotFound is told by the message text because upstream gives nothing else: ceph-csi answers
// gRPC NotFound for a missing image or pool (ceph/ceph-csi internal/csi-addons/rbd/replication.go,
// DemoteVolume through getGRPCError; the CSI-Addons specification's NOT_FOUND, "volume does not
// exist"), and csi-addons records only that error's text in Degraded's message
// (csi-addons/kubernetes-csi-addons internal/controller/replication.storage/
// volumereplication_controller.go, markVolumeAsSecondary; status.go, setFailedDemotionCondition:
// "<source> failed to demote: " followed by the error), with no code of its own in the status.
func volumeGone(vr *replicationv1alpha1.VolumeReplication) bool {
	if vr.Spec.ReplicationState != replicationv1alpha1.Secondary || vr.Status.ObservedGeneration != vr.Generation {
		return false
	}
	completed := apimeta.FindStatusCondition(vr.Status.Conditions, replicationv1alpha1.ConditionCompleted)
	degraded := apimeta.FindStatusCondition(vr.Status.Conditions, replicationv1alpha1.ConditionDegraded)
	return completed != nil && completed.Status == metav1.ConditionFalse && completed.Reason == replicationv1alpha1.ReasonFailedToDemote &&
		completed.ObservedGeneration == vr.Generation &&
		degraded != nil && degraded.Status == metav1.ConditionTrue && degraded.Reason == replicationv1alpha1.ReasonError &&
		degraded.ObservedGeneration == vr.Generation && strings.Contains(degraded.Message, grpcNotFound)
}
