package volsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	volsyncv1alpha1 "github.com/drover-io/drover/internal/extapi/volsync/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
	"github.com/drover-io/drover/internal/termination"
)

const (
	// LabelVRGName marks a ReplicationSource, ReplicationDestination or key Secret with the name
	// of the group that made it; the same key volrep uses, so one map function wakes the group.
	LabelVRGName = "drover.io/vrg-name"
	// LabelVRGNamespace marks them with the group's namespace.
	LabelVRGNamespace = "drover.io/vrg-namespace"
	// AnnotationFinalSyncOf on a DR-owned PVC names the PVC whose final sync it carries; the
	// backend then uses that PVC's ReplicationSource.
	AnnotationFinalSyncOf = "drover.io/final-sync-of"
	// AnnotationReceivedBy on a PVC names the group (<namespace>/<name>) whose
	// ReplicationDestination receives into it: from the moment EnsureDestination sets it (the
	// PVC unused, its demotion done), the PVC's data is VolSync's replica, written in place by
	// every sync and mixed after a cut one, no longer the application's. A promotion replaces
	// such a PVC by one restored from the latest image; a PVC without the mark is never touched.
	AnnotationReceivedBy = "drover.io/volsync-received-by"

	// PSKKey is the key of the pre-shared key in a key Secret, as VolSync names it.
	PSKKey = "psk.txt"
	// pskIdentity is the TLS-PSK identity VolSync writes before the key.
	pskIdentity = "volsync"
	// defaultSnapshotClassAnnotation marks the default VolumeSnapshotClass of a driver.
	defaultSnapshotClassAnnotation = "snapshot.storage.kubernetes.io/is-default-class"

	// pollInterval is how soon to look again while VolSync works.
	pollInterval = 2 * time.Second
	// retryAfterError is how soon to retry after an API failure.
	retryAfterError = 5 * time.Second
	// waitForHub is how soon to look again for what the hub or the peer's agent hands over.
	waitForHub = 5 * time.Second
	// fieldOwner names drover in the objects' managedFields.
	fieldOwner = "drover-agent"
)

// Backend is the VolSync backend. It holds only its clients.
type Backend struct {
	client client.Client
	// reader reads from the API server: Secrets (the agent may neither list nor watch them)
	// and the objects of a group being deleted (GroupDeletion.Fresh).
	reader client.Reader
}

var (
	_ replication.Backend     = (*Backend)(nil)
	_ replication.Cleaner     = (*Backend)(nil)
	_ replication.Demoter     = (*Backend)(nil)
	_ replication.FinalSyncer = (*Backend)(nil)
)

// New returns the VolSync backend working through c, which must know the VolSync and snapshot
// types, and reading Secrets through reader.
func New(c client.Client, reader client.Reader) *Backend { return &Backend{client: c, reader: reader} }

// Name returns v1alpha1.BackendVolSync.
func (b *Backend) Name() v1alpha1.ReplicationBackend { return v1alpha1.BackendVolSync }

// GroupLabels are the labels of the objects made for the group.
func GroupLabels(vrg *v1alpha1.VolumeReplicationGroup) map[string]string {
	return map[string]string{LabelVRGName: vrg.Name, LabelVRGNamespace: vrg.Namespace}
}

// OwnedBy reports whether obj carries the group's labels (GroupLabels).
func OwnedBy(obj client.Object, vrg *v1alpha1.VolumeReplicationGroup) bool {
	return obj.GetLabels()[LabelVRGName] == vrg.Name && obj.GetLabels()[LabelVRGNamespace] == vrg.Namespace
}

// sourceName is the name of the ReplicationSource of the PVC: its own, or for a DR-owned PVC of
// a final sync, the one of the PVC it stands for.
func sourceName(pvc *corev1.PersistentVolumeClaim) string {
	if of := pvc.Annotations[AnnotationFinalSyncOf]; of != "" {
		return of
	}
	return pvc.Name
}

