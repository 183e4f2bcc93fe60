package volrep

// Consistency groups (docs/decisions/0009-consistency-groups.md): the members of a group are
// replicated by one csi-addons VolumeGroupReplication, <group>-<name>, in their namespace, which
// selects them by the label v1alpha1.LabelConsistencyGroup that the agent puts on them; the
// storage copies every member at one instant. A member has no VolumeReplication of its own:
// csi-addons refuses a PVC owned by both, so one left from before the PVC joined is released
// first. Every method below takes a PVCContext whose Group is set and acts on the group: the
// first member a pass protects creates the group, the others find it.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// GroupName is the name of the VolumeGroupReplication of a VolumeReplicationGroup's consistency
// group.
func GroupName(vrgName, group string) string { return vrgName + "-" + group }

// groupKey is where the VolumeGroupReplication of the PVC's group lives.
func groupKey(pc *replication.PVCContext) client.ObjectKey {
	return client.ObjectKey{Namespace: pc.PVC.Namespace, Name: GroupName(pc.VRG.Name, pc.Group.Name)}
}

// protectMember makes the PVC's group primary and is Done once the storage reports the group
// primary with the PVC among its members.
func (b *Backend) protectMember(ctx context.Context, pc *replication.PVCContext) replication.Result {
	if res, gone := b.releaseOwn(ctx, pc); !gone {
		return res
	}
	vgr, res := b.ensureGroup(ctx, pc, replicationv1alpha1.Primary, false)
	if vgr == nil {
		return res
	}
	return observeMember(vgr, pc, replicationv1alpha1.PrimaryState)
}

// releaseOwn deletes the PVC's own VolumeReplication, made before the PVC joined its group, and
// reports whether none is left. Deleting it disables the volume's mirroring: the peer keeps no
// copy of this volume until the group's first mirror (the decision's window for a volume moved
// into a group).
func (b *Backend) releaseOwn(ctx context.Context, pc *replication.PVCContext) (replication.Result, bool) {
	vr := &replicationv1alpha1.VolumeReplication{}
	key := client.ObjectKeyFromObject(pc.PVC)
	if err := b.client.Get(ctx, key, vr); err != nil {
		if apierrors.IsNotFound(err) {
			return replication.Result{}, true
		}
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get VolumeReplication %s: %v", key, err)), false
	}
	if foreign(vr, pc) != "" {
		return replication.Result{}, true
	}
	res := Release(ctx, b.client, vr, false)
	res.Message = fmt.Sprintf("PVC %s joins consistency group %s: its own VolumeReplication goes first (%s)", key, pc.Group.Name, res.Message)
	return res, false
}

// ensureGroup returns the PVC's VolumeGroupReplication, created or set to state and autoResync
// as needed, or nil and the Result that explains why there is none.
func (b *Backend) ensureGroup(ctx context.Context, pc *replication.PVCContext, state replicationv1alpha1.ReplicationState, autoResync bool) (*replicationv1alpha1.VolumeGroupReplication, replication.Result) {
	key := groupKey(pc)
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	err := b.client.Get(ctx, key, vgr)
	switch {
	case apierrors.IsNotFound(err):
		return b.createGroup(ctx, pc, state, autoResync)
	case apimeta.IsNoMatchError(err):
		return nil, replication.Failed(v1alpha1.ReasonConsistencyGroupUnsupported, fmt.Sprintf(
			"consistency group %s: this cluster does not serve VolumeGroupReplication (replication.storage.openshift.io): install csi-addons with its group replication, or remove PVC %s from the group",
			pc.Group.Name, client.ObjectKeyFromObject(pc.PVC)))
	case err != nil:
		return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get VolumeGroupReplication %s: %v", key, err))
	}
	if msg := foreignGroup(vgr, pc); msg != "" {
		return nil, replication.Failed(v1alpha1.ReasonReplicationConflict, msg)
	}
	if res := b.sameStorage(ctx, vgr, pc); res.Outcome != replication.OutcomeDone {
		return nil, res
	}
	if vgr.Spec.ReplicationState != state || vgr.Spec.AutoResync != autoResync {
		before := vgr.DeepCopy()
		vgr.Spec.ReplicationState, vgr.Spec.AutoResync = state, autoResync
		if err := b.client.Patch(ctx, vgr, client.MergeFrom(before), client.FieldOwner(fieldOwner)); err != nil {
			return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to set VolumeGroupReplication %s to %s: %v", key, state, err))
		}
	}
	return vgr, replication.Result{}
}

