package csiaddons

// The lab's csi-addons VolumeGroupReplication: consistency groups of volumes, modelled on
// csi-addons/kubernetes-csi-addons d4d7fea4, internal/controller/replication.storage/
// (volumegroupreplication_controller.go, volumegroupreplicationcontent_controller.go,
// volumereplication_controller.go for a dataSource of kind VolumeGroupReplication, finalizers.go,
// pvc.go) with ceph-csi's RBD group mirroring (ceph/ceph-csi 0dad1762,
// internal/rbd/group/group_mirror.go):
//
//   - a VolumeGroupReplication selects the PVCs of its namespace by label (spec.source.selector,
//     immutable); PVCs being deleted without its finalizer are left out, at most 100 PVCs (the
//     controller's default max-group-pvc) are accepted, and each must be bound to a volume of the
//     VolumeGroupReplicationClass's provisioner, or the reconcile fails with the reason in
//     status.message and is retried.
//   - the controller annotates each member PVC with replication.storage.openshift.io/
//     volume-group-replication-name and adds the finalizer replication.storage.openshift.io/
//     vgr-protection; a PVC that left the selector (it was in status.persistentVolumeClaimsRefList)
//     loses both. A PVC owned by a VolumeReplication cannot join a group, nor the reverse. A
//     member PVC being deleted stays Terminating until it leaves the group or the group goes.
//   - it creates the VolumeGroupReplicationContent vgrcontent-<uid> (or the one
//     spec.volumeGroupReplicationContentName names, which must exist: a content restored on the
//     peer with its group handle, as a DR orchestrator restores it), with the members' volume
//     handles, sorted; the content's controller creates the storage's group (its handle,
//     volumeGroupReplicationHandle) and lists the PVs in its status (volgroup_content.go).
//   - once the group has a handle, it creates one VolumeReplication, vr-<uid> (or
//     spec.volumeReplicationName), owned by the VolumeGroupReplication, with dataSource
//     {apiGroup replication.storage.openshift.io, kind VolumeGroupReplication} and the group's
//     replicationState and autoResync; that VolumeReplication is the per-volume model (volrep.go)
//     applied to the group (volgroup_image.go): promotion, demotion, resync and conditions as for
//     one volume, and a mirror that copies every member at one instant and applies them on the
//     peer as one (volgroup_mirror.go). The VolumeGroupReplication's status is its
//     VolumeReplication's, copied at each of its reconciles, with the member PVCs.
//   - what starts a reconcile is upstream's: a change of the VolumeGroupReplication's generation,
//     a status change of its VolumeReplication, a change of its content, and a change of a
//     matching PVC's generation. A label added to or removed from a PVC changes no generation: a
//     PVC joins or leaves the group at the group's next reconcile, which a primary's status
//     refresh brings every InfoReconcileInterval.
//   - deletion (volgroup_delete.go): the VolumeReplication is deleted first (mirroring of the
//     group disabled, as for one image), then the content; only once both are gone are the PVCs
//     released and the VolumeGroupReplication's finalizer removed.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	replicationv1alpha1 "github.com/drover-io/drover/internal/extapi/replication/v1alpha1"
)

const (
	// VGRProtectionFinalizer is the finalizer csi-addons puts on a VolumeGroupReplication, its
	// content and its member PVCs.
	VGRProtectionFinalizer = "replication.storage.openshift.io/vgr-protection"
	// VolumeGroupReplicationNameAnnotation names, on a member PVC, its VolumeGroupReplication.
	VolumeGroupReplicationNameAnnotation = "replication.storage.openshift.io/volume-group-replication-name"
	// VolumeGroupReplicationContentNameAnnotation names, on a VolumeGroupReplication, its content.
	VolumeGroupReplicationContentNameAnnotation = "replication.storage.openshift.io/volume-group-replication-content-name"
	// volumeGroupRefAnnotation names, on a group's VolumeReplication and content,
	// <namespace>/<name> of the VolumeGroupReplication.
	volumeGroupRefAnnotation = "replication.storage.openshift.io/volumegroupref"
	// volumeGroupReplicationKind is the dataSource kind of a group's VolumeReplication.
	volumeGroupReplicationKind = "VolumeGroupReplication"
	// maxGroupPVCs is csi-addons' default max-group-pvc.
	maxGroupPVCs = 100
	// vgrRequeue is csi-addons' defaultRequeueForVGResources.
	vgrRequeue = 15 * time.Second
)