// DestinationOf returns the spec.volSync.destinations entry of a PVC, or nil.
func DestinationOf(vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) *v1alpha1.VolSyncDestination {
	if vrg.Spec.VolSync == nil {
		return nil
	}
	for i := range vrg.Spec.VolSync.Destinations {
		d := &vrg.Spec.VolSync.Destinations[i]
		if d.PVCNamespace == namespace && d.PVCName == name {
			return d
		}
	}
	return nil
}

// Protect makes the PVC a replicating primary: a ReplicationSource sends it on the group's
// schedule (Trigger), or at the agent's manual triggers when the group's recipe has BeforeSync
// hooks (synccycle.go), to the destination the hub gave in spec.volSync.destinations, with the key Secret the
// agent made from the group's stores. Done once the source exists as asked and VolSync reports no failure. The
// ReplicationDestination this cluster may still hold for the PVC from its time as secondary is
// the agent's to remove, once its restore no longer needs it.
func (b *Backend) Protect(ctx context.Context, pc *replication.PVCContext) replication.Result {
	// VolSync never makes a volume read-only: whatever the state of its source, the PVC is the
	// application's writable volume.
	res := b.protect(ctx, pc)
	res.Writable = !res.IsDone()
	return res
}

func (b *Backend) protect(ctx context.Context, pc *replication.PVCContext) replication.Result {
	ns, name := pc.PVC.Namespace, pc.PVC.Name
	if _, ok := moverPodSecurityContext(pc.VRG, pc.MoverSecurityContext); !ok {
		// First: without a user no destination can run either, so nothing else would come.
		return moverUserUnknown(ns+"/"+name, pc.MoverUserUnknown)
	}
	dest := DestinationOf(pc.VRG, ns, name)
	if dest == nil {
		return replication.Retry(waitForHub, v1alpha1.ReasonVolSyncDestinationUnknown, fmt.Sprintf(
			"PVC %s/%s waits for its VolSync destination: spec.volSync.destinations has no entry for it yet; the hub copies it from the secondary's status.volSyncDestinations once the peer's group is secondary",
			ns, name))
	}
	if res := b.checkKeySecret(ctx, ns, dest.KeySecretName); !res.IsDone() {
		return res
	}
	trigger, err := Trigger(pc.Interval)
	if err != nil {
		return replication.Failed(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("PVC %s/%s: %v", ns, name, err))
	}
	if ManualSyncs(pc.VRG) {
		// The agent triggers each sync once the BeforeSync hooks passed (synccycle.go).
		var res replication.Result
		if trigger, res = b.cycleTrigger(ctx, pc); !res.IsDone() {
			return res
		}
	}
	rs, res := b.ensureSource(ctx, pc, dest, trigger)
	if rs == nil {
		return res
	}
	if res := b.recordSyncs(ctx, rs); !res.IsDone() {
		return res
	}
	return observeSource(rs)
}

// checkKeySecret is Done when the key Secret the destination names is on this cluster.
func (b *Backend) checkKeySecret(ctx context.Context, namespace, name string) replication.Result {
	secret := &corev1.Secret{}
	err := b.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return replication.Retry(waitForHub, v1alpha1.ReasonVolSyncDestinationUnknown, fmt.Sprintf(
			"the VolSync key Secret %s/%s is not on this cluster yet: the agent makes it from the group's S3 stores, where the secondary's agent writes it", namespace, name))
	case err != nil:
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get Secret %s/%s: %v", namespace, name, err))
	case len(secret.Data[PSKKey]) == 0:
		return replication.Failed(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"the VolSync key Secret %s/%s has no %s: delete it, and the agent makes it again from the group's S3 stores", namespace, name, PSKKey))
	}
	return replication.Done()
}

