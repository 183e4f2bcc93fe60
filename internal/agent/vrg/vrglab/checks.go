package vrglab

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/lab/records"
	"github.com/drover-io/drover/internal/lab/storage"
)

// SetRole sets a group's replicationState and action.
func SetRole(ctx context.Context, g gomega.Gomega, cl client.Client, group *v1alpha1.VolumeReplicationGroup, state v1alpha1.ReplicationState, action v1alpha1.DRAction) {
	g.Eventually(func(g gomega.Gomega) {
		got := &v1alpha1.VolumeReplicationGroup{}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(gomega.Succeed())
		got.Spec.ReplicationState, got.Spec.Action = state, action
		g.Expect(cl.Update(ctx, got)).To(gomega.Succeed())
	}).Should(gomega.Succeed())
}

// ScaleTo sets a StatefulSet's replicas with a merge patch, which carries no resourceVersion and
// so cannot conflict with the StatefulSet controller's own writes.
func ScaleTo(ctx context.Context, g gomega.Gomega, cl client.Client, key client.ObjectKey, replicas int32) {
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	g.Expect(cl.Patch(ctx, sts, client.RawPatch(types.MergePatchType, patch))).To(gomega.Succeed())
}

// ImageReport verifies the records of a PVC's image on a cluster's lab storage.
func ImageReport(g gomega.Gomega, cluster, handle string) records.Report {
	report, err := records.Verify(storage.VolumePath(filepath.Join(testLab.Dir(), cluster, "storage"), handle))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return report
}

// ConditionOf returns the condition of type t, or one of status Unknown when there is none.
func ConditionOf(conditions []metav1.Condition, t string) metav1.Condition {
	if c := apimeta.FindStatusCondition(conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{Type: t, Status: metav1.ConditionUnknown}
}

// PVCCondition is a condition of the group's protectedPVCs entry for PVC name; of status Unknown
// when the entry or the condition is absent.
func PVCCondition(vrg *v1alpha1.VolumeReplicationGroup, name, condType string) metav1.Condition {
	for _, p := range vrg.Status.ProtectedPVCs {
		if p.Name == name {
			return ConditionOf(p.Conditions, condType)
		}
	}
	return metav1.Condition{Type: condType, Status: metav1.ConditionUnknown}
}

// ExpectEvents waits until the group has an event of each reason (the agent's recorder sends
// them asynchronously) and returns the notes by reason.
func ExpectEvents(ctx context.Context, g gomega.Gomega, cl client.Client, group client.Object, reasons ...string) map[string][]string {
	notes := map[string][]string{}
	g.Eventually(func(g gomega.Gomega) {
		list := &eventsv1.EventList{}
		g.Expect(cl.List(ctx, list, client.InNamespace(group.GetNamespace()))).To(gomega.Succeed())
		notes = map[string][]string{}
		for _, e := range list.Items {
			if e.Regarding.Kind == "VolumeReplicationGroup" && e.Regarding.Name == group.GetName() {
				notes[e.Reason] = append(notes[e.Reason], e.Note)
			}
		}
		for _, r := range reasons {
			g.Expect(notes).To(gomega.HaveKey(r), "events of VolumeReplicationGroup %s/%s", group.GetNamespace(), group.GetName())
		}
	}).WithTimeout(30 * time.Second).Should(gomega.Succeed())
	return notes
}

// SettledWork counts, between two snapshots of Writes, what a cluster's agent should not do for
// a settled relocated group in namespace ns: check the fence live (its pods listed or probed
// with a dry-run create, the namespace read), patch the group or patch its status.
func SettledWork(cluster string, before, after map[WriteKey]int, ns string) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if k.Cluster != cluster || k.Namespace != ns || v == before[k] {
			continue
		}
		switch {
		case k.What == "pods" && k.Read:
			out["read pods"] += v - before[k]
		case k.What == "pods":
			out["create pods"] += v - before[k]
		case k.What == "namespaces" && k.Read:
			out["read namespace"] += v - before[k]
		case k.What == "volumereplicationgroups" && !k.Read:
			out["patch group"] += v - before[k]
		case k.What == "volumereplicationgroups/status" && !k.Read:
			out["patch status"] += v - before[k]
		}
	}
	return out
}
