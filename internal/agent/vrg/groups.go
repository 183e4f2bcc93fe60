package vrg

// Consistency groups (docs/decisions/0009-consistency-groups.md). On a primary, each pass
// resolves which of spec.consistencyGroups selects each PVC (assignGroups): a PVC one group
// selects is labelled v1alpha1.LabelConsistencyGroup=<group label> before any member is
// protected, so that the storage's group, created by the first member's Protect, finds every
// member at once; the backend then replicates it only as a member (replication.GroupContext).
// A PVC two groups select, or a group's PVC in another namespace than the group's first, is
// refused with reason ConsistencyGroupUnsupported and not protected at all: drover never
// falls back to replicating a member on its own. A demotion or an unprotection, which may
// follow a restore with no spec to compare against, reads the group from the PVC's label.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/replication"
)

// maxLabelValue is the longest label value the API server accepts.
const maxLabelValue = 63

// GroupLabel is the value of v1alpha1.LabelConsistencyGroup on the members of a
// VolumeReplicationGroup's consistency group: <vrg>.<group>; when that passes 63 characters, a
// hash of it, a dash and as much of its end as fits (so the group's name, or its end, still
// shows).
func GroupLabel(vrgName, group string) string {
	v := vrgName + "." + group
	if len(v) <= maxLabelValue {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	h := hex.EncodeToString(sum[:])[:10]
	tail := strings.TrimLeft(v[len(v)-(maxLabelValue-len(h)-1):], "-.")
	return h + "-" + tail
}

// groupSelectors parses spec.consistencyGroups' selectors.
func groupSelectors(vrg *v1alpha1.VolumeReplicationGroup) (map[string]labels.Selector, error) {
	out := map[string]labels.Selector{}
	for _, g := range vrg.Spec.ConsistencyGroups {
		sel, err := metav1.LabelSelectorAsSelector(&g.Selector)
		if err != nil {
			return nil, fmt.Errorf("spec.consistencyGroups %s: selector is invalid: %w", g.Name, err)
		}
		out[g.Name] = sel
	}
	return out, nil
}

// assignGroups resolves each selected PVC's consistency group (ps.group) or why it cannot be in
// one (ps.groupProblem), and labels the members. sc.pvcs are sorted, so a group's namespace is
// its first member's in every pass.
func (r *Reconciler) assignGroups(ctx context.Context, sc *scope) error {
	if len(sc.vrg.Spec.ConsistencyGroups) == 0 {
		return nil
	}
	selectors, err := groupSelectors(sc.vrg)
	if err != nil {
		return err // parseSpec refused it already
	}
	namespaces := map[string]string{}
	for _, ps := range sc.pvcs {
		var names []string
		for _, g := range sc.vrg.Spec.ConsistencyGroups {
			if selectors[g.Name].Matches(labels.Set(ps.pvc.Labels)) {
				names = append(names, g.Name)
			}
		}
		switch {
		case len(names) > 1:
			ps.groupProblem = fmt.Sprintf("PVC %s is selected by consistency groups %s: a PVC belongs to at most one group; change its labels or the groups' selectors",
				ps.key(), strings.Join(names, " and "))
		case len(names) == 1 && namespaces[names[0]] != "" && namespaces[names[0]] != ps.pvc.Namespace:
			ps.groupProblem = fmt.Sprintf("PVC %s is selected by consistency group %s, whose PVCs are in namespace %s: a group's PVCs must share a namespace; remove PVC %s from group %s (its labels)",
				ps.key(), names[0], namespaces[names[0]], ps.key(), names[0])
		case len(names) == 1:
			namespaces[names[0]] = ps.pvc.Namespace
			ps.group = &replication.GroupContext{Name: names[0], Label: GroupLabel(sc.vrg.Name, names[0])}
		}
	}
	return forEachPVC(sc, func(ps *pvcState) error {
		if !ps.pvc.DeletionTimestamp.IsZero() {
			return nil
		}
		if ps.group == nil {
			return retryOnConflict(ps, r.unlabelMember(ctx, sc.vrg, ps))
		}
		if ps.pvc.Labels[v1alpha1.LabelConsistencyGroup] == ps.group.Label {
			return nil
		}
		return retryOnConflict(ps, r.labelMember(ctx, ps))
	})
}

// unlabelMember takes a PVC that no group selects any more out of the group its label names
// (one of this VolumeReplicationGroup's): the storage's group lets it go at its next reconcile,
// and the PVC is then replicated on its own (until then csi-addons refuses its own
// VolumeReplication, and the PVC waits).
func (r *Reconciler) unlabelMember(ctx context.Context, vrg *v1alpha1.VolumeReplicationGroup, ps *pvcState) error {
	if labelledGroup(vrg, ps.pvc.Labels) == nil {
		return nil
	}
	before := ps.pvc.DeepCopy()
	delete(ps.pvc.Labels, v1alpha1.LabelConsistencyGroup)
	delete(ps.pvc.Annotations, v1alpha1.AnnotationConsistencyGroupHandle)
	if err := r.Client.Patch(ctx, ps.pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to take PVC %s out of its consistency group: %w", klog.KObj(ps.pvc), err)
	}
	return nil
}

// refusedForGroup reports whether the PVC cannot be protected in its consistency group, and
// then sets ps.result: it is never protected on its own, since the application asked for it
// to share an instant. Only VolRep replicates groups so far; ps.backend is checked once known.
func refusedForGroup(ps *pvcState) bool {
	switch {
	case ps.groupProblem != "":
		ps.result = replication.Failed(v1alpha1.ReasonConsistencyGroupUnsupported, ps.groupProblem)
	case ps.group != nil && ps.backend != "" && ps.backend != v1alpha1.BackendVolRep:
		ps.result = replication.Failed(v1alpha1.ReasonConsistencyGroupUnsupported, fmt.Sprintf(
			"PVC %s of consistency group %s is replicated by %s, which drover does not replicate as a group yet: remove PVC %s from group %s (its labels) or replicate its StorageClass %s with %s",
			ps.key(), ps.group.Name, ps.backend, ps.key(), ps.group.Name, ps.storageClass, v1alpha1.BackendVolRep))
	default:
		return false
	}
	return true
}

// labelMember puts the group's label on a member PVC.
func (r *Reconciler) labelMember(ctx context.Context, ps *pvcState) error {
	before := ps.pvc.DeepCopy()
	metav1.SetMetaDataLabel(&ps.pvc.ObjectMeta, v1alpha1.LabelConsistencyGroup, ps.group.Label)
	if err := r.Client.Patch(ctx, ps.pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to label PVC %s for consistency group %s: %w", klog.KObj(ps.pvc), ps.group.Name, err)
	}
	return nil
}

// recordGroupHandle annotates a member PVC with the storage's handle of its group
// (v1alpha1.AnnotationConsistencyGroupHandle) before its metadata is stored: the peer's
// promotion restores the group under that handle.
func (r *Reconciler) recordGroupHandle(ctx context.Context, ps *pvcState) error {
	h := ps.sync.GroupHandle
	if ps.group == nil || h == "" || ps.pvc.Annotations[v1alpha1.AnnotationConsistencyGroupHandle] == h {
		return nil
	}
	before := ps.pvc.DeepCopy()
	metav1.SetMetaDataAnnotation(&ps.pvc.ObjectMeta, v1alpha1.AnnotationConsistencyGroupHandle, h)
	if err := r.Client.Patch(ctx, ps.pvc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(fieldOwner)); err != nil {
		return fmt.Errorf("failed to record the handle of consistency group %s on PVC %s: %w", ps.group.Name, klog.KObj(ps.pvc), err)
	}
	return nil
}

// labelledGroup is the consistency group a PVC's label names among the VolumeReplicationGroup's
// groups; nil when it names none of them.
func labelledGroup(vrg *v1alpha1.VolumeReplicationGroup, l map[string]string) *replication.GroupContext {
	v, ok := l[v1alpha1.LabelConsistencyGroup]
	if !ok {
		return nil
	}
	for _, g := range vrg.Spec.ConsistencyGroups {
		if GroupLabel(vrg.Name, g.Name) == v {
			return &replication.GroupContext{Name: g.Name, Label: v}
		}
	}
	return nil
}

// groupName is the name of the PVC's consistency group, "" when it has none.
func (p *pvcState) groupName() string {
	if p.group == nil {
		return ""
	}
	return p.group.Name
}

// groupsStatus builds status.consistencyGroups: per group of the spec, its members, its
// backend, its point (every member reports the group's) and whether its members hold the
// asked role (DataReady) and replicate (DataProtected).
func groupsStatus(vrg *v1alpha1.VolumeReplicationGroup, pvcs []*pvcState, previous []v1alpha1.ConsistencyGroupStatus) []v1alpha1.ConsistencyGroupStatus {
	var out []v1alpha1.ConsistencyGroupStatus
	for _, g := range vrg.Spec.ConsistencyGroups {
		st := v1alpha1.ConsistencyGroupStatus{Name: g.Name}
		if i := slices.IndexFunc(previous, func(p v1alpha1.ConsistencyGroupStatus) bool { return p.Name == g.Name }); i >= 0 {
			st.Conditions = previous[i].Conditions
		}
		var members []*pvcState
		for _, ps := range pvcs {
			if ps.groupName() == g.Name {
				members = append(members, ps)
				st.Members = append(st.Members, ps.pvc.Name)
				st.Namespace, st.Backend = ps.pvc.Namespace, ps.backend
			}
		}
		if vrg.Spec.ReplicationState == v1alpha1.ReplicationStatePrimary {
			st.LastSyncTime = lastGroupSyncTime(members)
		}
		for _, c := range groupConditions(g.Name, members) {
			setConditionStatus(vrg, &st.Conditions, c.Type, c.Status, c.Reason, c.Message)
		}
		out = append(out, st)
	}
	return out
}

// groupConditions are a group's DataReady and DataProtected, from its members'.
func groupConditions(name string, members []*pvcState) []metav1.Condition {
	if len(members) == 0 {
		msg := fmt.Sprintf("no selected PVC is in consistency group %s", name)
		return []metav1.Condition{
			condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSucceeded, msg),
			condition(v1alpha1.ConditionDataProtected, true, v1alpha1.ReasonSucceeded, msg),
		}
	}
	ready := condition(v1alpha1.ConditionDataReady, true, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("the %d PVCs of consistency group %s hold the asked role as one group", len(members), name))
	if reason, msg, n := firstProblem(members, v1alpha1.ConditionDataReady); n > 0 {
		ready = condition(v1alpha1.ConditionDataReady, false, reason, andMore(msg, n))
	}
	protected := condition(v1alpha1.ConditionDataProtected, true, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("the %d PVCs of consistency group %s replicate from one instant", len(members), name))
	if reason, msg, n := firstProblem(members, v1alpha1.ConditionDataProtected); n > 0 {
		protected = condition(v1alpha1.ConditionDataProtected, false, reason, andMore(msg, n))
	}
	return []metav1.Condition{ready, protected}
}
