package day2

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/cli"
)

// capturedAtAnnotation is where the agent records, on a primary group, the time of the last
// capture of the application's objects that changed a store.
const capturedAtAnnotation = "drover.io/kube-objects-captured-at"

// application runs the checks of `drover validate application`.
func (v *validator) application(ctx context.Context, hub client.Client, o ValidateOptions) error {
	a, err := cli.LoadApp(ctx, hub, o.Namespace, o.App)
	if err != nil {
		return err
	}
	d := a.DRPC
	v.fromCheck("DRPlacementControl", cli.HubCheck(d))
	v.fromCheck("DRPlacementControl", cli.ValidatedCheck(d))
	for _, t := range []string{v1alpha1.ConditionAvailable, v1alpha1.ConditionPeerReady, v1alpha1.ConditionProtected} {
		v.conditionRow("DRPlacementControl: "+t, d.Status.Conditions, t, cli.InAction(d.Status.Phase))
	}
	if a.Policy == nil {
		v.add("DRPolicy "+d.Spec.DRPolicyRef.Name, Fail, "does not exist on the hub: create it or fix spec.drPolicyRef")
		return nil
	}
	v.policyCheck(a.Policy)
	clusters, err := managedClusters(ctx, hub, o.Kubeconfigs)
	if err != nil {
		return err
	}
	primary := d.Status.CurrentPrimary
	var primaryGroup *v1alpha1.VolumeReplicationGroup
	var primaryCluster *managedCluster
	for _, name := range a.Policy.Spec.DRClusters {
		m := findCluster(clusters, name)
		g := v.groupCheck(ctx, m, name, d, name == primary)
		if name == primary && g != nil {
			primaryGroup, primaryCluster = g, m
		}
	}
	if primaryGroup != nil {
		v.pvcChecks(ctx, primaryCluster, primaryGroup, a.Interval)
		v.captureCheck(primaryGroup, v.now())
	}
	if primary != "" {
		peer := a.PeerOf(primary)
		for _, c := range cli.Checks(a, v1alpha1.ActionFailover, peer, v.now()) {
			v.fromCheck("failover to "+peer, c)
		}
	}
	return nil
}

func findCluster(clusters []*managedCluster, name string) *managedCluster {
	for _, m := range clusters {
		if m.name == name {
			return m
		}
	}
	return nil
}

// fromCheck turns a precondition of an action into a row: a blocking one not met fails.
func (v *validator) fromCheck(prefix string, c cli.Check) {
	r := Pass
	if !c.Met {
		r = Warn
		if c.Blocking {
			r = Fail
		}
	}
	v.add(prefix+": "+c.Name, r, "%s", c.Detail)
}

// conditionRow reports one condition: True passes; False fails, or warns while an action runs.
func (v *validator) conditionRow(check string, conds []metav1.Condition, t string, acting bool) {
	c := apimeta.FindStatusCondition(conds, t)
	switch {
	case c == nil:
		v.add(check, Warn, "not reported yet")
	case c.Status == metav1.ConditionTrue:
		v.add(check, Pass, "%s: %s", c.Reason, c.Message)
	case acting || c.Status == metav1.ConditionUnknown:
		v.add(check, Warn, "%s %s: %s", c.Status, c.Reason, c.Message)
	default:
		v.add(check, Fail, "%s %s since %s: %s", c.Status, c.Reason, cli.Clock(c.LastTransitionTime.Time), c.Message)
	}
}

// groupCheck reads the application's group on a cluster and checks its role and conditions.
func (v *validator) groupCheck(ctx context.Context, m *managedCluster, name string, d *v1alpha1.DRPlacementControl,
	primary bool) *v1alpha1.VolumeReplicationGroup {
	want := v1alpha1.ReplicationStateSecondary
	if primary {
		want = v1alpha1.ReplicationStatePrimary
	}
	check := fmt.Sprintf("group on %s (%s)", name, want)
	switch {
	case m == nil:
		v.add(check, Fail, "no DRCluster %s on the hub", name)
		return nil
	case m.err != nil:
		v.add(check, Fail, "cannot reach %s: %v", name, m.err)
		return nil
	}
	g := &v1alpha1.VolumeReplicationGroup{}
	err := m.cl.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Name}, g)
	switch {
	case apierrors.IsNotFound(err):
		v.add(check, Fail, "no VolumeReplicationGroup %s/%s on %s: the hub has not created it; its conditions on the DRPlacementControl say why",
			d.Namespace, d.Name, name)
		return nil
	case err != nil:
		v.add(check, Fail, "failed to read VolumeReplicationGroup %s/%s on %s (with %s): %v", d.Namespace, d.Name, name, m.via, err)
		return nil
	}
	switch {
	case g.Spec.ReplicationState != want:
		v.add(check, Fail, "asks for %s, not %s: the hub and the group disagree on the primary", g.Spec.ReplicationState, want)
	case g.Status.ObservedGeneration != g.Generation:
		v.add(check, Warn, "the agent on %s has not reconciled generation %d yet (it reports %d): is the agent running?",
			name, g.Generation, g.Status.ObservedGeneration)
	default:
		v.add(check, Pass, "state %s, generation %d reconciled", cli.Dash(string(g.Status.State)), g.Generation)
	}
	for _, t := range []string{v1alpha1.ConditionDataReady, v1alpha1.ConditionDataProtected, v1alpha1.ConditionClusterDataProtected} {
		if !primary && t == v1alpha1.ConditionClusterDataProtected {
			continue
		}
		v.conditionRow(fmt.Sprintf("group on %s: %s", name, t), g.Status.Conditions, t, cli.InAction(d.Status.Phase))
	}
	return g
}