// foreignGroup says why an existing VolumeGroupReplication named like the group is not this
// VolumeReplicationGroup's, or "" when it is.
func foreignGroup(vgr *replicationv1alpha1.VolumeGroupReplication, pc *replication.PVCContext) string {
	name, ns := vgr.Labels[LabelVRGName], vgr.Labels[LabelVRGNamespace]
	if name == pc.VRG.Name && ns == pc.VRG.Namespace {
		return ""
	}
	return fmt.Sprintf("VolumeGroupReplication %s/%s exists and does not belong to VolumeReplicationGroup %s/%s (it is labelled %s=%q): delete or rename it so drover can replicate consistency group %s",
		vgr.Namespace, vgr.Name, pc.VRG.Namespace, pc.VRG.Name, LabelVRGName, name, pc.Group.Name)
}

// sameStorage is Done when the PVC's volume is of the provisioner of the group's
// VolumeGroupReplicationClass: a group's members share one storage.
func (b *Backend) sameStorage(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication, pc *replication.PVCContext) replication.Result {
	class := &replicationv1alpha1.VolumeGroupReplicationClass{}
	if err := b.client.Get(ctx, client.ObjectKey{Name: vgr.Spec.VolumeGroupReplicationClassName}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return replication.Failed(v1alpha1.ReasonConsistencyGroupUnsupported, fmt.Sprintf(
				"VolumeGroupReplicationClass %s of consistency group %s (VolumeGroupReplication %s/%s) does not exist: recreate it",
				vgr.Spec.VolumeGroupReplicationClassName, pc.Group.Name, vgr.Namespace, vgr.Name))
		}
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get VolumeGroupReplicationClass %s: %v", vgr.Spec.VolumeGroupReplicationClassName, err))
	}
	if driver := csiDriver(pc); class.Spec.Provisioner != driver {
		return replication.Failed(v1alpha1.ReasonConsistencyGroupUnsupported, fmt.Sprintf(
			"PVC %s/%s is a volume of provisioner %q, and consistency group %s replicates volumes of provisioner %s (VolumeGroupReplicationClass %s): a group's PVCs must share one storage; remove PVC %s/%s from group %s (its labels)",
			pc.PVC.Namespace, pc.PVC.Name, driver, pc.Group.Name, class.Spec.Provisioner, class.Name, pc.PVC.Namespace, pc.PVC.Name, pc.Group.Name))
	}
	return replication.Done()
}

// csiDriver is the CSI driver of the PVC's volume, "" for a volume that is not CSI.
func csiDriver(pc *replication.PVCContext) string {
	if pc.PV.Spec.CSI == nil {
		return ""
	}
	return pc.PV.Spec.CSI.Driver
}

// createGroup creates the group's VolumeGroupReplication with the one
// VolumeGroupReplicationClass of the PVC's provisioner and the VolumeReplicationClass a PVC of
// it would get on its own.
func (b *Backend) createGroup(ctx context.Context, pc *replication.PVCContext, state replicationv1alpha1.ReplicationState, autoResync bool) (*replicationv1alpha1.VolumeGroupReplication, replication.Result) {
	groupClass, res := b.selectGroupClass(ctx, pc)
	if groupClass == "" {
		return nil, res
	}
	class, res := b.selectClass(ctx, pc)
	if class == "" {
		return nil, res
	}
	contentName := ""
	if handle := pc.PVC.Annotations[v1alpha1.AnnotationConsistencyGroupHandle]; handle != "" {
		if contentName, res = b.ensureRestoredContent(ctx, pc, groupClass, handle); contentName == "" {
			return nil, res
		}
	}
	key := groupKey(pc)
	vgr := &replicationv1alpha1.VolumeGroupReplication{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{LabelVRGName: pc.VRG.Name, LabelVRGNamespace: pc.VRG.Namespace}},
		Spec: replicationv1alpha1.VolumeGroupReplicationSpec{
			VolumeGroupReplicationClassName:   groupClass,
			VolumeReplicationClassName:        class,
			VolumeGroupReplicationContentName: contentName,
			Source: replicationv1alpha1.VolumeGroupReplicationSource{Selector: &metav1.LabelSelector{
				MatchLabels: map[string]string{v1alpha1.LabelConsistencyGroup: pc.Group.Label}}},
			ReplicationState: state,
			AutoResync:       autoResync,
		},
	}
	if err := b.client.Create(ctx, vgr, client.FieldOwner(fieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("VolumeGroupReplication %s was just created", key))
		}
		return nil, replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to create VolumeGroupReplication %s: %v", key, err))
	}
	return vgr, replication.Result{}
}