// ensureSource returns the PVC's ReplicationSource, created or changed to send to dest with
// trigger; nil and the Result that explains why there is none.
func (b *Backend) ensureSource(ctx context.Context, pc *replication.PVCContext, dest *v1alpha1.VolSyncDestination, trigger *volsyncv1alpha1.TriggerSpec) (*volsyncv1alpha1.ReplicationSource, replication.Result) {
	class, res := b.selectSnapshotClass(ctx, pc.VRG, pc.Provisioner, pc.PVC.Namespace+"/"+pc.PVC.Name)
	if class == "" {
		return nil, res
	}
	mover, ok := moverPodSecurityContext(pc.VRG, pc.MoverSecurityContext)
	if !ok {
		return nil, moverUserUnknown(pc.PVC.Namespace+"/"+pc.PVC.Name, pc.MoverUserUnknown)
	}
	want := volsyncv1alpha1.ReplicationSourceSpec{
		SourcePVC: pc.PVC.Name,
		Trigger:   trigger,
		RsyncTLS: &volsyncv1alpha1.ReplicationSourceRsyncTLSSpec{
			CopyMethod:              volsyncv1alpha1.CopyMethodSnapshot,
			VolumeSnapshotClassName: ptr.To(class),
			KeySecret:               ptr.To(dest.KeySecretName),
			Address:                 ptr.To(dest.Address),
			MoverSecurityContext:    mover,
		},
	}
	if pc.StorageClassName != "" {
		want.RsyncTLS.StorageClassName = ptr.To(pc.StorageClassName)
	}
	key := client.ObjectKey{Namespace: pc.PVC.Namespace, Name: sourceName(pc.PVC)}
	rs := &volsyncv1alpha1.ReplicationSource{}
	err := b.client.Get(ctx, key, rs)
	switch {
	case apierrors.IsNotFound(err):
		rs = &volsyncv1alpha1.ReplicationSource{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: GroupLabels(pc.VRG)},
			Spec:       want,
		}
		if err := b.client.Create(ctx, rs, client.FieldOwner(fieldOwner)); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("ReplicationSource %s was just created", key))
			}
			return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to create ReplicationSource %s: %v", key, err))
		}
		return rs, replication.Result{}
	case err != nil:
		return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get ReplicationSource %s: %v", key, err))
	}
	if !OwnedBy(rs, pc.VRG) {
		return nil, replication.Failed(v1alpha1.ReasonReplicationConflict, fmt.Sprintf(
			"ReplicationSource %s exists and does not belong to VolumeReplicationGroup %s/%s (labels %s, %s): delete or rename it so drover can replicate PVC %s",
			key, pc.VRG.Namespace, pc.VRG.Name, LabelVRGNamespace, LabelVRGName, pc.PVC.Name))
	}
	if !equality.Semantic.DeepEqual(rs.Spec, want) {
		before := rs.DeepCopy()
		rs.Spec = want
		if err := b.client.Patch(ctx, rs, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to update ReplicationSource %s: %v", key, err))
		}
	}
	return rs, replication.Result{}
}

// observeSource is Done unless VolSync reports the source failing: a Synchronizing condition
// with reason Error (VolSync's own reconcile errors), or a failed mover, which VolSync retries
// while the condition stays SyncInProgress and reports only in status.latestMoverStatus.
func observeSource(rs *volsyncv1alpha1.ReplicationSource) replication.Result {
	if msg := syncError(rs.Status); msg != "" {
		return replication.Retry(waitForHub, v1alpha1.ReasonSyncFailed, fmt.Sprintf("ReplicationSource %s/%s: %s", rs.Namespace, rs.Name, msg))
	}
	if st := rs.Status; st != nil && st.LatestMoverStatus != nil && st.LatestMoverStatus.Result == volsyncv1alpha1.MoverResultFailed {
		return replication.Retry(waitForHub, v1alpha1.ReasonMoverFailed, fmt.Sprintf(
			"ReplicationSource %s/%s: its mover failed and VolSync retries it; status.latestMoverStatus.logs: %s",
			rs.Namespace, rs.Name, logTail(st.LatestMoverStatus.Logs)))
	}
	return replication.Done()
}

// maxLogTail bounds how much of a mover's log a condition quotes.
const maxLogTail = 512

// logTail is the end of a mover's log, at most maxLogTail bytes, on one line.
func logTail(logs string) string {
	return strings.ReplaceAll(termination.Tail(strings.TrimSpace(logs), maxLogTail), "\n", " | ")
}

