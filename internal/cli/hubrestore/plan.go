package hubrestore

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-io/drover/api/v1alpha1"
	"github.com/drover-io/drover/internal/hub/hubrecord"
	"github.com/drover-io/drover/internal/join"
	"github.com/drover-io/drover/internal/objectstore"
)

// plan is what the restore gives the hub.
type plan struct {
	// joins are the answering clusters, joined in this order.
	joins []joinPlan
	// skipped say which clusters were not read, and why: nothing is joined or declared for
	// them.
	skipped []string
	// lost are the clusters that do not answer and that the records name: each is given a
	// DRCluster declared lost (docs/decisions/0018).
	lost []lostPlan
	// notes say what is not restored, and why.
	notes    []string
	policies []*v1alpha1.DRPolicy
	drpcs    []drpcPlan
}

// joinPlan is a cluster to join: its DRCluster's fields and its own S3 profile.
type joinPlan struct {
	name, region string
	profile      objectstore.Profile
	conn         join.Cluster
	// revoke is true when the hub holds no kubeconfig for the cluster: the Secret the old
	// hub's tokens are bound to is deleted before the join.
	revoke bool
	// lost is the declaration on the hub's DRCluster of it, when there is one; byRestore when
	// a restore made it (AnnotationLostDeclaredByRestore): that one is lifted after the join.
	lost      *v1alpha1.DRClusterLost
	byRestore bool
}

// lostPlan is a DRCluster created declared lost, for a cluster the records name that does not
// answer: nothing is written on the cluster, and the hub holds no credential for it until a
// restore run while it answers joins it.
type lostPlan struct {
	drc *v1alpha1.DRCluster
	// why is why the cluster was not read.
	why error
	// existing is the hub's DRCluster of that name, when it holds one: it is kept as it is.
	existing *v1alpha1.DRCluster
}

// lostReason is spec.lost.reason of a DRCluster the restore declares lost: what happened and the
// one step that brings the cluster back.
const lostReason = "it did not answer when drover hub restore rebuilt this hub, which holds no credential for it: once it answers, " +
	"run drover hub restore again with its --cluster-kubeconfig, which joins it and lifts this declaration " +
	"(the hub then demotes its groups whose application runs on the peer); it is not joined without that step"

// drpcPlan is a DRPlacementControl to create, and the state its groups are in.
type drpcPlan struct {
	drpc  *v1alpha1.DRPlacementControl
	state hubrecord.State
	// marked is true when a group of it was promoted without the hub: an existing
	// DRPlacementControl is then given the spec that adopts it (docs/decisions/0014).
	marked bool
	// existing is the hub's DRPlacementControl of that name, when it holds one (a restore
	// ran before): it is kept, and the hub goes on from its status.
	existing *v1alpha1.DRPlacementControl
}

// adopts reports whether an existing DRPlacementControl is to be given the spec that adopts a
// promotion made without the hub: a group of it is marked, and its spec asks no failover there.
func (d drpcPlan) adopts(existing *v1alpha1.DRPlacementControl) bool {
	return d.marked && d.state.Phase == v1alpha1.PhaseFailingOver &&
		(existing.Spec.Action != v1alpha1.ActionFailover || existing.Spec.FailoverCluster != d.state.Primary)
}