// selectGroupClass returns the one VolumeGroupReplicationClass of the PVC's provisioner, or ""
// and the Result saying what is missing (the group is never replicated per volume instead).
func (b *Backend) selectGroupClass(ctx context.Context, pc *replication.PVCContext) (string, replication.Result) {
	key, driver := client.ObjectKeyFromObject(pc.PVC), csiDriver(pc)
	classes := &replicationv1alpha1.VolumeGroupReplicationClassList{}
	if err := b.client.List(ctx, classes); err != nil {
		if apimeta.IsNoMatchError(err) {
			return "", replication.Failed(v1alpha1.ReasonConsistencyGroupUnsupported, fmt.Sprintf(
				"consistency group %s: this cluster does not serve VolumeGroupReplicationClass (replication.storage.openshift.io): install csi-addons with its group replication, or remove PVC %s from the group",
				pc.Group.Name, key))
		}
		return "", replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to list VolumeGroupReplicationClasses: %v", err))
	}
	var names []string
	for _, c := range classes.Items {
		if driver != "" && c.Spec.Provisioner == driver {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	switch len(names) {
	case 1:
		return names[0], replication.Result{}
	case 0:
		return "", replication.Failed(v1alpha1.ReasonConsistencyGroupUnsupported, fmt.Sprintf(
			"no VolumeGroupReplicationClass has provisioner %q for PVC %s of consistency group %s (StorageClass %s): create a VolumeGroupReplicationClass with spec.provisioner %s, or remove PVC %s from group %s (its labels)",
			driver, key, pc.Group.Name, pc.StorageClassName, driver, key, pc.Group.Name))
	default:
		return "", replication.Failed(v1alpha1.ReasonReplicationClassAmbiguous, fmt.Sprintf(
			"VolumeGroupReplicationClasses %s all have provisioner %s for PVC %s of consistency group %s: keep one",
			strings.Join(names, ", "), driver, key, pc.Group.Name))
	}
}

// observeMember judges the group of a PVC asked to be in state: Done once the storage acted on
// the group's generation, reports the state (and, for a primary, its last operation
// completed) and lists the PVC among the group's members.
func observeMember(vgr *replicationv1alpha1.VolumeGroupReplication, pc *replication.PVCContext, state replicationv1alpha1.State) replication.Result {
	key := vgr.Namespace + "/" + vgr.Name
	completed := apimeta.FindStatusCondition(vgr.Status.Conditions, replicationv1alpha1.ConditionCompleted)
	wait := func(format string, args ...any) replication.Result {
		msg := fmt.Sprintf(format, args...)
		if vgr.Status.Message != "" {
			msg += ": " + vgr.Status.Message
		}
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, msg)
	}
	switch {
	case vgr.Status.ObservedGeneration < vgr.Generation || vgr.Status.State == "":
		return wait("waiting for the storage to act on VolumeGroupReplication %s", key)
	case vgr.Status.State != state:
		return wait("VolumeGroupReplication %s reports state %q, waiting for %s", key, vgr.Status.State, state)
	case state == replicationv1alpha1.PrimaryState && (completed == nil || completed.Status != metav1.ConditionTrue):
		return wait("VolumeGroupReplication %s is not primary yet", key)
	case !slices.ContainsFunc(vgr.Status.PersistentVolumeClaimsRefList, func(r corev1.LocalObjectReference) bool { return r.Name == pc.PVC.Name }):
		return wait("waiting for VolumeGroupReplication %s to take PVC %s in", key, pc.PVC.Name)
	}
	return replication.Done()
}

// groupStatus observes the group's last sync: the group's point, the same for every member.
func (b *Backend) groupStatus(ctx context.Context, pc *replication.PVCContext) (replication.SyncStatus, error) {
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	key := groupKey(pc)
	if err := b.client.Get(ctx, key, vgr); err != nil {
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			return replication.SyncStatus{}, nil
		}
		return replication.SyncStatus{}, fmt.Errorf("failed to get VolumeGroupReplication %s: %w", key, err)
	}
	st := replication.SyncStatus{
		ReplicationID:    vgr.Spec.VolumeReplicationClassName,
		LastSyncTime:     vgr.Status.LastSyncTime,
		LastSyncDuration: vgr.Status.LastSyncDuration,
		LastSyncBytes:    vgr.Status.LastSyncBytes,
		Primary:          vgr.Status.State == replicationv1alpha1.PrimaryState,
		DemotedInSync:    groupDemotedInSync(vgr),
	}
	class := &replicationv1alpha1.VolumeReplicationClass{}
	switch err := b.client.Get(ctx, client.ObjectKey{Name: vgr.Spec.VolumeReplicationClassName}, class); {
	case err == nil:
		st.RefreshInterval = StatusRefreshInterval(class.Spec.Parameters[SchedulingIntervalParameter])
	case !apierrors.IsNotFound(err):
		return replication.SyncStatus{}, fmt.Errorf("failed to get VolumeReplicationClass %s: %w", vgr.Spec.VolumeReplicationClassName, err)
	}
	if name := vgr.Spec.VolumeGroupReplicationContentName; name != "" {
		content := &replicationv1alpha1.VolumeGroupReplicationContent{}
		if err := b.client.Get(ctx, client.ObjectKey{Name: name}, content); client.IgnoreNotFound(err) != nil {
			return replication.SyncStatus{}, fmt.Errorf("failed to get VolumeGroupReplicationContent %s: %w", name, err)
		}
		st.GroupHandle = content.Spec.VolumeGroupReplicationHandle
	}
	return st, nil
}