// syncError is the message of a Synchronizing condition with reason Error, or "".
func syncError(st *volsyncv1alpha1.ReplicationSourceStatus) string {
	if st == nil {
		return ""
	}
	c := apimeta.FindStatusCondition(st.Conditions, volsyncv1alpha1.ConditionSynchronizing)
	if c == nil || c.Reason != volsyncv1alpha1.SynchronizingReasonError {
		return ""
	}
	return c.Message
}

// Status reports the recovery point of the PVC's ReplicationSource: the start of the newest sync
// whose image the destination is proven to hold (provenPoint), one sync behind the source's
// own last completion, which the destination may not have taken an image of yet. Its
// RefreshInterval is the interval: the recovery point advances a sync late.
func (b *Backend) Status(ctx context.Context, pc *replication.PVCContext) (replication.SyncStatus, error) {
	key := client.ObjectKey{Namespace: pc.PVC.Namespace, Name: sourceName(pc.PVC)}
	rs := &volsyncv1alpha1.ReplicationSource{}
	if err := b.client.Get(ctx, key, rs); err != nil {
		if apierrors.IsNotFound(err) {
			return replication.SyncStatus{}, nil
		}
		return replication.SyncStatus{}, fmt.Errorf("failed to get ReplicationSource %s: %w", key, err)
	}
	st := replication.SyncStatus{ReplicationID: "ReplicationSource/" + rs.Name, LastSyncTime: provenPoint(rs),
		RefreshInterval: pc.Interval}
	if rs.Status != nil {
		st.LastSyncDuration = rs.Status.LastSyncDuration
	}
	return st, nil
}

// Demote removes the PVC's ReplicationSource: the peer's data wins from now on, and this side
// becomes a destination once the hub lists the PVC in spec.volSync.receivePVCs. The writes made
// here since the peer was promoted are never sent (resync makes no difference: a destination
// always takes the whole volume). Done once the source is gone.
func (b *Backend) Demote(ctx context.Context, pc *replication.PVCContext, _ bool) replication.Result {
	return b.DeleteSource(ctx, pc.VRG, pc.PVC.Namespace, sourceName(pc.PVC))
}

// Cleanup removes the PVC's ReplicationSource and ReplicationDestination made by this group.
// The key Secret stays: the group's deletion removes it (DeleteGroupObjects).
//
// A destination the group still receives (spec.volSync.receivePVCs names the PVC) is not this
// PVC's to remove: it receives the peer's PVC of the same name, and this cluster's copy going
// away (a workload deleted on a returning old primary) does not end that. Removing it there
// raced with the agent recreating it, pass after pass, so the peer never got an address to send
// to and the application stayed unprotected.
func (b *Backend) Cleanup(ctx context.Context, pc *replication.PVCContext) replication.Result {
	if res := b.DeleteSource(ctx, pc.VRG, pc.PVC.Namespace, sourceName(pc.PVC)); !res.IsDone() {
		return res
	}
	if Receives(pc.VRG, pc.PVC.Namespace, pc.PVC.Name) {
		return replication.Done()
	}
	return b.RemoveDestination(ctx, pc.VRG, pc.PVC.Namespace, pc.PVC.Name)
}

// Receives reports whether the group's spec.volSync.receivePVCs names the PVC.
func Receives(vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) bool {
	if vrg.Spec.VolSync == nil {
		return false
	}
	for _, rp := range vrg.Spec.VolSync.ReceivePVCs {
		if rp.PVCNamespace == namespace && rp.PVCName == name {
			return true
		}
	}
	return false
}

// DeleteSource deletes a ReplicationSource of the group; Done once it is gone. One of another
// group is left alone.
func (b *Backend) DeleteSource(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) replication.Result {
	return b.deleteOwned(ctx, vrg, &volsyncv1alpha1.ReplicationSource{}, "ReplicationSource", namespace, name)
}