// pvcChecks checks each PVC the primary group protects and, when the credential may list PVCs,
// that every PVC the selector selects in the protected namespaces is among them.
func (v *validator) pvcChecks(ctx context.Context, m *managedCluster, g *v1alpha1.VolumeReplicationGroup, interval time.Duration) {
	now := v.now()
	known := map[string]bool{}
	for _, p := range g.Status.ProtectedPVCs {
		key := p.Namespace + "/" + p.Name
		known[key] = true
		check := "PVC " + key
		dp := apimeta.FindStatusCondition(p.Conditions, v1alpha1.ConditionDataProtected)
		switch {
		case p.Backend == "":
			v.add(check, Fail, "no storageClassBackends entry of the policy matches its StorageClass %q: it is not replicated", p.StorageClassName)
		case dp == nil || dp.Status != metav1.ConditionTrue:
			v.add(check, Fail, "%s (%s): not replicating: %s", p.Backend, cli.Dash(p.ReplicationID), cli.ConditionLine(p.Conditions, v1alpha1.ConditionDataProtected))
		case p.LastSyncTime == nil:
			v.add(check, Warn, "%s (%s): no completed sync yet", p.Backend, cli.Dash(p.ReplicationID))
		case interval > 0 && now.Sub(p.LastSyncTime.Time) > v1alpha1.SyncStaleAfter(interval, g.Status.SyncRefreshInterval):
			v.add(check, Warn, "%s (%s): last sync %s ago, more than %s", p.Backend, cli.Dash(p.ReplicationID),
				cli.Age(now.Sub(p.LastSyncTime.Time)), v1alpha1.SyncStaleAllowance(interval, g.Status.SyncRefreshInterval))
		default:
			v.add(check, Pass, "%s (%s): last sync %s ago", p.Backend, cli.Dash(p.ReplicationID), cli.Age(now.Sub(p.LastSyncTime.Time)))
		}
	}
	v.unprotectedPVCs(ctx, m, g, known)
}

// unprotectedPVCs lists the PVCs the group's selector selects and reports those it does not.
func (v *validator) unprotectedPVCs(ctx context.Context, m *managedCluster, g *v1alpha1.VolumeReplicationGroup, known map[string]bool) {
	sel, err := metav1.LabelSelectorAsSelector(&g.Spec.PVCSelector)
	if err != nil {
		v.add("PVCs selected", Fail, "the group's pvcSelector is invalid: %v", err)
		return
	}
	namespaces := g.Spec.ProtectedNamespaces
	if len(namespaces) == 0 {
		namespaces = []string{g.Namespace}
	}
	selected := 0
	for _, ns := range namespaces {
		list := &corev1.PersistentVolumeClaimList{}
		err := m.cl.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel})
		switch {
		case apierrors.IsForbidden(err):
			v.add("PVCs selected", Warn, "%s: the group's report alone is checked", m.forbidden("list PVCs"))
			return
		case err != nil:
			v.add("PVCs selected", Warn, "failed to list the PVCs of %s on %s: %v", ns, m.name, err)
			return
		}
		for _, p := range list.Items {
			selected++
			if key := p.Namespace + "/" + p.Name; !known[key] {
				v.add("PVC "+key, Fail, "selected by the pvcSelector but not in the group's status: the agent does not protect it yet")
			}
		}
	}
	if selected == 0 && len(known) == 0 {
		v.add("PVCs selected", Warn, "the pvcSelector selects no PVC in %v on %s: only the captured objects are protected", namespaces, m.name)
	}
}

// captureCheck checks the age of the last capture of the application's objects, when they are
// captured.
func (v *validator) captureCheck(g *v1alpha1.VolumeReplicationGroup, now time.Time) {
	if g.Spec.KubeObjectProtection == nil {
		return
	}
	check := "capture of the objects"
	c := apimeta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionKubeObjectsReady)
	if c != nil && c.Status == metav1.ConditionFalse {
		v.add(check, Fail, "KubeObjectsReady False (%s): %s", c.Reason, c.Message)
		return
	}
	at, err := time.Parse(time.RFC3339Nano, g.Annotations[capturedAtAnnotation])
	if err != nil {
		v.add(check, Warn, "no capture recorded on the group yet (annotation %s)", capturedAtAnnotation)
		return
	}
	// A capture that finds the objects unchanged writes nothing and leaves the time as it is,
	// so an old time alone is no fault: KubeObjectsReady says whether the stores hold the
	// current objects.
	v.add(check, Pass, "the last capture that changed the stores is %s old (%s); %s",
		cli.Age(now.Sub(at)), cli.Clock(at), cli.ConditionLine(g.Status.Conditions, v1alpha1.ConditionKubeObjectsReady))
}