// restoredContentName is the name of the VolumeGroupReplicationContent a promotion restores for
// a group (contents are cluster-scoped).
func restoredContentName(key client.ObjectKey) string {
	return "drover-" + key.Namespace + "-" + key.Name
}

// ensureRestoredContent makes the VolumeGroupReplicationContent of a group mirrored from the
// peer: the storage's group handle the PVC carries (v1alpha1.AnnotationConsistencyGroupHandle,
// restored with its metadata), so that the storage promotes the very group it mirrored, as
// csi-addons expects of a DR orchestrator. It returns the content's name, or "" and why not.
func (b *Backend) ensureRestoredContent(ctx context.Context, pc *replication.PVCContext, groupClass, handle string) (string, replication.Result) {
	name := restoredContentName(groupKey(pc))
	content := &replicationv1alpha1.VolumeGroupReplicationContent{}
	err := b.client.Get(ctx, client.ObjectKey{Name: name}, content)
	switch {
	case err == nil && content.Spec.VolumeGroupReplicationHandle == handle:
		return name, replication.Result{}
	case err == nil:
		return "", replication.Failed(v1alpha1.ReasonReplicationConflict, fmt.Sprintf(
			"VolumeGroupReplicationContent %s holds group handle %s, and PVC %s/%s was replicated in group %s: delete the content so drover can restore consistency group %s",
			name, content.Spec.VolumeGroupReplicationHandle, pc.PVC.Namespace, pc.PVC.Name, handle, pc.Group.Name))
	case !apierrors.IsNotFound(err):
		return "", replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get VolumeGroupReplicationContent %s: %v", name, err))
	}
	content = &replicationv1alpha1.VolumeGroupReplicationContent{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelVRGName: pc.VRG.Name, LabelVRGNamespace: pc.VRG.Namespace}},
		Spec: replicationv1alpha1.VolumeGroupReplicationContentSpec{
			VolumeGroupReplicationHandle: handle, Provisioner: csiDriver(pc), VolumeGroupReplicationClassName: groupClass,
			Source: replicationv1alpha1.VolumeGroupReplicationContentSource{VolumeHandles: []string{pc.PV.Spec.CSI.VolumeHandle}},
		},
	}
	if err := b.client.Create(ctx, content, client.FieldOwner(fieldOwner)); client.IgnoreAlreadyExists(err) != nil {
		return "", replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to create VolumeGroupReplicationContent %s: %v", name, err))
	}
	return name, replication.Result{}
}