// RemoveDestination deletes a ReplicationDestination of the group and its ServiceExport; Done
// once it is gone. Its own PVC and snapshots go with it (VolSync owns them).
func (b *Backend) RemoveDestination(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) replication.Result {
	if err := b.deleteServiceExport(ctx, vrg, namespace, name); err != nil {
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, err.Error())
	}
	return b.deleteOwned(ctx, vrg, &volsyncv1alpha1.ReplicationDestination{}, "ReplicationDestination", namespace, name)
}

func (b *Backend) deleteOwned(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, obj client.Object, kind, namespace, name string) replication.Result {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if err := b.client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return replication.Done()
		}
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get %s %s: %v", kind, key, err))
	}
	if !OwnedBy(obj, vrg) {
		return replication.Done()
	}
	if obj.GetDeletionTimestamp().IsZero() {
		if err := b.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to delete %s %s: %v", kind, key, err))
		}
	}
	return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for %s %s to be deleted", kind, key))
}

// selectSnapshotClass returns the VolumeSnapshotClass of provisioner that the group's selector
// selects: the only one, or the one marked default among several; "" and the Result saying
// what to do otherwise.
func (b *Backend) selectSnapshotClass(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, provisioner, pvcKey string) (string, replication.Result) {
	selector := labels.Everything()
	if vs := vrg.Spec.VolSync; vs != nil && vs.VolumeSnapshotClassSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(vs.VolumeSnapshotClassSelector)
		if err != nil {
			return "", replication.Failed(v1alpha1.ReasonInvalidSpec, fmt.Sprintf("spec.volSync.volumeSnapshotClassSelector is invalid: %v", err))
		}
		selector = s
	}
	list := &snapshotv1.VolumeSnapshotClassList{}
	if err := b.client.List(ctx, list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return "", replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to list VolumeSnapshotClasses: %v", err))
	}
	name, err := SnapshotClassFor(list.Items, provisioner)
	if err == nil {
		return name, replication.Result{}
	}
	filter := ""
	if !selector.Empty() {
		filter = fmt.Sprintf(" with labels matching %q (spec.volSync.volumeSnapshotClassSelector)", selector.String())
	}
	if errors.Is(err, errNoSnapshotClass) {
		return "", replication.Failed(v1alpha1.ReasonNoSnapshotClass, fmt.Sprintf(
			"no VolumeSnapshotClass%s has driver %s for PVC %s, which VolSync needs for its snapshots: create one with driver %s",
			filter, provisioner, pvcKey, provisioner))
	}
	return "", replication.Failed(v1alpha1.ReasonSnapshotClassAmbiguous, fmt.Sprintf(
		"PVC %s: %v%s: label the one to use and set spec.volSync.volumeSnapshotClassSelector, or mark one with %s",
		pvcKey, err, filter, defaultSnapshotClassAnnotation))
}

// errNoSnapshotClass: no class has the driver.
var errNoSnapshotClass = errors.New("no VolumeSnapshotClass matches")

// SnapshotClassFor picks, among classes, the one of driver: the only one, or among several the
// one annotated as the driver's default. It fails when none has the driver, or several do and
// not exactly one is the default.
func SnapshotClassFor(classes []snapshotv1.VolumeSnapshotClass, driver string) (string, error) {
	var names, defaults []string
	for _, c := range classes {
		if c.Driver != driver {
			continue
		}
		names = append(names, c.Name)
		if c.Annotations[defaultSnapshotClassAnnotation] == "true" {
			defaults = append(defaults, c.Name)
		}
	}
	slices.Sort(names)
	switch {
	case len(names) == 1:
		return names[0], nil
	case len(names) == 0:
		return "", errNoSnapshotClass
	case len(defaults) == 1:
		return defaults[0], nil
	}
	return "", fmt.Errorf("VolumeSnapshotClasses %s all have driver %s", strings.Join(names, ", "), driver)
}