func setupVolGroup(mgr ctrl.Manager, s *store) error {
	if err := ctrl.NewControllerManagedBy(mgr).Named("lab-vgr").
		For(&replicationv1alpha1.VolumeGroupReplication{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&replicationv1alpha1.VolumeReplication{}, handler.EnqueueRequestsFromMapFunc(groupRefToVGR)).
		Watches(&replicationv1alpha1.VolumeGroupReplicationContent{}, handler.EnqueueRequestsFromMapFunc(groupRefToVGR)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(s.pvcToVGRs),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(reconcileFunc(s.reconcileVGR)); err != nil {
		return err
	}
	return setupVolGroupContent(mgr, s)
}

// reconcileFunc is a reconcile function as a controller-runtime Reconciler.
type reconcileFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcileFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

// groupRefToVGR maps a group's VolumeReplication or content to its VolumeGroupReplication.
func groupRefToVGR(_ context.Context, obj client.Object) []reconcile.Request {
	ns, name, ok := strings.Cut(obj.GetAnnotations()[volumeGroupRefAnnotation], "/")
	if !ok || ns == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// pvcToVGRs maps a PVC to the VolumeGroupReplications of its namespace whose selector matches it.
func (s *store) pvcToVGRs(ctx context.Context, obj client.Object) []reconcile.Request {
	var list replicationv1alpha1.VolumeGroupReplicationList
	if err := s.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, vgr := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(vgr.Spec.Source.Selector)
		if err == nil && sel.Matches(labels.Set(obj.GetLabels())) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vgr)})
		}
	}
	return reqs
}

// groupMember is a PVC of a group and its volume.
type groupMember struct {
	pvc    corev1.PersistentVolumeClaim
	pv     string
	handle string
}

func (s *store) reconcileVGR(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vgr := &replicationv1alpha1.VolumeGroupReplication{}
	if err := s.Client.Get(ctx, req.NamespacedName, vgr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vgr.DeletionTimestamp.IsZero() {
		return s.deleteVGR(ctx, vgr)
	}
	if err := patchMeta(ctx, s.Client, vgr, func() { controllerutil.AddFinalizer(vgr, VGRProtectionFinalizer) }); err != nil {
		return ctrl.Result{}, err
	}
	class := &replicationv1alpha1.VolumeGroupReplicationClass{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: vgr.Spec.VolumeGroupReplicationClassName}, class); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		return s.groupFailure(ctx, vgr, fmt.Sprintf("VolumeGroupReplicationClass %s not found", vgr.Spec.VolumeGroupReplicationClassName))
	}
	members, problem, err := s.groupMembers(ctx, vgr, class)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem == "" {
		problem, err = s.protectMembers(ctx, vgr, members)
	}
	if err != nil || problem != "" {
		return s.groupFailureOr(ctx, vgr, problem, err)
	}
	content, problem, err := s.ensureContent(ctx, vgr, class, members)
	if err != nil || problem != "" {
		return s.groupFailureOr(ctx, vgr, problem, err)
	}
	if content.Spec.VolumeGroupReplicationHandle == "" {
		// The storage is still grouping the volumes; the content's change brings the next reconcile.
		return ctrl.Result{RequeueAfter: volRepWaitRetry}, s.patchGroupStatus(ctx, vgr, members, nil)
	}
	vr, err := s.ensureGroupVR(ctx, vgr)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, s.patchGroupStatus(ctx, vgr, members, &vr.Status)
}