// groupDemotedInSync is demotedInSync for a group: its status is its VolumeReplication's, whose
// conditions carry that object's generations, so only the group's observedGeneration is
// compared.
func groupDemotedInSync(vgr *replicationv1alpha1.VolumeGroupReplication) bool {
	if vgr.Spec.ReplicationState != replicationv1alpha1.Secondary || vgr.Status.State != replicationv1alpha1.SecondaryState ||
		vgr.Status.ObservedGeneration != vgr.Generation {
		return false
	}
	is := func(t string, want metav1.ConditionStatus) bool {
		c := apimeta.FindStatusCondition(vgr.Status.Conditions, t)
		return c != nil && c.Status == want
	}
	return is(replicationv1alpha1.ConditionCompleted, metav1.ConditionTrue) && is(replicationv1alpha1.ConditionDegraded, metav1.ConditionFalse) &&
		!is(replicationv1alpha1.ConditionResyncing, metav1.ConditionTrue)
}

// demoteMember sets the PVC's group to secondary (with autoResync when resync) and is Done once
// the storage reports it Secondary. A PVC without a group gets a secondary one.
func (b *Backend) demoteMember(ctx context.Context, pc *replication.PVCContext, resync bool) replication.Result {
	if res, gone := b.releaseOwn(ctx, pc); !gone {
		return res
	}
	vgr, res := b.ensureGroup(ctx, pc, replicationv1alpha1.Secondary, resync)
	if vgr == nil {
		return res
	}
	return observeMember(vgr, pc, replicationv1alpha1.SecondaryState)
}

// memberDemoted reports, from the cache, whether the PVC's group is asked to be secondary with
// resync as given and reported so with the PVC among its members.
func (b *Backend) memberDemoted(ctx context.Context, pc *replication.PVCContext, resync bool) bool {
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	if err := b.client.Get(ctx, groupKey(pc), vgr); err != nil {
		return false
	}
	return foreignGroup(vgr, pc) == "" && vgr.Spec.ReplicationState == replicationv1alpha1.Secondary && vgr.Spec.AutoResync == resync &&
		observeMember(vgr, pc, replicationv1alpha1.SecondaryState).IsDone()
}

// observeMemberProtection is ObserveProtection for a member: what protectMember would return,
// known only when it has nothing left to write.
func (b *Backend) observeMemberProtection(ctx context.Context, pc *replication.PVCContext) (replication.Result, bool) {
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	if err := b.client.Get(ctx, groupKey(pc), vgr); err != nil || foreignGroup(vgr, pc) != "" ||
		vgr.Spec.ReplicationState != replicationv1alpha1.Primary || vgr.Spec.AutoResync {
		return replication.Result{}, false
	}
	return observeMember(vgr, pc, replicationv1alpha1.PrimaryState), true
}

// cleanupMember deletes the PVC's own VolumeReplication, if one is left, and its group's
// VolumeGroupReplication (promoted first when the VolumeReplicationGroup asks to release its
// volumes as primaries, as Cleanup says for one volume); Done once both are gone. csi-addons
// releases every member (its finalizer) once the group's VolumeReplication and content are
// gone.
func (b *Backend) cleanupMember(ctx context.Context, pc *replication.PVCContext) replication.Result {
	if res, gone := b.releaseOwn(ctx, pc); !gone {
		return res
	}
	key := groupKey(pc)
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	if err := b.client.Get(ctx, key, vgr); err != nil {
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			return replication.Done()
		}
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to get VolumeGroupReplication %s: %v", key, err))
	}
	if foreignGroup(vgr, pc) != "" {
		return replication.Done()
	}
	if !vgr.DeletionTimestamp.IsZero() {
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf(
			"waiting for the storage to release VolumeGroupReplication %s: %s", key, vgr.Status.Message))
	}
	if pc.VRG.Annotations[v1alpha1.AnnotationUnprotectAsPrimary] == "true" && vgr.Status.State != replicationv1alpha1.PrimaryState {
		if _, res := b.ensureGroup(ctx, pc, replicationv1alpha1.Primary, false); res.Outcome != replication.OutcomeDone && res.Reason != "" {
			return res
		}
		return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf(
			"promoting VolumeGroupReplication %s before deleting it, so that its storage disables its mirroring and keeps the data as ordinary volumes", key))
	}
	if err := b.client.Delete(ctx, vgr); client.IgnoreNotFound(err) != nil {
		return replication.Retry(retryAfterError, v1alpha1.ReasonError, fmt.Sprintf("failed to delete VolumeGroupReplication %s: %v", key, err))
	}
	return replication.Retry(pollInterval, v1alpha1.ReasonProgressing, fmt.Sprintf("waiting for the storage to release VolumeGroupReplication %s", key))
}