// EnsureDestination makes the ReplicationDestination of a PVC this secondary receives: rsync-tls,
// copyMethod Snapshot, the capacity, access modes, volume mode (a Block PVC is received as
// Block) and StorageClass of the primary's PVC, the
// VolumeSnapshotClass of the class's provisioner, and the key Secret KeySecretName (created with
// a random key when missing, kept when it exists, as after an earlier role). destinationPVC, when
// not empty, names an existing PVC to receive into (a PVC kept from this cluster's time as
// primary, marked AnnotationReceivedBy first: it holds VolSync's replica from then on);
// otherwise VolSync makes its own. It returns the
// destination to report in status.volSyncDestinations once VolSync publishes the address.
func (b *Backend) EnsureDestination(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, rp v1alpha1.VolSyncReceivePVC, destinationPVC string) (*v1alpha1.VolSyncDestination, replication.Result) {
	pvcKey := rp.PVCNamespace + "/" + rp.PVCName
	keyName := KeySecretName(vrg.Name, rp.PVCName)
	if res := b.ensureKeySecret(ctx, vrg, rp.PVCNamespace, keyName); !res.IsDone() {
		return nil, res
	}
	class := &storagev1.StorageClass{}
	if err := b.client.Get(ctx, client.ObjectKey{Name: rp.StorageClassName}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, replication.Failed(v1alpha1.ReasonNotFound, fmt.Sprintf(
				"StorageClass %s of PVC %s does not exist on this cluster: create it so the PVC can be received", rp.StorageClassName, pvcKey))
		}
		return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get StorageClass %s: %v", rp.StorageClassName, err))
	}
	snapClass, res := b.selectSnapshotClass(ctx, vrg, class.Provisioner, pvcKey)
	if snapClass == "" {
		return nil, res
	}
	mode := AddressMode(vrg)
	want, ok := destinationSpec(vrg, rp, snapClass, keyName)
	if !ok {
		return nil, moverUserUnknown(pvcKey, "the primary reports no user for its movers (its group's status.protectedPVCs), so the destination's mover has none either")
	}
	if destinationPVC != "" {
		if res := b.markReceiving(ctx, vrg, rp.PVCNamespace, destinationPVC); !res.IsDone() {
			return nil, res
		}
		want.RsyncTLS.DestinationPVC = ptr.To(destinationPVC)
	}
	key := client.ObjectKey{Namespace: rp.PVCNamespace, Name: rp.PVCName}
	rd := &volsyncv1alpha1.ReplicationDestination{}
	err := b.client.Get(ctx, key, rd)
	switch {
	case apierrors.IsNotFound(err):
		rd = &volsyncv1alpha1.ReplicationDestination{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: GroupLabels(vrg)},
			Spec:       want,
		}
		if err := b.client.Create(ctx, rd, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to create ReplicationDestination %s: %v", key, err))
		}
		return nil, replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for ReplicationDestination %s to publish its address", key))
	case err != nil:
		return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get ReplicationDestination %s: %v", key, err))
	case !OwnedBy(rd, vrg):
		return nil, replication.Failed(v1alpha1.ReasonReplicationConflict, fmt.Sprintf(
			"ReplicationDestination %s exists and does not belong to VolumeReplicationGroup %s/%s: delete or rename it so drover can receive PVC %s",
			key, vrg.Namespace, vrg.Name, pvcKey))
	}
	if !equality.Semantic.DeepEqual(rd.Spec, want) {
		before := rd.DeepCopy()
		rd.Spec = want
		if err := b.client.Patch(ctx, rd, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to update ReplicationDestination %s: %v", key, err))
		}
		if was := before.Spec.RsyncTLS; mode != v1alpha1.VolSyncAddressServiceExport && (was == nil || ptr.Deref(was.ServiceType, corev1.ServiceTypeClusterIP) != corev1.ServiceTypeLoadBalancer) {
			// Back from ServiceExport: the Service is no longer exported.
			if err := b.deleteServiceExport(ctx, vrg, key.Namespace, key.Name); err != nil {
				return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, err.Error())
			}
		}
	}
	address, res := b.publishedAddress(ctx, vrg, rd)
	if address == "" {
		return nil, res
	}
	return &v1alpha1.VolSyncDestination{
		PVCNamespace: rp.PVCNamespace, PVCName: rp.PVCName, Address: address, KeySecretName: keyName,
	}, replication.Done()
}