// newPlan builds the plan from the clusters read.
func newPlan(clusters []*cluster) (*plan, error) {
	p := &plan{}
	byName := map[string]*cluster{}
	for _, c := range clusters {
		byName[c.name] = c
		if c.err != nil {
			continue
		}
		if c.unrecorded > 0 {
			p.notes = append(p.notes, fmt.Sprintf("%s holds %d VolumeReplicationGroup(s) with no record of the hub (%s): their applications are not restored; protect them again",
				c.name, c.unrecorded, hubrecord.Annotation))
		}
	}
	apps := applications(clusters)
	for _, c := range clusters {
		if c.err != nil {
			if l, ok := lostFor(c, apps); ok {
				p.lost = append(p.lost, l)
			} else {
				p.skipped = append(p.skipped, fmt.Sprintf("%s: %v", c.name, c.err))
			}
			continue
		}
		j, err := joinFor(c, apps)
		if err != nil {
			return nil, err
		}
		p.joins = append(p.joins, j)
	}
	policies := map[string]*v1alpha1.DRPolicy{}
	for _, key := range slices.SortedFunc(maps.Keys(apps), func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) }) {
		app := apps[key]
		newest := app.newest()
		if _, ok := policies[newest.record.Policy.Name]; !ok {
			policies[newest.record.Policy.Name] = policyFrom(newest)
		}
		p.drpcs = append(p.drpcs, drpcFor(app, byName))
	}
	for _, name := range slices.Sorted(maps.Keys(policies)) {
		p.policies = append(p.policies, policies[name])
	}
	p.notes = append(p.notes, notGiven(apps, byName)...)
	return p, nil
}

// lostFor is the DRCluster declared lost of a cluster that did not answer, from the newest
// record that names it (its region, S3 profile and Argo CD name); false when the cluster
// answered with an error (it is not silent: what is wrong is said, nothing is declared), or
// no record names it (nothing would use its DRCluster).
func lostFor(c *cluster, apps map[types.NamespacedName]application) (lostPlan, bool) {
	if !c.silent {
		return lostPlan{}, false
	}
	var rec *hubrecord.Cluster
	var gen int64 = -1
	for _, app := range apps {
		for _, g := range app {
			if rc, ok := g.record.Cluster(c.name); ok && g.record.DRPC.Generation > gen {
				gen, rec = g.record.DRPC.Generation, &rc
			}
		}
	}
	if rec == nil || rec.Region == "" || rec.S3ProfileName == "" {
		return lostPlan{}, false
	}
	drc := &v1alpha1.DRCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRCluster"},
		// join's labels: a restore that finds the cluster answering joins it over this object.
		ObjectMeta: metav1.ObjectMeta{Name: c.name, Labels: map[string]string{join.LabelManagedBy: join.ManagedByValue, join.LabelCluster: c.name}},
		Spec: v1alpha1.DRClusterSpec{
			// The Secret join creates; it does not exist until the cluster is joined.
			KubeconfigSecretRef: v1alpha1.SecretRef{Namespace: join.DefaultNamespace, Name: join.KubeconfigSecretName(c.name)},
			S3ProfileName:       rec.S3ProfileName, Region: rec.Region, ArgoCDClusterName: rec.ArgoCDClusterName,
			Lost: &v1alpha1.DRClusterLost{Reason: lostReason},
		},
	}
	return lostPlan{drc: drc, why: c.err}, true
}