// groupMembers lists the group's PVCs as upstream's getMatchingPVCsFromSource and
// getPVInfoForPVCs do; problem says why the group cannot be formed now.
func (s *store) groupMembers(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication, class *replicationv1alpha1.VolumeGroupReplicationClass) ([]groupMember, string, error) {
	sel, err := metav1.LabelSelectorAsSelector(vgr.Spec.Source.Selector)
	if err != nil {
		return nil, fmt.Sprintf("spec.source.selector is not valid: %v", err), nil
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := s.Client.List(ctx, &pvcs, client.InNamespace(vgr.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, "", fmt.Errorf("failed to list the PVCs of VolumeGroupReplication %s/%s: %w", vgr.Namespace, vgr.Name, err)
	}
	var members []groupMember
	for _, pvc := range pvcs.Items {
		if !pvc.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(&pvc, VGRProtectionFinalizer) {
			continue // deleted before it joined the group
		}
		members = append(members, groupMember{pvc: pvc})
	}
	if len(members) > maxGroupPVCs {
		return nil, fmt.Sprintf("more than %d PVCs match the given selector", maxGroupPVCs), nil
	}
	slices.SortFunc(members, func(a, b groupMember) int { return strings.Compare(a.pvc.Name, b.pvc.Name) })
	for i := range members {
		m := &members[i]
		if m.pvc.Spec.VolumeName == "" || m.pvc.Status.Phase != corev1.ClaimBound {
			return nil, fmt.Sprintf("PVC %s/%s is not bound yet", m.pvc.Namespace, m.pvc.Name), nil
		}
		pv := &corev1.PersistentVolume{}
		if err := s.Client.Get(ctx, client.ObjectKey{Name: m.pvc.Spec.VolumeName}, pv); err != nil {
			return nil, "", fmt.Errorf("failed to get PV %s of PVC %s/%s: %w", m.pvc.Spec.VolumeName, m.pvc.Namespace, m.pvc.Name, err)
		}
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != class.Spec.Provisioner || !s.Ours(pv.Spec.CSI.Driver) {
			return nil, fmt.Sprintf("PV %s of PVC %s is not a volume of VolumeGroupReplicationClass %s's provisioner %s", pv.Name, m.pvc.Name, class.Name, class.Spec.Provisioner), nil
		}
		m.pv, m.handle = pv.Name, pv.Spec.CSI.VolumeHandle
	}
	return members, "", nil
}

// ensureContent creates or updates the group's content with the members' volume handles.
// problem is set while a content the VolumeGroupReplication names does not exist.
func (s *store) ensureContent(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication, class *replicationv1alpha1.VolumeGroupReplicationClass, members []groupMember) (*replicationv1alpha1.VolumeGroupReplicationContent, string, error) {
	name := vgr.Spec.VolumeGroupReplicationContentName
	named := name != ""
	if !named {
		name = "vgrcontent-" + string(vgr.UID)
	}
	handles := make([]string, 0, len(members))
	for _, m := range members {
		handles = append(handles, m.handle)
	}
	slices.Sort(handles)
	ref := &corev1.ObjectReference{APIVersion: replicationv1alpha1.GroupVersion.String(), Kind: volumeGroupReplicationKind,
		Namespace: vgr.Namespace, Name: vgr.Name, UID: vgr.UID}
	content := &replicationv1alpha1.VolumeGroupReplicationContent{}
	err := s.Client.Get(ctx, client.ObjectKey{Name: name}, content)
	switch {
	case client.IgnoreNotFound(err) != nil:
		return nil, "", err
	case err != nil && named:
		return nil, fmt.Sprintf("dependent VolumeGroupReplicationContent %s is not yet created, waiting for it to be created", name), nil
	case err != nil:
		content = &replicationv1alpha1.VolumeGroupReplicationContent{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{volumeGroupRefAnnotation: vgr.Namespace + "/" + vgr.Name}},
			Spec: replicationv1alpha1.VolumeGroupReplicationContentSpec{VolumeGroupReplicationRef: ref, Provisioner: class.Spec.Provisioner,
				VolumeGroupReplicationClassName: vgr.Spec.VolumeGroupReplicationClassName,
				Source:                          replicationv1alpha1.VolumeGroupReplicationContentSource{VolumeHandles: handles}},
		}
		if err := s.Client.Create(ctx, content); err != nil {
			return nil, "", fmt.Errorf("failed to create VolumeGroupReplicationContent %s: %w", name, err)
		}
	default:
		if err := patchMeta(ctx, s.Client, content, func() {
			metav1.SetMetaDataAnnotation(&content.ObjectMeta, volumeGroupRefAnnotation, vgr.Namespace+"/"+vgr.Name)
			if content.Spec.VolumeGroupReplicationRef == nil {
				content.Spec.VolumeGroupReplicationRef = ref
			}
			content.Spec.Source.VolumeHandles = handles
		}); err != nil {
			return nil, "", fmt.Errorf("failed to update VolumeGroupReplicationContent %s: %w", name, err)
		}
	}
	if !named {
		if err := patchMeta(ctx, s.Client, vgr, func() { vgr.Spec.VolumeGroupReplicationContentName = name }); err != nil {
			return nil, "", err
		}
	}
	return content, "", nil
}

// ensureGroupVR creates the group's VolumeReplication or brings its replicationState and
// autoResync to the VolumeGroupReplication's.
func (s *store) ensureGroupVR(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication) (*replicationv1alpha1.VolumeReplication, error) {
	name := vgr.Spec.VolumeReplicationName
	if name == "" {
		name = "vr-" + string(vgr.UID)
	}
	vr := &replicationv1alpha1.VolumeReplication{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: vgr.Namespace, Name: name}, vr)
	switch {
	case client.IgnoreNotFound(err) != nil:
		return nil, err
	case err != nil:
		group := replicationv1alpha1.GroupVersion.Group
		vr = &replicationv1alpha1.VolumeReplication{
			ObjectMeta: metav1.ObjectMeta{Namespace: vgr.Namespace, Name: name,
				Annotations: map[string]string{volumeGroupRefAnnotation: vgr.Namespace + "/" + vgr.Name}},
			Spec: replicationv1alpha1.VolumeReplicationSpec{
				VolumeReplicationClass: vgr.Spec.VolumeReplicationClassName,
				DataSource:             corev1.TypedLocalObjectReference{APIGroup: &group, Kind: volumeGroupReplicationKind, Name: vgr.Name},
				ReplicationState:       vgr.Spec.ReplicationState, AutoResync: vgr.Spec.AutoResync,
			},
		}
		if err := controllerutil.SetControllerReference(vgr, vr, s.Client.Scheme()); err != nil {
			return nil, err
		}
		if err := s.Client.Create(ctx, vr); err != nil {
			return nil, fmt.Errorf("failed to create VolumeReplication %s/%s of VolumeGroupReplication %s: %w", vgr.Namespace, name, vgr.Name, err)
		}
	case vr.Spec.ReplicationState != vgr.Spec.ReplicationState || vr.Spec.AutoResync != vgr.Spec.AutoResync:
		if err := patchMeta(ctx, s.Client, vr, func() {
			vr.Spec.ReplicationState, vr.Spec.AutoResync = vgr.Spec.ReplicationState, vgr.Spec.AutoResync
		}); err != nil {
			return nil, fmt.Errorf("failed to update VolumeReplication %s/%s of VolumeGroupReplication %s: %w", vgr.Namespace, name, vgr.Name, err)
		}
	}
	if vgr.Spec.VolumeReplicationName == "" {
		if err := patchMeta(ctx, s.Client, vgr, func() { vgr.Spec.VolumeReplicationName = name }); err != nil {
			return nil, err
		}
	}
	return vr, nil
}