// destinationSpec is the ReplicationDestination of a received PVC, without its destinationPVC;
// false when its movers have no user.
func destinationSpec(vrg *v1alpha1.VolumeReplicationGroup, rp v1alpha1.VolSyncReceivePVC, snapClass, keyName string) (volsyncv1alpha1.ReplicationDestinationSpec, bool) {
	mover, ok := moverPodSecurityContext(vrg, destinationMoverUser(vrg, rp))
	return volsyncv1alpha1.ReplicationDestinationSpec{RsyncTLS: &volsyncv1alpha1.ReplicationDestinationRsyncTLSSpec{
		// The source is on the other cluster: a ClusterIP Service, VolSync's default, is
		// reachable from there only once exported (address.go).
		ServiceType:             ptr.To(serviceType(AddressMode(vrg))),
		CopyMethod:              volsyncv1alpha1.CopyMethodSnapshot,
		Capacity:                ptr.To(rp.Capacity),
		StorageClassName:        ptr.To(rp.StorageClassName),
		AccessModes:             rp.AccessModes,
		VolumeMode:              rp.VolumeMode,
		VolumeSnapshotClassName: ptr.To(snapClass),
		KeySecret:               ptr.To(keyName),
		MoverSecurityContext:    mover,
	}}, ok
}

// GroupKey is the value of AnnotationReceivedBy for the group.
func GroupKey(vrg *v1alpha1.VolumeReplicationGroup) string { return vrg.Namespace + "/" + vrg.Name }

// markReceiving sets AnnotationReceivedBy on the PVC a destination is to receive into, before
// the destination names it.
func (b *Backend) markReceiving(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) replication.Result {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pvc); err != nil {
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get PVC %s/%s: %v", namespace, name, err))
	}
	if pvc.Annotations[AnnotationReceivedBy] == GroupKey(vrg) {
		return replication.Done()
	}
	before := pvc.DeepCopy()
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, AnnotationReceivedBy, GroupKey(vrg))
	if err := b.client.Patch(ctx, pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to mark PVC %s/%s as received into: %v", namespace, name, err))
	}
	return replication.Done()
}

// PauseDestination sets spec.paused on the group's ReplicationDestination of a PVC: VolSync
// runs no mover for it, so no source can write into its volume nor replace its latest image.
// A promotion pauses the destination it restores from, whose volume a PVC of the same name may
// replace. EnsureDestination unpauses it.
func (b *Backend) PauseDestination(ctx context.Context, rd *volsyncv1alpha1.ReplicationDestination) error {
	if rd.Spec.Paused {
		return nil
	}
	before := rd.DeepCopy()
	rd.Spec.Paused = true
	if err := b.client.Patch(ctx, rd, client.MergeFrom(before), client.FieldOwner(fieldOwner)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("failed to pause ReplicationDestination %s/%s: %w", rd.Namespace, rd.Name, err)
	}
	return nil
}

// ensureKeySecret creates the key Secret with a random key unless it exists (with a key).
func (b *Backend) ensureKeySecret(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) replication.Result {
	secret := &corev1.Secret{}
	err := b.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	switch {
	case err == nil && len(secret.Data[PSKKey]) > 0:
		return replication.Done()
	case err == nil:
		return replication.Failed(v1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"Secret %s/%s, the VolSync key of this group, has no %s: delete it and drover makes a new one", namespace, name, PSKKey))
	case !apierrors.IsNotFound(err):
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get Secret %s/%s: %v", namespace, name, err))
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to make a VolSync key: %v", err))
	}
	secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: GroupLabels(vrg)},
		Data:       map[string][]byte{PSKKey: []byte(pskIdentity + ":" + hex.EncodeToString(raw))},
	}
	if err := b.client.Create(ctx, secret, client.FieldOwner(fieldOwner)); err != nil && !apierrors.IsAlreadyExists(err) {
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to create Secret %s/%s: %v", namespace, name, err))
	}
	return replication.Done()
}