// notGiven notes the clusters that the records name and for which no --cluster-kubeconfig was
// given: neither joined nor declared lost, their DRPolicies are not Validated.
func notGiven(apps map[types.NamespacedName]application, byName map[string]*cluster) []string {
	named := map[string]bool{}
	for _, app := range apps {
		for _, g := range app {
			for _, name := range g.record.Policy.DRClusters {
				named[name] = byName[name] == nil
			}
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(named)) {
		if named[name] {
			out = append(out, fmt.Sprintf("the records name cluster %s, for which no --cluster-kubeconfig was given: it is neither joined nor declared lost, "+
				"so the DRPolicies that pair it are not Validated and their applications wait; give its kubeconfig (one that does not answer is declared lost)", name))
		}
	}
	return out
}

// application is one DRPlacementControl's groups, by cluster.
type application map[string]group

// newest is the group whose record is the newest: the highest DRPlacementControl generation,
// then the cluster's name for a stable choice.
func (a application) newest() group {
	var out group
	for _, name := range slices.Sorted(maps.Keys(a)) {
		if g := a[name]; out.record == nil || g.record.DRPC.Generation > out.record.DRPC.Generation {
			out = g
		}
	}
	return out
}

// applications gathers the groups of the clusters read by DRPlacementControl.
func applications(clusters []*cluster) map[types.NamespacedName]application {
	out := map[types.NamespacedName]application{}
	for _, c := range clusters {
		for _, g := range c.groups {
			key := types.NamespacedName{Namespace: g.record.DRPC.Namespace, Name: g.record.DRPC.Name}
			if out[key] == nil {
				out[key] = application{}
			}
			out[key][c.name] = g
		}
	}
	return out
}

// joinFor is a cluster's join: its region and profile as recorded (the newest record naming
// it), its profile's Secret as it holds it (so that its store keys are kept).
func joinFor(c *cluster, apps map[types.NamespacedName]application) (joinPlan, error) {
	j := joinPlan{name: c.name, region: c.name, conn: c.conn}
	profile := join.DefaultS3ProfileName(c.name)
	var gen int64 = -1
	for _, app := range apps {
		for _, g := range app {
			if rc, ok := g.record.Cluster(c.name); ok && g.record.DRPC.Generation > gen {
				gen, j.region, profile = g.record.DRPC.Generation, rc.Region, rc.S3ProfileName
			}
		}
	}
	p, ok := c.profiles[profile]
	if !ok {
		return j, fmt.Errorf("%s holds no Secret of its S3 profile %s (labelled %s=%s in %s): join it with drover cluster join, then run the restore again",
			c.name, profile, join.LabelS3Profile, profile, join.DefaultNamespace)
	}
	j.profile = p
	return j, nil
}

// policyFrom is the DRPolicy of a group: its name and clusters recorded, the rest from the
// group's spec, which is what the agents act on.
func policyFrom(g group) *v1alpha1.DRPolicy {
	s := g.vrg.Spec
	spec := v1alpha1.DRPolicySpec{
		DRClusters: slices.Clone(g.record.Policy.DRClusters), SchedulingInterval: s.SchedulingInterval,
		StorageClassBackends: slices.Clone(s.StorageClassBackends), S3Profiles: slices.Clone(s.S3Profiles),
	}
	if s.VolRep != nil && s.VolRep.ReplicationClassSelector != nil {
		spec.ReplicationClassSelector = s.VolRep.ReplicationClassSelector.DeepCopy()
	}
	if v := s.VolSync; v != nil {
		spec.VolSyncMovers, spec.VolSyncAddress = v.Movers, v.Address
		if v.VolumeSnapshotClassSelector != nil {
			spec.VolumeSnapshotClassSelector = v.VolumeSnapshotClassSelector.DeepCopy()
		}
	}
	return &v1alpha1.DRPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: g.record.Policy.Name},
		Spec:       spec,
	}
}

// drpcFor is an application's DRPlacementControl: the newest record's spec, its action set
// from the state its groups are in. A cluster of its policy that was not read counts as not
// answering: the state is never guessed.
func drpcFor(app application, byName map[string]*cluster) drpcPlan {
	newest := app.newest()
	var groups []hubrecord.Group
	marked := false
	for _, name := range newest.record.Policy.DRClusters {
		g := hubrecord.Group{Cluster: name}
		switch c := byName[name]; {
		case c == nil:
			g.Err = fmt.Errorf("no --cluster-kubeconfig given for it")
		case c.err != nil:
			g.Err = c.err
		default:
			g.VRG = app[name].vrg
		}
		if m, err := v1alpha1.PromotedWithoutHubMark(g.VRG); m != nil && err == nil {
			marked = true
		}
		groups = append(groups, g)
	}
	state := hubrecord.Rebuild(groups)
	d := &v1alpha1.DRPlacementControl{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DRPlacementControl"},
		ObjectMeta: metav1.ObjectMeta{Namespace: newest.record.DRPC.Namespace, Name: newest.record.DRPC.Name},
		Spec:       hubrecord.Placement(newest.record.DRPC.Spec, state),
	}
	return drpcPlan{drpc: d, state: state, marked: marked}
}