// patchGroupStatus writes the members and, once the VolumeReplication exists, its status.
func (s *store) patchGroupStatus(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication, members []groupMember, vrStatus *replicationv1alpha1.VolumeReplicationStatus) error {
	before := vgr.DeepCopy()
	refs := make([]corev1.LocalObjectReference, 0, len(members))
	for _, m := range members {
		refs = append(refs, corev1.LocalObjectReference{Name: m.pvc.Name})
	}
	vgr.Status.PersistentVolumeClaimsRefList = refs
	if vrStatus != nil {
		vgr.Status.VolumeReplicationStatus = *vrStatus.DeepCopy()
	}
	vgr.Status.ObservedGeneration = vgr.Generation
	return patchStatusIfChanged(ctx, s.Client, vgr, before)
}

// groupFailureOr returns err, or reports problem as upstream's setGroupReplicationFailure does.
func (s *store) groupFailureOr(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication, problem string, err error) (ctrl.Result, error) {
	if err != nil {
		return ctrl.Result{}, err
	}
	return s.groupFailure(ctx, vgr, problem)
}

// groupFailure is upstream's setGroupReplicationFailure: the state kept (Unknown before any),
// the message the reason; the reconcile is retried.
func (s *store) groupFailure(ctx context.Context, vgr *replicationv1alpha1.VolumeGroupReplication, problem string) (ctrl.Result, error) {
	before := vgr.DeepCopy()
	if vgr.Status.State == "" {
		vgr.Status.State = replicationv1alpha1.UnknownState
	}
	vgr.Status.Message = problem
	vgr.Status.ObservedGeneration = vgr.Generation
	return ctrl.Result{RequeueAfter: volRepWaitRetry}, patchStatusIfChanged(ctx, s.Client, vgr, before)
}

// patchMeta applies change to obj and patches what changed (metadata or spec) with an
// optimistic lock; nothing is sent when nothing changed.
func patchMeta[T client.Object](ctx context.Context, c client.Client, obj T, change func()) error {
	before, ok := obj.DeepCopyObject().(T)
	if !ok {
		return fmt.Errorf("failed to copy %T %s", obj, obj.GetName())
	}
	change()
	if equality.Semantic.DeepEqual(before, obj) {
		return nil
	}
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("failed to patch %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}