// Destination returns the group's ReplicationDestination of a PVC, or nil when there is none.
//
// It reads from the API server, not the cache: the hub promotes a relocation's target only once
// the source's final sync was confirmed (finalsync.go), and only a read made after that is sure
// to show the image of the final sync as status.latestImage; a cache may still hold the image
// of the sync before.
func (b *Backend) Destination(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace, name string) (*volsyncv1alpha1.ReplicationDestination, error) {
	rd := &volsyncv1alpha1.ReplicationDestination{}
	if err := b.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get ReplicationDestination %s/%s: %w", namespace, name, err)
	}
	if !OwnedBy(rd, vrg) {
		return nil, nil
	}
	return rd, nil
}

// LatestImage is the snapshot a destination's last sync left, or nil.
func LatestImage(rd *volsyncv1alpha1.ReplicationDestination) *corev1.TypedLocalObjectReference {
	if rd == nil || rd.Status == nil || rd.Status.LatestImage == nil || rd.Status.LatestImage.Kind != "VolumeSnapshot" {
		return nil
	}
	return rd.Status.LatestImage
}

// DestinationPVC is the PVC a destination receives into when it names one, or "".
func DestinationPVC(rd *volsyncv1alpha1.ReplicationDestination) string {
	if rd == nil || rd.Spec.RsyncTLS == nil {
		return ""
	}
	return ptr.Deref(rd.Spec.RsyncTLS.DestinationPVC, "")
}

// GroupDeletion says which of a group's ReplicationSources and ReplicationDestinations
// DeleteGroupObjects deletes and where it looks for them.
type GroupDeletion struct {
	// Keep spares the objects for which it returns true; nil spares none.
	Keep func(kind, name string) bool
	// Keys deletes the key Secrets of the deleted objects too.
	Keys bool
	// Fresh lists from the API server, not the cache: the deletion that ends a group must not
	// miss an object the cache has not seen yet, or it would be left replicating with nobody
	// to remove it.
	Fresh bool
}

// DeleteGroupObjects deletes, in namespace, the group's ReplicationSources and
// ReplicationDestinations that del does not keep, and the ServiceExports of those
// destinations. It reports whether none of them is left.
func (b *Backend) DeleteGroupObjects(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, namespace string, del GroupDeletion) (bool, error) {
	sel := client.MatchingLabels(GroupLabels(vrg))
	var from client.Reader = b.client
	if del.Fresh {
		from = b.reader
	}
	sources := &volsyncv1alpha1.ReplicationSourceList{}
	if err := from.List(ctx, sources, client.InNamespace(namespace), sel); err != nil {
		return false, fmt.Errorf("failed to list ReplicationSources in namespace %s: %w", namespace, err)
	}
	dests := &volsyncv1alpha1.ReplicationDestinationList{}
	if err := from.List(ctx, dests, client.InNamespace(namespace), sel); err != nil {
		return false, fmt.Errorf("failed to list ReplicationDestinations in namespace %s: %w", namespace, err)
	}
	var objs []client.Object
	for i := range sources.Items {
		if del.Keep == nil || !del.Keep("ReplicationSource", sources.Items[i].Name) {
			objs = append(objs, &sources.Items[i])
		}
	}
	for i := range dests.Items {
		if del.Keep == nil || !del.Keep("ReplicationDestination", dests.Items[i].Name) {
			if err := b.deleteServiceExport(ctx, vrg, namespace, dests.Items[i].Name); err != nil {
				return false, err
			}
			objs = append(objs, &dests.Items[i])
		}
	}
	for _, obj := range objs {
		if err := b.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return false, fmt.Errorf("failed to delete %s/%s: %w", namespace, obj.GetName(), err)
		}
		if del.Keys {
			key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: KeySecretName(vrg.Name, obj.GetName())}}
			if err := b.client.Delete(ctx, key); client.IgnoreNotFound(err) != nil {
				return false, fmt.Errorf("failed to delete Secret %s/%s: %w", namespace, key.Name, err)
			}
		}
	}
	return len(objs) == 0, nil
}
